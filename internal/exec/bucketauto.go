package exec

import (
	"math"
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/expr"
	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

// bucketAutoStage is $bucketAuto: its input sorted by the groupBy value
// (missing as null), cut into at most 'buckets' buckets of about the same
// number of documents, equal values never split, each bucket's _id its
// {min, max} (max is the next bucket's min, the last bucket's own
// largest value), its fields the output accumulators. It holds its input,
// within the memory limit. granularity is refused.
type bucketAutoStage struct {
	next    Stage
	key     expr.Expr
	buckets int
	acc     *groupStage // the parsed output accumulators
	ev      *evaluator
	entries []bucketEntry
	mem     int
}

type bucketEntry struct {
	key any
	doc bson.D
}

func newBucketAuto(arg any, next Stage, env *Env) (Stage, error) {
	d, ok := arg.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location40240, "The argument to $bucketAuto must be an object, but found type: %s", query.TypeName(arg))
	}
	scope := env.scope()
	b := &bucketAutoStage{next: next, ev: newEvaluator(env), acc: &groupStage{}}
	var output bson.D
	hasGroupBy, hasBuckets := false, false
	for _, e := range d {
		switch e.Key {
		case "groupBy":
			s, isStr := e.Value.(string)
			o, isDoc := e.Value.(bson.D)
			if !(isStr && strings.HasPrefix(s, "$")) && !(isDoc && len(o) == 1 && strings.HasPrefix(o[0].Key, "$")) {
				return nil, mongoerr.Newf(mongoerr.Location40239, "The $bucketAuto 'groupBy' field must be defined as a $-prefixed path or an expression object, but found: %s", expr.FormatValue(e.Value))
			}
			x, err := expr.Parse(e.Value, scope)
			if err != nil {
				return nil, err
			}
			b.key, hasGroupBy = x, true
		case "buckets":
			if !expr.IsNumber(e.Value) {
				return nil, mongoerr.Newf(mongoerr.Location40241, "The $bucketAuto 'buckets' field must be a numeric value, but found type: %s", query.TypeName(e.Value))
			}
			n, ok := query.AsInt(e.Value)
			if f, isFloat := e.Value.(float64); isFloat {
				ok = f == math.Trunc(f)
				n = int64(f)
			}
			if !ok || n > math.MaxInt32 || n < math.MinInt32 {
				return nil, mongoerr.Newf(mongoerr.Location40242, "The $bucketAuto 'buckets' field must be representable as a 32-bit integer, but found %s", expr.FormatValue(e.Value))
			}
			if n <= 0 {
				return nil, mongoerr.Newf(mongoerr.Location40243, "The $bucketAuto 'buckets' field must be greater than 0, but found: %d", n)
			}
			b.buckets, hasBuckets = int(n), true
		case "output":
			o, ok := e.Value.(bson.D)
			if !ok {
				return nil, mongoerr.Newf(mongoerr.Location40244, "The $bucketAuto 'output' field must be an object, but found type: %s", query.TypeName(e.Value))
			}
			output = o
		case "granularity":
			return nil, mongoerr.New(mongoerr.NotImplemented, "$bucketAuto's 'granularity' is not supported by tierdb")
		default:
			return nil, mongoerr.Newf(mongoerr.Location40245, "Unrecognized option to $bucketAuto: %s", e.Key)
		}
	}
	if !hasGroupBy || !hasBuckets {
		return nil, mongoerr.New(mongoerr.Location40246, "$bucketAuto requires 'groupBy' and 'buckets' to be specified")
	}
	if len(output) == 0 {
		output = bson.D{{Key: "count", Value: bson.D{{Key: "$sum", Value: int32(1)}}}}
	}
	if err := b.acc.parseAccumulators(output, scope); err != nil {
		return nil, err
	}
	return b, nil
}

func (b *bucketAutoStage) Push(doc bson.D) error {
	k, err := b.ev.eval(b.key, doc)
	if err != nil {
		return err
	}
	if expr.IsMissing(k) {
		k = nil
	}
	if b.mem += DocMemory(doc) + valueMemory(k) + 32; b.mem > MaxMemoryBytes {
		return Exceeded("$bucketAuto")
	}
	b.entries = append(b.entries, bucketEntry{key: k, doc: doc})
	return nil
}

func (b *bucketAutoStage) Finish() error {
	es := b.entries
	b.entries = nil
	sort.SliceStable(es, func(i, j int) bool { return query.Compare(es[i].key, es[j].key) < 0 })
	approx := int(math.Round(float64(len(es)) / float64(b.buckets)))
	approx = max(approx, 1)
	for i, num := 0, 1; i < len(es); num++ {
		min, max := es[i].key, es[i].key
		accs := make([]accumulator, len(b.acc.specs))
		for k, s := range b.acc.specs {
			acc, err := s.instance(b.ev, nil)
			if err != nil {
				return err
			}
			accs[k] = acc
		}
		add := func(e bucketEntry) error {
			max = e.key
			for k, s := range b.acc.specs {
				v, err := b.ev.eval(s.arg, e.doc)
				if err != nil {
					return err
				}
				if _, err := accs[k].add(v); err != nil {
					return err
				}
			}
			return nil
		}
		last := num == b.buckets
		for n := 0; i < len(es) && (n < approx || last); n++ {
			if err := add(es[i]); err != nil {
				return err
			}
			es[i] = bucketEntry{}
			i++
		}
		// Values equal to the bucket's largest stay in it.
		for i < len(es) && query.Compare(es[i].key, max) == 0 {
			if err := add(es[i]); err != nil {
				return err
			}
			es[i] = bucketEntry{}
			i++
		}
		if i < len(es) {
			max = es[i].key
		}
		out := bson.D{{Key: "_id", Value: bson.D{{Key: "min", Value: min}, {Key: "max", Value: max}}}}
		for k, f := range b.acc.fields {
			v := accs[k].value()
			if expr.IsMissing(v) {
				v = nil
			}
			out = append(out, bson.E{Key: f, Value: v})
		}
		if err := b.next.Push(out); err == ErrDone {
			break
		} else if err != nil {
			return err
		}
	}
	return b.next.Finish()
}
