package exec

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/expr"
	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

// mergeStage is $merge: each result is matched on the 'on' fields against
// the target collection and, per whenMatched and whenNotMatched, replaces,
// merges into, updates (with a pipeline) or keeps the document matched, or
// is inserted, discarded or refused. Results are handled a batch at a
// time: one read of the target for the batch, then the writes.
type mergeStage struct {
	env            *Env
	ns             Namespace
	on             []string
	whenMatched    string // replace, keepExisting, merge, fail, or pipeline
	whenNotMatched string // insert, discard, fail
	pipeline       []bson.D
	letNames       []string
	letExprs       []expr.Expr
	ev             *evaluator

	target MergeTarget
	batch  []pendingMerge
	keys   map[string]bool
	size   int
}

type pendingMerge struct {
	doc  bson.D
	key  string
	vals []any
}

func newMerge(arg any, env *Env) (Stage, error) {
	m := &mergeStage{env: env, on: []string{"_id"}, whenMatched: "merge", whenNotMatched: "insert", ev: newEvaluator(env), keys: map[string]bool{}}
	var let bson.D
	hasLet := false
	switch x := arg.(type) {
	case string:
		ns, err := parseNamespace("$merge", x, env)
		if err != nil {
			return nil, err
		}
		m.ns = ns
	case bson.D:
		hasInto := false
		for _, e := range x {
			switch e.Key {
			case "into":
				ns, err := parseNamespace("$merge", e.Value, env)
				if err != nil {
					return nil, err
				}
				m.ns, hasInto = ns, true
			case "on":
				on, err := parseMergeOn(e.Value)
				if err != nil {
					return nil, err
				}
				m.on = on
			case "let":
				d, ok := e.Value.(bson.D)
				if !ok {
					return nil, mongoerr.Newf(mongoerr.TypeMismatch, "BSON field '$merge.let' is the wrong type '%s', expected type 'object'", query.TypeName(e.Value))
				}
				let, hasLet = d, true
			case "whenMatched":
				switch v := e.Value.(type) {
				case string:
					switch v {
					case "replace", "keepExisting", "merge", "fail":
						m.whenMatched = v
					default:
						return nil, mongoerr.Newf(mongoerr.BadValue, "Enumeration value '%s' for field '$merge.whenMatched' is not a valid value.", v)
					}
				case bson.A:
					stages, err := ParsePipeline(v)
					if err != nil {
						return nil, err
					}
					for _, st := range stages {
						// The stages of an update's pipeline.
						if !updateStages[st[0].Key] {
							return nil, mongoerr.Newf(mongoerr.InvalidOptions, "%s is not allowed to be used within a $merge's whenMatched pipeline", st[0].Key)
						}
					}
					m.whenMatched, m.pipeline = "pipeline", stages
				default:
					return nil, mongoerr.Newf(mongoerr.TypeMismatch, "BSON field '$merge.whenMatched' is the wrong type '%s', expected types '[string, array]'", query.TypeName(e.Value))
				}
			case "whenNotMatched":
				v, ok := e.Value.(string)
				if !ok {
					return nil, mongoerr.Newf(mongoerr.TypeMismatch, "BSON field '$merge.whenNotMatched' is the wrong type '%s', expected type 'string'", query.TypeName(e.Value))
				}
				switch v {
				case "insert", "discard", "fail":
					m.whenNotMatched = v
				default:
					return nil, mongoerr.Newf(mongoerr.BadValue, "Enumeration value '%s' for field '$merge.whenNotMatched' is not a valid value.", v)
				}
			case "targetCollectionVersion":
				return nil, mongoerr.New(mongoerr.NotImplemented, "$merge's targetCollectionVersion is not supported by tierdb")
			default:
				return nil, mongoerr.Newf(mongoerr.UnknownField, "BSON field '$merge.%s' is an unknown field.", e.Key)
			}
		}
		if !hasInto {
			return nil, mongoerr.New(mongoerr.Location40414, "BSON field '$merge.into' is missing but a required field")
		}
	default:
		return nil, mongoerr.Newf(mongoerr.Location51182, "$merge requires a string or object argument, but found %s", query.TypeName(arg))
	}
	if hasLet && m.whenMatched != "pipeline" {
		return nil, mongoerr.Newf(mongoerr.Location51199, "Cannot use 'let' variables with 'whenMatched: %s' mode", m.whenMatched)
	}
	scope := env.scope()
	for _, v := range let {
		if v.Key == "new" {
			return nil, mongoerr.New(mongoerr.BadValue, "$merge's 'let' cannot redefine $$new")
		}
		x, err := expr.Parse(v.Value, scope)
		if err != nil {
			return nil, err
		}
		m.letNames = append(m.letNames, v.Key)
		m.letExprs = append(m.letExprs, x)
	}
	if m.pipeline != nil {
		// Parse the pipeline now, so that a bad one fails before anything
		// runs; it runs per matched document with $$new bound.
		if _, err := m.subPipeline(m.placeholderVars(), &docsSink{}); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func parseMergeOn(v any) ([]string, error) {
	var on []string
	switch x := v.(type) {
	case string:
		on = []string{x}
	case bson.A:
		if len(x) == 0 {
			return nil, mongoerr.New(mongoerr.Location51187, "If explicitly specifying $merge 'on', must include at least one field")
		}
		for _, f := range x {
			s, ok := f.(string)
			if !ok {
				return nil, mongoerr.Newf(mongoerr.Location51134, "$merge 'on' array elements must be strings, but found %s", query.TypeName(f))
			}
			on = append(on, s)
		}
	default:
		return nil, mongoerr.Newf(mongoerr.Location51186, "$merge 'on' field must be either a string or an array of strings, but found %s", query.TypeName(v))
	}
	seen := map[string]bool{}
	for _, f := range on {
		if f == "" || strings.HasPrefix(f, "$") {
			return nil, mongoerr.Newf(mongoerr.Location51178, "$merge 'on' field names may not be empty or start with '$': %q", f)
		}
		if seen[f] {
			return nil, mongoerr.Newf(mongoerr.Location31465, "Found a duplicate field '%s' in $merge 'on'", f)
		}
		seen[f] = true
	}
	return on, nil
}

func (m *mergeStage) placeholderVars() map[string]any {
	return placeholders(m.env.Vars, append([]string{"new"}, m.letNames...))
}

func (m *mergeStage) subPipeline(vars map[string]any, sink Stage) (Stage, error) {
	sub := *m.env
	sub.Vars = vars
	sub.within = "$merge"
	return Build(m.pipeline, sink, &sub)
}

// onValues reads the 'on' fields of a document, through documents only:
// a missing, null or array value cannot identify a document.
func (m *mergeStage) onValues(doc bson.D, fromTarget bool) ([]any, string, error) {
	vals := make([]any, len(m.on))
	var key []byte
	for i, f := range m.on {
		v, ok := nestedField(doc, strings.Split(f, "."))
		_, isArray := v.(bson.A)
		if !ok || v == nil || isUndefined(v) || isArray {
			if fromTarget {
				return nil, "", nil
			}
			return nil, "", mongoerr.Newf(mongoerr.Location51132, "$merge write error: 'on' field '%s' cannot be missing, null, undefined or an array", f)
		}
		vals[i] = v
		key = query.AppendKey(key, v)
	}
	return vals, string(key), nil
}

func (m *mergeStage) Push(doc bson.D) error {
	if m.target == nil {
		t, err := m.env.Output.Merge(m.env.Ctx, m.ns.DB, m.ns.Coll, m.on)
		if err != nil {
			return err
		}
		m.target = t
	}
	if len(m.on) == 1 && m.on[0] == "_id" {
		if _, ok := lookup(doc, "_id"); !ok {
			doc = append(bson.D{{Key: "_id", Value: bson.NewObjectID()}}, doc...)
		}
	}
	vals, key, err := m.onValues(doc, false)
	if err != nil {
		return err
	}
	if m.keys[key] {
		// A result matching one earlier in the batch must see its write.
		if err := m.flush(); err != nil {
			return err
		}
	}
	m.keys[key] = true
	m.batch = append(m.batch, pendingMerge{doc: doc, key: key, vals: vals})
	if m.size += DocMemory(doc); len(m.batch) >= writeBatchDocs || m.size >= writeBatchBytes {
		return m.flush()
	}
	return nil
}

type mergeMatch struct {
	doc   bson.D
	token any
}

// find reads the target documents matching the batch's 'on' values.
func (m *mergeStage) find(batch []pendingMerge) (map[string]mergeMatch, error) {
	var filter bson.D
	if len(m.on) == 1 {
		in := make(bson.A, len(batch))
		for i, p := range batch {
			in[i] = p.vals[0]
		}
		filter = bson.D{{Key: m.on[0], Value: bson.D{{Key: "$in", Value: in}}}}
	} else {
		or := make(bson.A, len(batch))
		for i, p := range batch {
			and := bson.D{}
			for j, f := range m.on {
				and = append(and, bson.E{Key: f, Value: bson.D{{Key: "$eq", Value: p.vals[j]}}})
			}
			or[i] = and
		}
		filter = bson.D{{Key: "$or", Value: or}}
	}
	found := map[string]mergeMatch{}
	err := m.target.Find(filter, func(doc bson.D, token any) error {
		_, key, _ := m.onValues(doc, true)
		if key != "" {
			found[key] = mergeMatch{doc: doc, token: token}
		}
		return nil
	})
	return found, err
}

func (m *mergeStage) flush() error {
	batch := m.batch
	m.batch, m.size = nil, 0
	clear(m.keys)
	if len(batch) == 0 {
		return nil
	}
	found, err := m.find(batch)
	if err != nil {
		return err
	}
	var w mergeWrites
	for _, p := range batch {
		match, ok := found[p.key]
		if !ok {
			switch m.whenNotMatched {
			case "insert":
				w.inserts = append(w.inserts, p.doc)
			case "fail":
				if err := m.write(&w); err != nil {
					return err
				}
				return mongoerr.New(mongoerr.MergeStageNoMatchingDocument, "$merge could not find a matching document in the target collection for at least one document in the source collection")
			}
			continue
		}
		out, skip, err := m.matched(p.doc, match)
		if err != nil {
			// The results before this one are written, as MongoDB's
			// would be.
			if werr := m.write(&w); werr != nil {
				return werr
			}
			return err
		}
		if !skip {
			w.pending = append(w.pending, p)
			w.tokens = append(w.tokens, match.token)
			w.docs = append(w.docs, out)
		}
	}
	return m.write(&w)
}

// mergeWrites are a batch's writes: replacements of matched documents
// (for the results pending) and inserts.
type mergeWrites struct {
	pending []pendingMerge
	tokens  []any
	docs    []bson.D
	inserts []bson.D
}

// write replaces, then inserts. A matched document that changed since it
// was read is read again and the result applied to it anew; a batch that
// fails (a duplicate key) is replayed one document at a time, so that
// the results before the failing one are written.
func (m *mergeStage) write(w *mergeWrites) error {
	if len(w.docs) > 0 {
		oks, err := m.target.Replace(w.tokens, w.docs)
		if err != nil && len(w.docs) > 1 {
			oks = make([]bool, len(w.docs))
			for i := range w.docs {
				one, err := m.target.Replace(w.tokens[i:i+1], w.docs[i:i+1])
				if err != nil {
					return err
				}
				oks[i] = one[0]
			}
		} else if err != nil {
			return err
		}
		for i, ok := range oks {
			if !ok {
				if err := m.retry(w.pending[i]); err != nil {
					return err
				}
			}
		}
	}
	return m.insert(w.inserts)
}

// retry applies a result to its matched document again, after it changed
// under the first try.
func (m *mergeStage) retry(p pendingMerge) error {
	for range 10 {
		again, err := m.find([]pendingMerge{p})
		if err != nil {
			return err
		}
		match, ok := again[p.key]
		if !ok {
			// It is gone: the result no longer matches anything.
			if m.whenNotMatched == "insert" {
				return m.insert([]bson.D{p.doc})
			}
			if m.whenNotMatched == "fail" {
				return mongoerr.New(mongoerr.MergeStageNoMatchingDocument, "$merge could not find a matching document in the target collection for at least one document in the source collection")
			}
			return nil
		}
		out, skip, err := m.matched(p.doc, match)
		if err != nil || skip {
			return err
		}
		oks, err := m.target.Replace([]any{match.token}, []bson.D{out})
		if err != nil || oks[0] {
			return err
		}
	}
	return mongoerr.New(mongoerr.WriteConflict, "$merge: the target document kept changing; retry")
}

func (m *mergeStage) insert(docs []bson.D) error {
	if len(docs) == 0 {
		return nil
	}
	return m.target.Insert(docs)
}

// matched applies whenMatched to a result and the target document it
// matched: the replacement, or skip to leave the document as it is.
func (m *mergeStage) matched(doc bson.D, match mergeMatch) (out bson.D, skip bool, err error) {
	switch m.whenMatched {
	case "keepExisting":
		return nil, true, nil
	case "fail":
		return nil, false, mongoerr.Newf(mongoerr.DuplicateKey, "$merge with whenMatched: fail found a document of %s.%s with the same 'on' fields (%s)", m.ns.DB, m.ns.Coll, strings.Join(m.on, ", "))
	case "replace":
		out = doc
	case "merge":
		out = append(bson.D{}, match.doc...)
		for _, e := range doc {
			out = setPath(out, []string{e.Key}, e.Value)
		}
	case "pipeline":
		if out, err = m.runPipeline(doc, match.doc); err != nil {
			return nil, false, err
		}
	}
	out, err = keepID(out, match.doc)
	return out, false, err
}

// keepID gives a replacement the _id of the document it replaces, which
// it may leave out but not change.
func keepID(out, old bson.D) (bson.D, error) {
	oldID, _ := lookup(old, "_id")
	id, ok := lookup(out, "_id")
	if !ok {
		return append(bson.D{{Key: "_id", Value: oldID}}, out...), nil
	}
	if query.Compare(id, oldID) != 0 || query.TypeName(id) != query.TypeName(oldID) {
		return nil, mongoerr.New(mongoerr.ImmutableField, "$merge failed to update the matching document, did you attempt to modify the _id or the shard key?")
	}
	return out, nil
}

// runPipeline runs whenMatched's pipeline over the target document, with
// $$new the result and the let variables evaluated on it.
func (m *mergeStage) runPipeline(doc, target bson.D) (bson.D, error) {
	vars := map[string]any{"new": doc}
	for k, v := range m.env.Vars {
		vars[k] = v
	}
	for i, n := range m.letNames {
		v, err := m.ev.eval(m.letExprs[i], doc)
		if err != nil {
			return nil, err
		}
		if expr.IsMissing(v) {
			v = nil
		}
		vars[n] = v
	}
	sink := &docsSink{what: "$merge"}
	head, err := m.subPipeline(vars, sink)
	if err != nil {
		return nil, err
	}
	if err := head.Push(target); err != nil && err != ErrDone {
		return nil, err
	}
	if err := head.Finish(); err != nil {
		return nil, err
	}
	if len(sink.docs) != 1 {
		return nil, mongoerr.New(mongoerr.InternalError, "$merge's whenMatched pipeline did not give one document")
	}
	return sink.docs[0], nil
}

func (m *mergeStage) Finish() error {
	if m.target == nil {
		t, err := m.env.Output.Merge(m.env.Ctx, m.ns.DB, m.ns.Coll, m.on)
		if err != nil {
			return err
		}
		m.target = t
	}
	return m.flush()
}
