package exec

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/storage"
)

// explain's executionStats: a read runs for real, every storage statement
// it runs is run once more under EXPLAIN ANALYZE (Analyzer), and what
// PostgreSQL and tierdb did is reported in MongoDB's shape.

// Analyzer is PostgreSQL's account of the statements a read runs, from
// EXPLAIN ANALYZE; *storage.Store satisfies it.
type Analyzer interface {
	// AnalyzeScan is what running ScanChunk's statement for p does.
	AnalyzeScan(ctx context.Context, on storage.On, col *storage.Collection, p storage.ScanParams) (storage.Work, error)
	// AnalyzeCount is what running Count's statement does.
	AnalyzeCount(ctx context.Context, on storage.On, col *storage.Collection, where string, args []any) (storage.Work, error)
}

var _ Analyzer = (*storage.Store)(nil)

// ExecStats is what an analyzed read did.
type ExecStats struct {
	mu sync.Mutex
	// PG is PostgreSQL's work, summed over the read's statements.
	PG storage.Work
	// Received is the rows PostgreSQL returned to tierdb, Rechecked those
	// of them tierdb evaluated the filter on (the prefilter is a superset
	// of the matches unless it is exact).
	Received, Rechecked int64
	// Scanned: tierdb read rows (ScanChunk), not only counts.
	Scanned bool
	// Unknown: the read ran a statement that was not analyzed (a $text
	// search, a tailable read): PostgreSQL's figures are incomplete.
	Unknown bool
}

// analyzedStore is a Store whose scans and counts are also analyzed.
type analyzedStore struct {
	Store
	a  Analyzer
	st *ExecStats
}

