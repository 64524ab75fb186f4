package baseline

import (
	"context"
	"fmt"
	"math/rand/v2"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

const (
	mongoDatabase   = "bench"
	mongoCollection = "baseline"
	preloadBatch    = 1000
)

// mongoTarget runs the workload against tierdb with the official Go driver.
type mongoTarget struct {
	client *mongo.Client
	coll   *mongo.Collection
	names  [fieldCount]string
}

// newMongoTarget connects a client whose pool holds one connection per
// benchmark client, so every goroutine gets its own connection.
// monitoring is the driver's serverMonitoringMode.
func newMongoTarget(ctx context.Context, addr string, clients int, monitoring string) (*mongoTarget, error) {
	opts := options.Client().
		ApplyURI("mongodb://" + addr + "/?directConnection=true").
		SetMaxPoolSize(uint64(clients)).
		SetServerMonitoringMode(monitoring).
		SetAppName("tierdb-bench-baseline")
	client, err := mongo.Connect(opts)
	if err != nil {
		return nil, err
	}
	if err := client.Ping(ctx, nil); err != nil {
		_ = client.Disconnect(ctx)
		return nil, fmt.Errorf("ping tierdb: %w", err)
	}
	return &mongoTarget{
		client: client,
		coll:   client.Database(mongoDatabase).Collection(mongoCollection),
		names:  fieldNames(),
	}, nil
}

func (m *mongoTarget) name() string { return "tierdb" }

func (m *mongoTarget) doc(id int64, f *fields) bson.D {
	d := make(bson.D, 0, fieldCount+1)
	d = append(d, bson.E{Key: "_id", Value: id})
	for i, v := range f {
		d = append(d, bson.E{Key: m.names[i], Value: v})
	}
	return d
}

func (m *mongoTarget) preload(ctx context.Context, n int, rng *rand.Rand) error {
	if err := m.coll.Drop(ctx); err != nil {
		return fmt.Errorf("drop %s.%s: %w", mongoDatabase, mongoCollection, err)
	}
	for start := 0; start < n; start += preloadBatch {
		batch := make([]any, 0, preloadBatch)
		for id := start; id < min(start+preloadBatch, n); id++ {
			f := randomFields(rng)
			batch = append(batch, m.doc(int64(id), &f))
		}
		res, err := m.coll.InsertMany(ctx, batch)
		if err != nil {
			return fmt.Errorf("insertMany: %w", err)
		}
		if len(res.InsertedIDs) != len(batch) {
			return fmt.Errorf("insertMany inserted %d of %d documents", len(res.InsertedIDs), len(batch))
		}
	}
	got, err := m.coll.EstimatedDocumentCount(ctx)
	if err != nil {
		return fmt.Errorf("count: %w", err)
	}
	if got != int64(n) {
		return fmt.Errorf("after preload the collection holds %d documents, want %d", got, n)
	}
	return nil
}

func (m *mongoTarget) find(ctx context.Context, id int64) error {
	// Raw skips decoding into Go values; the SQL side scans raw JSON too.
	_, err := m.coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Raw()
	return err
}

func (m *mongoTarget) insert(ctx context.Context, id int64, f *fields) error {
	_, err := m.coll.InsertOne(ctx, m.doc(id, f))
	return err
}

func (m *mongoTarget) update(ctx context.Context, id int64, field0 string) error {
	res, err := m.coll.UpdateOne(ctx,
		bson.D{{Key: "_id", Value: id}},
		bson.D{{Key: "$set", Value: bson.D{{Key: m.names[0], Value: field0}}}})
	if err != nil {
		return err
	}
	if res.MatchedCount != 1 || res.ModifiedCount != 1 {
		return fmt.Errorf("updateOne _id %d: matched %d, modified %d", id, res.MatchedCount, res.ModifiedCount)
	}
	return nil
}

func (m *mongoTarget) close(ctx context.Context) { _ = m.client.Disconnect(ctx) }
