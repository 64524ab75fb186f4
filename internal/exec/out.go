package exec

import (
	"context"
	"strings"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

// The writing stages, $out and $merge, end a pipeline: they write its
// results to a collection through the Output the handler gives in Env
// (which checks the user's rights and writes through storage at the
// request's tier) and pass nothing on. They hold one batch at a time.

// Output is where $out and $merge write.
type Output interface {
	// Out starts replacing db.coll with the pipeline's results: they go
	// to a new collection that takes the place of db.coll (keeping its
	// indexes) at Commit, or is dropped if the pipeline fails.
	Out(ctx context.Context, db, coll string) (OutWriter, error)
	// Merge opens db.coll for $merge; on are the fields that identify a
	// document, which a unique index of db.coll must cover (else 51183).
	Merge(ctx context.Context, db, coll string, on []string) (MergeTarget, error)
}

// OutWriter is $out's new collection, filled a batch at a time.
type OutWriter interface {
	Insert(docs []bson.D) error
	Commit() error
}

// MergeTarget is the collection $merge writes to.
type MergeTarget interface {
	// Find calls fn with each stored document that matches filter and a
	// token that Replace needs to swap it.
	Find(filter bson.D, fn func(doc bson.D, token any) error) error
	// Insert inserts documents (a duplicate key fails the batch).
	Insert(docs []bson.D) error
	// Replace replaces the documents Find gave with tokens by docs, in
	// one transaction; ok[i] is false where a document changed since it
	// was read (it is left as it is). An error leaves them all as they
	// were.
	Replace(tokens []any, docs []bson.D) (ok []bool, err error)
}

// writeBatchDocs and writeBatchBytes bound what a writing stage holds
// before it writes.
const (
	writeBatchDocs  = 500
	writeBatchBytes = 4 << 20
)

// Namespace is a database and collection a stage names.
type Namespace struct{ DB, Coll string }

// parseNamespace reads a target given as a collection name (in the
// pipeline's database) or as {db, coll}.
func parseNamespace(stage string, v any, env *Env) (Namespace, error) {
	ns := Namespace{DB: env.DB}
	switch x := v.(type) {
	case string:
		ns.Coll = x
	case bson.D:
		for _, e := range x {
			s, ok := e.Value.(string)
			switch {
			case e.Key != "db" && e.Key != "coll":
				if stage == "$out" && e.Key == "timeseries" {
					return ns, mongoerr.New(mongoerr.NotImplemented, "$out to a time series collection is not supported by tierdb")
				}
				return ns, mongoerr.Newf(mongoerr.UnknownField, "BSON field '%s.%s' is an unknown field.", stage, e.Key)
			case !ok:
				return ns, mongoerr.Newf(mongoerr.TypeMismatch, "BSON field '%s.%s' is the wrong type '%s', expected type 'string'", stage, e.Key, query.TypeName(e.Value))
			case e.Key == "db":
				ns.DB = s
			default:
				ns.Coll = s
			}
		}
		if _, ok := lookup(x, "coll"); !ok {
			return ns, mongoerr.Newf(mongoerr.Location40414, "BSON field '%s.coll' is missing but a required field", stage)
		}
		if _, ok := lookup(x, "db"); !ok && stage == "$out" {
			return ns, mongoerr.Newf(mongoerr.Location40414, "BSON field '%s.db' is missing but a required field", stage)
		}
	default:
		if stage == "$out" {
			return ns, mongoerr.Newf(mongoerr.Location16990, "$out only supports a string or object argument, but found %s", query.TypeName(v))
		}
		return ns, mongoerr.Newf(mongoerr.Location51191, "$merge 'into' field must be either a string or an object, but found %s", query.TypeName(v))
	}
	if ns.Coll == "" || ns.DB == "" || strings.ContainsAny(ns.Coll, "$\x00") || strings.ContainsAny(ns.DB, "/\\. \"$\x00") ||
		strings.HasPrefix(ns.Coll, ".") || strings.HasSuffix(ns.Coll, ".") || len(ns.DB) > 63 || len(ns.DB)+1+len(ns.Coll) > 255 ||
		!utf8.ValidString(ns.DB+ns.Coll) {
		return ns, mongoerr.Newf(mongoerr.InvalidNamespace, "Invalid %s target namespace, %s.%s", stage, ns.DB, ns.Coll)
	}
	if strings.HasPrefix(ns.Coll, "system.") {
		return ns, mongoerr.Newf(mongoerr.Location17385, "Can't %s to special collection: %s", stage, ns.Coll)
	}
	return ns, nil
}

// checkWritingStage refuses $out and $merge where MongoDB does: anywhere
// but at the end of the outermost pipeline.
func checkWritingStage(name string, last bool, env *Env) error {
	switch {
	case env.within == "$lookup":
		return mongoerr.Newf(mongoerr.Location51047, "%s is not allowed within a $lookup's sub-pipeline", name)
	case env.within == "$unionWith":
		return mongoerr.Newf(mongoerr.Location31441, "%s is not allowed within a $unionWith's sub-pipeline", name)
	case !last:
		return mongoerr.Newf(mongoerr.Location40601, "%s can only be the final stage in the pipeline", name)
	case env.Output == nil:
		return mongoerr.Newf(mongoerr.NotImplemented, "%s is not supported here by tierdb", name)
	}
	return nil
}

// outStage is $out.
type outStage struct {
	env   *Env
	ns    Namespace
	w     OutWriter
	batch []bson.D
	size  int
}

func newOut(arg any, env *Env) (Stage, error) {
	ns, err := parseNamespace("$out", arg, env)
	if err != nil {
		return nil, err
	}
	return &outStage{env: env, ns: ns}, nil
}

// open starts the new collection at the first document (or at Finish),
// never when the pipeline is only parsed.
func (s *outStage) open() error {
	if s.w != nil {
		return nil
	}
	w, err := s.env.Output.Out(s.env.Ctx, s.ns.DB, s.ns.Coll)
	s.w = w
	return err
}

func (s *outStage) Push(doc bson.D) error {
	if err := s.open(); err != nil {
		return err
	}
	s.batch = append(s.batch, doc)
	if s.size += DocMemory(doc); len(s.batch) >= writeBatchDocs || s.size >= writeBatchBytes {
		return s.flush()
	}
	return nil
}

func (s *outStage) flush() error {
	if len(s.batch) == 0 {
		return nil
	}
	err := s.w.Insert(s.batch)
	s.batch, s.size = s.batch[:0], 0
	return err
}

func (s *outStage) Finish() error {
	if err := s.open(); err != nil {
		return err
	}
	if err := s.flush(); err != nil {
		return err
	}
	return s.w.Commit()
}