func (s analyzedStore) ScanChunk(ctx context.Context, on storage.On, col *storage.Collection, p storage.ScanParams, keep func(doc []byte) bool) (storage.Chunk, error) {
	var rechecked int64
	counting := keep
	if keep != nil {
		counting = func(doc []byte) bool { rechecked++; return keep(doc) }
	}
	ch, err := s.Store.ScanChunk(ctx, on, col, p, counting)
	if err != nil {
		return ch, err
	}
	if ch.Cut {
		p.Limit = ch.Read // tierdb stopped reading the result there
	}
	w, err := s.a.AnalyzeScan(ctx, on, col, p)
	if err != nil {
		return ch, err
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	s.st.PG.Add(w)
	s.st.Scanned = true
	s.st.Received += int64(ch.Read)
	s.st.Rechecked += rechecked
	return ch, nil
}

func (s analyzedStore) Count(ctx context.Context, on storage.On, col *storage.Collection, where string, args []any) (int64, error) {
	n, err := s.Store.Count(ctx, on, col, where, args)
	if err != nil {
		return n, err
	}
	w, err := s.a.AnalyzeCount(ctx, on, col, where, args)
	if err != nil {
		return n, err
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	s.st.PG.Add(w)
	return n, nil
}

func (s analyzedStore) SearchText(ctx context.Context, on storage.On, col *storage.Collection, ix *storage.Index, q storage.TextSearch) ([]storage.TextRow, error) {
	s.unknown()
	return s.Store.SearchText(ctx, on, col, ix, q)
}

func (s analyzedStore) Tail(ctx context.Context, on storage.On, col *storage.Collection, p storage.TailParams) ([]storage.Row, bool, error) {
	s.unknown()
	return s.Store.Tail(ctx, on, col, p)
}

func (s analyzedStore) unknown() {
	s.st.mu.Lock()
	s.st.Unknown = true
	s.st.mu.Unlock()
}

// Analyzed is a copy of the read whose storage statements are also
// analyzed by a, and the stats they add up to.
func (r *Read) Analyzed(a Analyzer) (*Read, *ExecStats) {
	st := &ExecStats{}
	c := *r
	c.Store = analyzedStore{Store: r.Store, a: a, st: st}
	return &c, st
}

// Drain runs the read as a find's cursor does (Open), skip, limit and sort
// applied, and discards the results; it returns how many there were.
func (r *Read) Drain(ctx context.Context) (int64, error) {
	src, err := r.Open(ctx)
	if err != nil {
		return 0, err
	}
	var n int64
	for {
		batch, done, err := src.Next(ctx, r.On, 0)
		if err != nil {
			return n, err
		}
		n += int64(len(batch))
		if done {
			return n, nil
		}
	}
}

// DrainFeed runs the read as it feeds a pipeline (Feed) and discards what
// it pushes, stopping after limitHint documents when an index walk serves
// the leading $sort (the $limit after it would stop it there); it returns
// how many documents the read produced.
func (r *Read) DrainFeed(ctx context.Context, stages []bson.D, limitHint int64) (int64, error) {
	rest, feed := r.Feed(stages, limitHint)
	walked := len(rest) < len(stages)
	var n int64
	err := feed(ctx, func(bson.D) error {
		n++
		if walked && limitHint > 0 && n >= limitHint {
			return ErrDone
		}
		return nil
	})
	if errors.Is(err, ErrDone) {
		err = nil
	}
	return n, err
}

// Report is the executionStats of a read that returned n documents (a
// count: counted them) in elapsed: MongoDB's totals, and as
// executionStages the COUNT (a count), FILTER (the rows PostgreSQL
// returned to tierdb, and how many of them it rechecked against the
// filter, giving n; absent when tierdb read no rows, PostgreSQL counting
// them) and POSTGRESQL stages. totalDocsExamined and totalKeysExamined are PostgreSQL's
// (storage.Work); when the read ran a statement that was not analyzed
// (Unknown) they and PostgreSQL's figures are left out.
func (st *ExecStats) Report(n int64, count bool, elapsed time.Duration) bson.D {
	ms := elapsed.Milliseconds()
	pg := bson.D{{Key: "stage", Value: "POSTGRESQL"}}
	if !st.Unknown {
		scans := bson.A{}
		for _, s := range st.PG.Scans {
			d := bson.D{{Key: "node", Value: s.Node}}
			if s.Index != "" {
				d = append(d, bson.E{Key: "indexName", Value: s.Index})
			}
			scans = append(scans, append(d,
				bson.E{Key: "nReturned", Value: s.Rows},
				bson.E{Key: "keysExamined", Value: s.Keys},
				bson.E{Key: "docsExamined", Value: s.Docs}))
		}
		pg = append(pg,
			bson.E{Key: "nReturned", Value: st.PG.Rows},
			bson.E{Key: "statements", Value: st.PG.Statements},
			bson.E{Key: "keysExamined", Value: st.PG.Keys},
			bson.E{Key: "docsExamined", Value: st.PG.Docs},
			bson.E{Key: "sharedBlocksHit", Value: st.PG.SharedHit},
			bson.E{Key: "sharedBlocksRead", Value: st.PG.SharedRead},
			bson.E{Key: "scans", Value: scans})
	}
	stage := pg
	if st.Scanned {
		stage = bson.D{
			{Key: "stage", Value: "FILTER"}, {Key: "nReturned", Value: n},
			{Key: "executionTimeMillisEstimate", Value: ms},
			{Key: "docsExamined", Value: st.Received}, {Key: "rechecked", Value: st.Rechecked},
			{Key: "inputStage", Value: pg},
		}
	}
	returned := n
	if count {
		returned = 0
		stage = bson.D{
			{Key: "stage", Value: "COUNT"}, {Key: "nReturned", Value: int64(0)}, {Key: "nCounted", Value: n},
			{Key: "executionTimeMillisEstimate", Value: ms}, {Key: "inputStage", Value: stage},
		}
	}
	out := bson.D{
		{Key: "executionSuccess", Value: true},
		{Key: "nReturned", Value: returned},
		{Key: "executionTimeMillis", Value: ms},
	}
	if !st.Unknown {
		out = append(out,
			bson.E{Key: "totalKeysExamined", Value: st.PG.Keys},
			bson.E{Key: "totalDocsExamined", Value: st.PG.Docs})
	}
	return append(out, bson.E{Key: "executionStages", Value: stage})
}
