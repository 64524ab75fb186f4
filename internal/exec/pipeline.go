package exec

import (
	"context"
	"errors"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/expr"
	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

// MaxMemoryBytes is MongoDB's limit for what a blocking stage holds.
const MaxMemoryBytes = 100 * 1024 * 1024

// maxDocBytes is the BSON document size limit, for documents a stage
// builds ($facet's, $lookup's).
const maxDocBytes = 16 * 1024 * 1024

// A Stage takes documents one at a time (Push) and passes what it
// produces to the next stage; Finish flushes what a blocking stage
// ($group, $sort, $count, ...) holds. Memory is what the stages keep, each
// bounded by MaxMemoryBytes like MongoDB's blocking stages. A stage never
// changes a document it was given: $facet hands one document to several.
type Stage interface {
	Push(doc bson.D) error
	Finish() error
}

// ErrDone: a stage needs no more input ($limit reached).
var ErrDone = errors.New("pipeline needs no more documents")

// ExceededHint ends Exceeded's message.
const ExceededHint = "; only $sort and $group spill to disk, and only when allowDiskUse allows it"

// Exceeded is the error of a stage past the memory limit.
func Exceeded(what string) error {
	return mongoerr.Newf(mongoerr.QueryExceededMemoryLimit, "%s exceeded the memory limit of %d bytes%s", what, MaxMemoryBytes, ExceededHint)
}

// Reader streams the documents of a collection of the pipeline's database
// that match filter, in _id order, until fn returns an error (ErrDone:
// stop without error). A missing collection has no documents.
type Reader func(ctx context.Context, coll string, filter *query.Filter, fn func(doc bson.D) error) error

// Env is what a pipeline runs with.
type Env struct {
	Ctx context.Context
	// Read reads other collections, for $lookup; nil refuses $lookup.
	Read Reader
	// Vars are the variables expressions may read ($$name): the
	// aggregate command's let, a $lookup's let.
	Vars map[string]any
	// Now is $$NOW.
	Now bson.DateTime
	// DB is the pipeline's database, where $out and $merge write by
	// default.
	DB string
	// Output is where $out and $merge write; nil refuses them.
	Output Output
	// AllowDiskUse lets $sort spill to temporary files in TempDir ("":
	// the OS's temporary directory) past the memory limit.
	AllowDiskUse bool
	TempDir      string
	// inFacet marks a $facet's sub-pipeline, where some stages are not
	// allowed.
	inFacet bool
	// within names the stage whose sub-pipeline this is ($lookup,
	// $unionWith, $merge), "" for the outermost pipeline.
	within string
	// TextScore is set when the pipeline's input comes from a $text
	// search: the input sets the score of each document before pushing
	// it (meta.go). nil: no text score, noMeta says why (nil: no $text).
	TextScore *expr.Meta
	noMeta    error
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

// Build chains the stages in front of sink and returns the first. Every
// stage is parsed before anything runs, so a bad stage fails at once.
func Build(stages []bson.D, sink Stage, env *Env) (Stage, error) {
	if env.Ctx == nil {
		env.Ctx = context.Background()
	}
	if env.Now == 0 {
		env.Now = expr.Now()
	}
	next := sink
	envs := stageEnvs(stages, env)
	for i := len(stages) - 1; i >= 0; i-- {
		if name := stages[i][0].Key; (name == "$out" || name == "$merge") && !env.inFacet {
			if err := checkWritingStage(name, i == len(stages)-1, env); err != nil {
				return nil, err
			}
		}
		st, err := newStage(stages[i], next, envs[i])
		if err != nil {
			return nil, err
		}
		if sorter, ok := st.(*sortStage); ok {
			sorter.keep = sortKeep(stages[i+1:])
		}
		next = st
	}
	return next, nil
}

// unsupportedStages are MongoDB stages tierdb does not run.
var unsupportedStages = map[string]bool{
	"$geoNear":           true,
	"$listSessions":      true,
	"$listLocalSessions": true, "$planCacheStats": true, "$changeStream": true,
	"$search": true, "$searchMeta": true, "$vectorSearch": true,
	"$listSearchIndexes": true, "$changeStreamSplitLargeEvent": true, "$querySettings": true,
}

// notInFacet are the stages MongoDB refuses inside $facet.
var notInFacet = map[string]bool{
	"$facet": true, "$out": true, "$merge": true, "$collStats": true, "$indexStats": true,
	"$geoNear": true, "$planCacheStats": true, "$changeStream": true,
}

func newStage(st bson.D, next Stage, env *Env) (Stage, error) {
	name, arg := st[0].Key, st[0].Value
	if env.inFacet && notInFacet[name] {
		return nil, mongoerr.Newf(mongoerr.Location40600, "%s is not allowed to be used within a $facet stage", name)
	}
	switch name {
	case "$match":
		d, err := stageDoc(st)
		if err != nil {
			return nil, err
		}
		if err := checkMatchMeta(d, env); err != nil {
			return nil, err
		}
		f, err := query.ParseFilterVars(d, expr.WithNow(env.Vars, env.Now))
		if err != nil {
			return nil, err
		}
		return &mapStage{next: next, fn: func(doc bson.D) (bson.D, bool, error) {
			ok, err := f.MatchErr(doc)
			return doc, ok, err
		}}, nil
	case "$project", "$unset":
		p, err := parseProjectStage(name, arg, env)
		if err != nil {
			return nil, err
		}
		return &mapStage{next: next, fn: func(doc bson.D) (bson.D, bool, error) {
			out, err := p.apply(doc)
			return out, true, err
		}}, nil
	case "$addFields", "$set":
		a, err := parseAddFields(name, arg, env)
		if err != nil {
			return nil, err
		}
		return &mapStage{next: next, fn: func(doc bson.D) (bson.D, bool, error) {
			out, err := a.apply(doc)
			return out, true, err
		}}, nil
	case "$replaceRoot", "$replaceWith":
		return newReplaceRoot(name, arg, next, env)
	case "$skip", "$limit":
		n, err := stageCount(name, arg)
		if err != nil {
			return nil, err
		}
		if name == "$skip" {
			return &skipStage{next: next, skip: n}, nil
		}
		return &limitStage{next: next, left: n}, nil
	case "$count":
		field, err := countField(arg)
		if err != nil {
			return nil, err
		}
		return &countStage{next: next, field: field}, nil
	case "$sort":
		if err := checkSortStage(arg); err != nil {
			return nil, err
		}
		d, err := stageDoc(st)
		if err != nil {
			return nil, err
		}
		return newSortStage(d, next, env)
	case "$group":
		d, err := stageDoc(st)
		if err != nil {
			return nil, err
		}
		return newGroupStage(d, next, env)
	case "$unwind":
		return newUnwind(arg, next)
	case "$sortByCount":
		return newSortByCount(arg, next, env)
	case "$bucket":
		return newBucket(arg, next, env)
	case "$facet":
		return newFacet(arg, next, env)
	case "$sample":
		return newSample(arg, next)
	case "$lookup":
		return newLookup(arg, next, env)
	case "$unionWith":
		return newUnionWith(arg, next, env)
	case "$graphLookup":
		return newGraphLookup(arg, next, env)
	case "$bucketAuto":
		return newBucketAuto(arg, next, env)
	case "$setWindowFields":
		return newSetWindowFields(arg, next, env)
	case "$out":
		return newOut(arg, env)
	case "$merge":
		return newMerge(arg, env)
	case "$redact":
		return newRedact(arg, next, env)
	case "$fill":
		return newFill(arg, next, env)
	case "$densify":
		return newDensify(arg, next, env)
	case "$collStats", "$currentOp", "$indexStats", "$documents":
		// Sources: the aggregate handler (or $lookup and $unionWith, for
		// $documents) runs them when they come first.
		return nil, mongoerr.Newf(mongoerr.Location40602, "%s is only valid as the first stage in a pipeline", name)
	}
	if unsupportedStages[name] {
		return nil, mongoerr.Newf(mongoerr.NotImplemented, "pipeline stage %s is not supported by tierdb", name)
	}
	return nil, mongoerr.Newf(mongoerr.Location40324, "Unrecognized pipeline stage name: '%s'", name)
}

// mapStage passes each document through fn ($match, $project, ...).
type mapStage struct {
	next Stage
	fn   func(bson.D) (bson.D, bool, error)
}

func (s *mapStage) Push(doc bson.D) error {
	out, keep, err := s.fn(doc)
	if err != nil || !keep {
		return err
	}
	return s.next.Push(out)
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

// sortStage holds its input, sorted at Finish. What it holds is counted as
// the decoded documents' estimated size (DocMemory), not their BSON bytes.
// With allowDiskUse it spills sorted runs to temporary files instead of
// failing (spill.go).
type sortStage struct {
	next Stage
	sort query.Sort
	docs []bson.D
	mem  int
	// spill: past the limit, write a run to tempDir ("": the OS's).
	spill   bool
	tempDir string
	runs    []*sortRun
	// keep: only the first keep documents in order matter (a $limit
	// follows, topk.go); 0: all.
	keep int64
	// wrap: hold each document with its text score (meta.go).
	wrap *expr.Meta
}

// sortMemoryBytes is what $sort holds before it spills or fails (a
// variable for tests).
var sortMemoryBytes = MaxMemoryBytes

func (s *sortStage) Push(doc bson.D) error {
	if s.wrap != nil {
		doc = wrapScored(doc, s.wrap)
	}
	s.mem += DocMemory(doc)
	s.docs = append(s.docs, doc)
	s.trimToKeep()
	if s.mem <= sortMemoryBytes {
		return nil
	}
	if !s.spill {
		s.docs = nil
		return Exceeded("$sort")
	}
	return s.spillRun()
}

func (s *sortStage) Finish() error {
	if s.runs != nil {
		return s.mergeRuns()
	}
	sortDocs(s.docs, s.sort)
	return flush(&s.docs, s.next)
}

// flush pushes docs to next, releasing each as it goes, then finishes
// next.
func flush(docs *[]bson.D, next Stage) error {
	for i, d := range *docs {
		(*docs)[i] = nil // the next stage may keep only some of them
		if err := next.Push(d); err == ErrDone {
			break
		} else if err != nil {
			return err
		}
	}
	*docs = nil
	return next.Finish()
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

// docsSink keeps decoded documents, counting them against the memory
// limit ($facet's sub-pipelines, $lookup's).
type docsSink struct {
	what string
	docs []bson.D
	mem  int
}

func (s *docsSink) Push(doc bson.D) error {
	if s.mem += DocMemory(doc); s.mem > MaxMemoryBytes {
		return Exceeded(s.what)
	}
	s.docs = append(s.docs, doc)
	return nil
}

func (s *docsSink) Finish() error { return nil }

// DocMemory estimates what a decoded document occupies: per element its
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

func stageDoc(st bson.D) (bson.D, error) {
	d, ok := st[0].Value.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.FailedToParse, "the %s stage specification must be an object", st[0].Key)
	}
	return d, nil
}

func lookup(d bson.D, key string) (any, bool) {
	for _, e := range d {
		if e.Key == key {
			return e.Value, true
		}
	}
	return nil, false
}

// countValue is an int32 when it fits, as MongoDB replies.
func countValue(n int64) any {
	if n <= 1<<31-1 {
		return int32(n)
	}
	return n
}

// evaluator evaluates a stage's expressions, one document at a time.
type evaluator struct {
	ctx *expr.Ctx
}

func newEvaluator(env *Env) *evaluator {
	return &evaluator{ctx: expr.NewCtx(nil, env.Vars, env.Now)}
}

func (ev *evaluator) eval(e expr.Expr, doc bson.D) (any, error) {
	ev.ctx.Reset(doc)
	return e.Eval(ev.ctx)
}
