package commands

import (
	"errors"
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
	"tierdb/internal/update"
)

// An aggregation pipeline streams: each stage takes documents one at a time
// (push) and passes what it produces to the next; finish flushes what a
// blocking stage ($group, $sort, $count) holds. Memory is what the stages
// keep, each bounded by maxSortBytes like MongoDB's blocking stages, and
// the results.
type stage interface {
	push(doc bson.D) error
	finish() error
}

// errPipelineDone: a stage needs no more input ($limit reached).
var errPipelineDone = errors.New("pipeline needs no more documents")

func exceeded(what string) error {
	return mongoerr.Newf(mongoerr.QueryExceededMemoryLimit, "%s exceeded the memory limit of %d bytes; tierdb does not spill to disk (allowDiskUse)", what, maxSortBytes)
}

// buildPipeline chains the stages in front of sink and returns the first.
func buildPipeline(stages []bson.D, sink stage) (stage, error) {
	next := sink
	for i := len(stages) - 1; i >= 0; i-- {
		st, err := newStage(stages[i], next)
		if err != nil {
			return nil, err
		}
		next = st
	}
	return next, nil
}

func newStage(st bson.D, next stage) (stage, error) {
	name, arg := st[0].Key, st[0].Value
	switch name {
	case "$match":
		d, err := stageDoc(st)
		if err != nil {
			return nil, err
		}
		f, err := query.ParseFilter(d)
		if err != nil {
			return nil, err
		}
		return &mapStage{next: next, fn: func(doc bson.D) (bson.D, bool) { return doc, f.Match(doc) }}, nil
	case "$project":
		d, err := stageDoc(st)
		if err != nil {
			return nil, err
		}
		p, err := update.ParseProjection(d)
		if err != nil {
			return nil, err
		}
		return &mapStage{next: next, fn: func(doc bson.D) (bson.D, bool) { return p.Apply(doc), true }}, nil
	case "$skip", "$limit":
		n, ok := asInt(arg)
		if !ok || n < 0 || (name == "$limit" && n == 0) {
			return nil, mongoerr.Newf(mongoerr.FailedToParse, "invalid argument to %s stage: must be a positive number", name)
		}
		if name == "$skip" {
			return &skipStage{next: next, skip: n}, nil
		}
		return &limitStage{next: next, left: n}, nil
	case "$count":
		field, ok := arg.(string)
		if !ok || field == "" || strings.HasPrefix(field, "$") || strings.Contains(field, ".") {
			return nil, mongoerr.New(mongoerr.FailedToParse, "the $count field must be a non-empty string without '$' or '.'")
		}
		return &countStage{next: next, field: field}, nil
	case "$sort":
		d, err := stageDoc(st)
		if err != nil {
			return nil, err
		}
		s, err := query.ParseSort(d)
		if err != nil {
			return nil, err
		}
		return &sortStage{next: next, sort: s}, nil
	case "$group":
		d, err := stageDoc(st)
		if err != nil {
			return nil, err
		}
		return newGroupStage(d, next)
	}
	return nil, mongoerr.Newf(mongoerr.NotImplemented, "pipeline stage %s is not supported by tierdb", name)
}

// mapStage passes each document through fn ($match, $project).
type mapStage struct {
	next stage
	fn   func(bson.D) (bson.D, bool)
}

func (s *mapStage) push(doc bson.D) error {
	if out, keep := s.fn(doc); keep {
		return s.next.push(out)
	}
	return nil
}

func (s *mapStage) finish() error { return s.next.finish() }

type skipStage struct {
	next stage
	skip int64
}

func (s *skipStage) push(doc bson.D) error {
	if s.skip > 0 {
		s.skip--
		return nil
	}
	return s.next.push(doc)
}

func (s *skipStage) finish() error { return s.next.finish() }

type limitStage struct {
	next stage
	left int64
}

func (s *limitStage) push(doc bson.D) error {
	if s.left <= 0 {
		return errPipelineDone
	}
	s.left--
	if err := s.next.push(doc); err != nil {
		return err
	}
	if s.left == 0 {
		return errPipelineDone
	}
	return nil
}

func (s *limitStage) finish() error { return s.next.finish() }

type countStage struct {
	next  stage
	field string
	n     int64
}

func (s *countStage) push(bson.D) error { s.n++; return nil }

func (s *countStage) finish() error {
	if s.n > 0 {
		if err := s.next.push(bson.D{{Key: s.field, Value: countValue(s.n)}}); err != nil && err != errPipelineDone {
			return err
		}
	}
	return s.next.finish()
}

// sortStage holds its input, sorted at finish. What it holds is counted as
// the decoded documents' estimated size (docMemory), not their BSON bytes.
type sortStage struct {
	next stage
	sort query.Sort
	docs []bson.D
	mem  int
}

func (s *sortStage) push(doc bson.D) error {
	if s.mem += docMemory(doc); s.mem > maxSortBytes {
		return exceeded("$sort")
	}
	s.docs = append(s.docs, doc)
	return nil
}

func (s *sortStage) finish() error {
	sort.SliceStable(s.docs, func(i, j int) bool { return s.sort.Compare(s.docs[i], s.docs[j]) < 0 })
	for i, d := range s.docs {
		s.docs[i] = nil // the next stage may keep only some of them
		if err := s.next.push(d); err == errPipelineDone {
			break
		} else if err != nil {
			return err
		}
	}
	s.docs = nil
	return s.next.finish()
}

// collectSink keeps the pipeline's results, encoded for the cursor.
type collectSink struct {
	raws []bson.Raw
	size int
}

func (s *collectSink) push(doc bson.D) error {
	raw, err := bsonx.Marshal(doc)
	if err != nil {
		return err
	}
	if s.size += len(raw); s.size > maxSortBytes {
		return exceeded("the aggregation's results")
	}
	s.raws = append(s.raws, raw)
	return nil
}

func (s *collectSink) finish() error { return nil }

// docMemory estimates what a decoded document occupies: per element its
// key and an interface value (two words each for the string and the
// interface), plus the value's own bytes, nested documents and arrays
// counted the same way.
func docMemory(d bson.D) int {
	n := 24 // the slice header
	for _, e := range d {
		n += 32 + len(e.Key) + valueMemory(e.Value)
	}
	return n
}

func valueMemory(v any) int {
	switch x := v.(type) {
	case bson.D:
		return docMemory(x)
	case bson.A:
		n := 24
		for _, e := range x {
			n += 16 + valueMemory(e)
		}
		return n
	case string:
		return 16 + len(x)
	case bson.Binary:
		return 32 + len(x.Data)
	}
	return 16
}
