package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// stalenessCollection holds the S workload's documents, one per group.
const stalenessCollection = "staleness"

// The S workload (seed 001 §4.1.5): one writer keeps stamping a counter
// and the time into one document; readers read it with the group's read
// preference. A read that started at r and saw stamp s is stale by
// r − (acknowledgement time of write s+1) when that write was acknowledged
// before r, and 0 otherwise: the oldest write acknowledged before the read
// began that the read did not see. The single writer writes one at a time,
// so the writes are acknowledged in counter order and write s+1 is the
// oldest the read missed. This is what a client observes, whatever node
// served the read and whatever the server thought its staleness was.

// stampLog is the writer's record: acks[i] is when write i+1 was
// acknowledged, from the run's start; negative when it failed (it may or
// may not have been applied, and was never acknowledged).
type stampLog struct {
	mu   sync.Mutex
	acks []time.Duration
}

func (l *stampLog) add(ack time.Duration) {
	l.mu.Lock()
	l.acks = append(l.acks, ack)
	l.mu.Unlock()
}

func (l *stampLog) next() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int64(len(l.acks)) + 1
}

func (l *stampLog) snapshot() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Duration(nil), l.acks...)
}

// staleRead is one S read: sent at (from the run's start), saw write seen.
type staleRead struct {
	at   time.Duration
	seen int64
}

// readStaleness is the client-observed staleness of a read sent at at that
// saw write seen, given the writer's acknowledgement times (acks[i] for
// write i+1, negative for a failed write).
func readStaleness(acks []time.Duration, at time.Duration, seen int64) time.Duration {
	for i := max(seen, 0); i < int64(len(acks)); i++ {
		a := acks[i]
		if a < 0 {
			continue // never acknowledged: missing it is no staleness
		}
		if a < at {
			return at - a
		}
		// Acknowledged after the read began, and so is every later write.
		return 0
	}
	return 0
}

// StalenessRun is an S group's staleness figures in one run.
type StalenessRun struct {
	// BoundMS is the bound a read may not exceed: the read preference's
	// maxStalenessMS, 0 for primary reads (which must see every
	// acknowledged write), -1 when there is none (no violation counted).
	BoundMS int   `json:"boundMs"`
	Reads   int64 `json:"reads"`
	// Stale counts reads with any staleness, Violations those over the
	// bound.
	Stale      int64 `json:"stale"`
	Violations int64 `json:"violations"`
	// Staleness of every read (zero included).
	Staleness *Histogram `json:"staleness"`
	// Writes and their latency; WriteErrors failed writes.
	Writes       int64      `json:"writes"`
	WriteErrors  int64      `json:"writeErrors"`
	WriteLatency *Histogram `json:"writeLatency"`
	// Regressions counts reads that saw an older stamp than an earlier
	// read of the same client: a client may see time go backwards when its
	// reads go to different nodes.
	Regressions int64 `json:"regressions"`
}

// stalenessOf computes an S group's figures from its writer's log and its
// readers' reads (per reader, in the order they were sent).
func stalenessOf(boundMS int, acks []time.Duration, readers [][]staleRead) *StalenessRun {
	st := &StalenessRun{BoundMS: boundMS, Staleness: &Histogram{}, WriteLatency: &Histogram{}}
	bound := time.Duration(boundMS) * time.Millisecond
	for _, rs := range readers {
		var last int64 = -1
		for _, r := range rs {
			d := readStaleness(acks, r.at, r.seen)
			st.Reads++
			st.Staleness.Record(d)
			if d > 0 {
				st.Stale++
			}
			if boundMS >= 0 && d > bound {
				st.Violations++
			}
			if r.seen < last {
				st.Regressions++
			}
			last = max(last, r.seen)
		}
	}
	for _, a := range acks {
		if a < 0 {
			st.WriteErrors++
		} else {
			st.Writes++
		}
	}
	return st
}

// stalenessBound is the bound of an S group's reads (see StalenessRun).
func stalenessBound(rp *ReadPreference) int {
	switch {
	case rp == nil || rp.Mode == "primary":
		return 0
	case rp.MaxStalenessMS > 0:
		return rp.MaxStalenessMS
	}
	return -1
}

// stampWriter is an S group's writer.
type stampWriter struct {
	doc   string // the document's _id: the group's name
	log   *stampLog
	start time.Time
}

// init writes stamp 0 before the run, acknowledged by all nodes so that
// no reader finds the document missing.
func (sw *stampWriter) init(ctx context.Context, c *tierClient, nodes int) error {
	coll := c.stale
	if nodes > 1 {
		coll = c.client.Database(benchDatabase).Collection(stalenessCollection,
			options.Collection().SetWriteConcern(&writeconcern.WriteConcern{W: nodes}))
	}
	_, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: sw.doc}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "seq", Value: int64(0)}, {Key: "t", Value: time.Now()}}}},
		options.UpdateOne().SetUpsert(true))
	return err
}

// write stamps the next counter value and the time.
func (sw *stampWriter) write(ctx context.Context, c *tierClient) error {
	seq := sw.log.next()
	now := time.Now()
	res, err := c.stale.UpdateOne(ctx, bson.D{{Key: "_id", Value: sw.doc}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "seq", Value: seq}, {Key: "t", Value: now}}}})
	if ctx.Err() != nil {
		return err // cut off: not logged, the run is over
	}
	if err == nil && res.MatchedCount != 1 {
		err = fmt.Errorf("stamp %d matched %d documents", seq, res.MatchedCount)
	}
	if err != nil {
		sw.log.add(-1)
		return fmt.Errorf("stamp %d: %w", seq, err)
	}
	sw.log.add(time.Since(sw.start))
	return nil
}

// staleReader is one S reader.
type staleReader struct {
	doc   string
	start time.Time
	reads []staleRead
}

func (sr *staleReader) read(ctx context.Context, c *tierClient) error {
	at := time.Since(sr.start)
	var got struct {
		Seq int64 `bson:"seq"`
	}
	if err := c.stale.FindOne(ctx, bson.D{{Key: "_id", Value: sr.doc}}).Decode(&got); err != nil {
		return fmt.Errorf("reading stamp: %w", err)
	}
	if ctx.Err() == nil {
		sr.reads = append(sr.reads, staleRead{at: at, seen: got.Seq})
	}
	return nil
}
