package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Where the records live in tierdb.
const (
	benchDatabase   = "bench"
	benchCollection = "usertable"
)

// workload makes YCSB-style records and operations. Shared by all clients:
// everything in it is immutable except the insert counter.
type workload struct {
	records    int64
	fieldNames []string
	fieldLen   int
	scanLen    int
	keys       map[string]keyChooser // by distribution
	// pool is random text that field values are cut from: generating fresh
	// random bytes per operation would cost the load generator more CPU
	// than it spends on the driver.
	pool        string
	defaultDist string
	// nextID is the next _id an insert uses; it only grows, across runs,
	// because the records stay in PostgreSQL from one run to the next.
	nextID *atomic.Int64
}

func newWorkload(sc *Scenario) *workload {
	w := &workload{
		records:  int64(sc.Records),
		fieldLen: sc.FieldLength,
		scanLen:  sc.ScanLength,
		keys:     map[string]keyChooser{},
		nextID:   &atomic.Int64{},
	}
	w.nextID.Store(int64(sc.Records))
	for _, d := range []string{sc.Distribution} {
		w.keys[d] = newKeyChooser(d, w.records)
	}
	for _, g := range sc.Groups {
		if d := g.Distribution; d != "" && w.keys[d] == nil {
			w.keys[d] = newKeyChooser(d, w.records)
		}
	}
	w.defaultDist = sc.Distribution
	for i := range sc.FieldCount {
		w.fieldNames = append(w.fieldNames, fmt.Sprintf("field%d", i))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	buf := make([]byte, 64<<10+sc.FieldLength)
	for i := range buf {
		buf[i] = letters[rng.IntN(len(letters))]
	}
	w.pool = string(buf)
	return w
}

func (w *workload) value(rng *rand.Rand) string {
	off := rng.IntN(len(w.pool) - w.fieldLen + 1)
	return w.pool[off : off+w.fieldLen]
}

func (w *workload) doc(id int64, rng *rand.Rand) bson.D {
	d := make(bson.D, 0, len(w.fieldNames)+1)
	d = append(d, bson.E{Key: "_id", Value: id})
	for _, f := range w.fieldNames {
		d = append(d, bson.E{Key: f, Value: w.value(rng)})
	}
	return d
}

type opKind int

const (
	opRead opKind = iota
	opUpdate
	opInsert
	opScan
)

// pick draws an operation with the mix's proportions.
func (m Mix) pick(rng *rand.Rand) opKind {
	x := rng.Float64() * m.total()
	switch {
	case x < m.Read:
		return opRead
	case x < m.Read+m.Update:
		return opUpdate
	case x < m.Read+m.Update+m.Insert:
		return opInsert
	}
	return opScan
}

// do runs one operation. Like YCSB: a read fetches one whole record, an
// update sets one random field, an insert adds a new record, a scan reads
// 1…scanLen records in _id order from a random key.
func (w *workload) do(ctx context.Context, coll *mongo.Collection, op opKind, dist string, rng *rand.Rand) error {
	keys := w.keys[dist]
	if keys == nil {
		keys = w.keys[w.defaultDist]
	}
	switch op {
	case opRead:
		id := keys.next(rng)
		_, err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Raw()
		if err != nil {
			return fmt.Errorf("read _id %d: %w", id, err)
		}
	case opUpdate:
		id := keys.next(rng)
		field := w.fieldNames[rng.IntN(len(w.fieldNames))]
		res, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}},
			bson.D{{Key: "$set", Value: bson.D{{Key: field, Value: w.value(rng)}}}})
		if err != nil {
			return fmt.Errorf("update _id %d: %w", id, err)
		}
		// An unacknowledged write reports nothing to check.
		if res.Acknowledged && res.MatchedCount != 1 {
			return fmt.Errorf("update _id %d matched %d documents", id, res.MatchedCount)
		}
	case opInsert:
		id := w.nextID.Add(1) - 1
		if _, err := coll.InsertOne(ctx, w.doc(id, rng)); err != nil {
			return fmt.Errorf("insert _id %d: %w", id, err)
		}
	case opScan:
		id := keys.next(rng)
		n := 1 + rng.IntN(w.scanLen)
		cur, err := coll.Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: id}}}},
			options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetLimit(int64(n)).SetBatchSize(int32(n)))
		if err != nil {
			return fmt.Errorf("scan from _id %d: %w", id, err)
		}
		defer cur.Close(ctx)
		for cur.Next(ctx) {
		}
		if err := cur.Err(); err != nil {
			return fmt.Errorf("scan from _id %d: %w", id, err)
		}
	}
	return nil
}
