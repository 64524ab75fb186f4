package exec

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

// MaxMemoryBytes is MongoDB's limit for what a blocking stage holds.
const MaxMemoryBytes = 100 * 1024 * 1024

// An aggregation pipeline streams: each Stage takes documents one at a time
// (push) and passes what it produces to the next; finish flushes what a
// blocking Stage ($group, $sort, $count) holds. Memory is what the stages
// keep, each bounded by MaxMemoryBytes like MongoDB's blocking stages, and
// the results.
type Stage interface {
	Push(doc bson.D) error
	Finish() error
}

// ErrDone: a Stage needs no more input ($limit reached).
var ErrDone = errors.New("pipeline needs no more documents")

func Exceeded(what string) error {
	return mongoerr.Newf(mongoerr.QueryExceededMemoryLimit, "%s exceeded the memory limit of %d bytes; tierdb does not spill to disk (allowDiskUse)", what, MaxMemoryBytes)
}

// ParsePipeline checks that each stage is a document of one field.
func ParsePipeline(pipeline bson.A) ([]bson.D, error) {
	stages := make([]bson.D, len(pipeline))
	for i, s := range pipeline {
		d, ok := s.(bson.D)
		if !ok || len(d) != 1 {
			return nil, mongoerr.New(mongoerr.Location40323, "A pipeline stage specification object must contain exactly one field.")
		}
		stages[i] = d
	}
	return stages, nil
}

// LeadingMatch splits off a leading $match's filter, which the caller can
// push down to storage; the rest of the stages follow.
func LeadingMatch(stages []bson.D) (bson.D, []bson.D, error) {
	if len(stages) == 0 || stages[0][0].Key != "$match" {
		return nil, stages, nil
	}
	d, err := stageDoc(stages[0])
	if err != nil {
		return nil, nil, err
	}
	return d, stages[1:], nil
}

// Build chains the stages in front of sink and returns the first.
func Build(stages []bson.D, sink Stage) (Stage, error) {
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

func newStage(st bson.D, next Stage) (Stage, error) {
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
	return nil, mongoerr.Newf(mongoerr.NotImplemented, "pipeline Stage %s is not supported by tierdb", name)
}

// mapStage passes each document through fn ($match, $project).
type mapStage struct {
	next Stage
	fn   func(bson.D) (bson.D, bool)
}

func (s *mapStage) Push(doc bson.D) error {
	if out, keep := s.fn(doc); keep {
		return s.next.Push(out)
	}
	return nil
}

func (s *mapStage) Finish() error { return s.next.Finish() }

type skipStage struct {
	next Stage
	skip int64
}

func (s *skipStage) Push(doc bson.D) error {
	if s.skip > 0 {
		s.skip--
		return nil
	}
	return s.next.Push(doc)
}

func (s *skipStage) Finish() error { return s.next.Finish() }

type limitStage struct {
	next Stage
	left int64
}

func (s *limitStage) Push(doc bson.D) error {
	if s.left <= 0 {
		return ErrDone
	}
	s.left--
	if err := s.next.Push(doc); err != nil {
		return err
	}
	if s.left == 0 {
		return ErrDone
	}
	return nil
}

func (s *limitStage) Finish() error { return s.next.Finish() }

type countStage struct {
	next  Stage
	field string
	n     int64
}

func (s *countStage) Push(bson.D) error { s.n++; return nil }

func (s *countStage) Finish() error {
	if s.n > 0 {
		if err := s.next.Push(bson.D{{Key: s.field, Value: countValue(s.n)}}); err != nil && err != ErrDone {
			return err
		}
	}
	return s.next.Finish()
}

// sortStage holds its input, sorted at finish. What it holds is counted as
// the decoded documents' estimated size (docMemory), not their BSON bytes.
type sortStage struct {
	next Stage
	sort query.Sort
	docs []bson.D
	mem  int
}

func (s *sortStage) Push(doc bson.D) error {
	if s.mem += DocMemory(doc); s.mem > MaxMemoryBytes {
		return Exceeded("$sort")
	}
	s.docs = append(s.docs, doc)
	return nil
}

func (s *sortStage) Finish() error {
	sort.SliceStable(s.docs, func(i, j int) bool { return s.sort.Compare(s.docs[i], s.docs[j]) < 0 })
	for i, d := range s.docs {
		s.docs[i] = nil // the next Stage may keep only some of them
		if err := s.next.Push(d); err == ErrDone {
			break
		} else if err != nil {
			return err
		}
	}
	s.docs = nil
	return s.next.Finish()
}

// Collect keeps the pipeline's results, encoded for the cursor.
type Collect struct {
	Raws []bson.Raw
	size int
}

func (s *Collect) Push(doc bson.D) error {
	raw, err := bsonx.Marshal(doc)
	if err != nil {
		return err
	}
	if s.size += len(raw); s.size > MaxMemoryBytes {
		return Exceeded("the aggregation's results")
	}
	s.Raws = append(s.Raws, raw)
	return nil
}

func (s *Collect) Finish() error { return nil }

// docMemory estimates what a decoded document occupies: per element its
// key and an interface value (two words each for the string and the
// interface), plus the value's own bytes, nested documents and arrays
// counted the same way.
func DocMemory(d bson.D) int {
	n := 24 // the slice header
	for _, e := range d {
		n += 32 + len(e.Key) + valueMemory(e.Value)
	}
	return n
}

func valueMemory(v any) int {
	switch x := v.(type) {
	case bson.D:
		return DocMemory(x)
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
