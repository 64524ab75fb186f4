package storage

import (
	"context"
	"encoding/json"
)

// Work is what PostgreSQL did to run statements of a read over one
// collection, from EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON): actual
// counts, never the planner's estimates.
type Work struct {
	Statements int64
	// Rows is the rows the statements returned.
	Rows int64
	// Docs is the collection table's rows PostgreSQL read from the heap:
	// the rows sequential, index and bitmap heap scans produced plus those
	// their filters (or a lossy bitmap's recheck) removed, and an index-only
	// scan's heap fetches. Rows a scan passed over as dead or invisible to
	// the snapshot are not counted.
	Docs int64
	// Keys is the index entries the collection's indexes returned to
	// index, index-only and bitmap index scans (entries the btree skips
	// inside its own search are not counted).
	Keys int64
	// SharedHit and SharedRead are the statements' shared buffer hits and
	// reads (blocks of 8 kB).
	SharedHit, SharedRead int64
	// Scans is the work per scan node kind and index, in order of first
	// appearance.
	Scans []ScanWork
}

// ScanWork is the work of the scan nodes of one kind over one index (Index
// "" for a sequential or bitmap heap scan).
type ScanWork struct {
	Node       string // PostgreSQL's node type: "Seq Scan", "Index Scan", ...
	Index      string // the MongoDB name of the index scanned
	Keys, Docs int64
	Rows       int64
}

// Add adds o to w.
func (w *Work) Add(o Work) {
	w.Statements += o.Statements
	w.Rows += o.Rows
	w.Docs += o.Docs
	w.Keys += o.Keys
	w.SharedHit += o.SharedHit
	w.SharedRead += o.SharedRead
	for _, s := range o.Scans {
		w.addScan(s)
	}
}

func (w *Work) addScan(s ScanWork) {
	for i := range w.Scans {
		if w.Scans[i].Node == s.Node && w.Scans[i].Index == s.Index {
			w.Scans[i].Keys += s.Keys
			w.Scans[i].Docs += s.Docs
			w.Scans[i].Rows += s.Rows
			return
		}
	}
	w.Scans = append(w.Scans, s)
}

// AnalyzeScan runs the scan p (as ScanChunk would) under EXPLAIN ANALYZE
// and returns what PostgreSQL did; the rows themselves are discarded.
func (s *Store) AnalyzeScan(ctx context.Context, on On, c *Collection, p ScanParams) (Work, error) {
	sql, args := p.sql(c)
	return s.analyze(ctx, on, c, sql, args)
}

// AnalyzeCount is AnalyzeScan for Count's statement.
func (s *Store) AnalyzeCount(ctx context.Context, on On, c *Collection, where string, args []any) (Work, error) {
	return s.analyze(ctx, on, c, countSQL(c, where), args)
}

func (s *Store) analyze(ctx context.Context, on On, c *Collection, sql string, args []any) (Work, error) {
	var js []byte
	err := s.readQ(ctx, on).QueryRow(ctx, "EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, FORMAT JSON) "+sql, args...).Scan(&js)
	if err != nil {
		return Work{}, s.readError(ctx, on, c, err)
	}
	return parseAnalyze(c, js)
}

// planNode is the part of a node of EXPLAIN's JSON output that Work needs.
type planNode struct {
	Type            string     `json:"Node Type"`
	Relation        string     `json:"Relation Name"`
	Index           string     `json:"Index Name"`
	Rows            float64    `json:"Actual Rows"`
	Loops           float64    `json:"Actual Loops"`
	RemovedByFilter float64    `json:"Rows Removed by Filter"`
	RemovedByCheck  float64    `json:"Rows Removed by Index Recheck"`
	HeapFetches     float64    `json:"Heap Fetches"`
	SharedHit       int64      `json:"Shared Hit Blocks"`
	SharedRead      int64      `json:"Shared Read Blocks"`
	Plans           []planNode `json:"Plans"`
}

// parseAnalyze reads EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)'s output for
// one statement over c. Per-loop figures (rows, rows removed) are
// multiplied by the node's loops.
func parseAnalyze(c *Collection, js []byte) (Work, error) {
	var out []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal(js, &out); err != nil || len(out) != 1 {
		return Work{}, newErr(ErrInternal, "unexpected EXPLAIN output")
	}
	top := out[0].Plan
	w := Work{Statements: 1, Rows: int64(top.Rows * top.Loops), SharedHit: top.SharedHit, SharedRead: top.SharedRead}
	indexes := map[string]string{}
	for _, ix := range c.Indexes {
		if ix.Column == "_id" {
			indexes[c.tbl+"_pkey"] = ix.Name
		} else {
			indexes[pgIndexName(c, &ix)] = ix.Name
		}
	}
	var walk func(n *planNode)
	walk = func(n *planNode) {
		for i := range n.Plans {
			walk(&n.Plans[i])
		}
		rows := int64(n.Rows * n.Loops)
		filtered := int64((n.Rows + n.RemovedByFilter) * n.Loops)
		s := ScanWork{Node: n.Type, Rows: rows}
		switch n.Type {
		case "Seq Scan", "Bitmap Heap Scan":
			if n.Relation != c.tbl {
				return
			}
			s.Docs = filtered + int64(n.RemovedByCheck*n.Loops)
		case "Index Scan", "Index Only Scan", "Bitmap Index Scan":
			name, ok := indexes[n.Index]
			if !ok {
				return
			}
			s.Index, s.Keys = name, filtered
			switch n.Type {
			case "Index Scan":
				s.Docs = filtered
			case "Index Only Scan":
				s.Docs = int64(n.HeapFetches) // a total, not per loop
			}
		default:
			return
		}
		w.Docs += s.Docs
		w.Keys += s.Keys
		w.addScan(s)
	}
	walk(&top)
	return w, nil
}
