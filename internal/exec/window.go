package exec

import (
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/expr"
	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

// windowStage is $setWindowFields for its common forms: documents are
// grouped by partitionBy (in BSON order of its value), sorted by sortBy
// within each partition, and given output fields computed over a window of
// their partition: the accumulators $sum $avg $min $max $count $first
// $last $push $addToSet $stdDevPop $stdDevSamp $concatArrays $setUnion
// $firstN $lastN $minN $maxN $top $bottom $topN $bottomN $median
// $percentile over a 'documents' window
// (bounds "unbounded", "current" or a relative position; the whole
// partition by default), and $rank, $denseRank, $documentNumber and
// $shift. Range windows, time units and the other window functions are
// refused (NotImplemented). It holds its input, within the memory limit.
type windowStage struct {
	next      Stage
	partition expr.Expr // nil: one partition
	sortBy    query.Sort
	sortKeys  int
	// sortPath is the field of a one-key sortBy ($linearFill's x).
	sortPath []string
	outputs  []windowOutput
	ev       *evaluator
	rows     []windowRow
	mem      int
}

type windowRow struct {
	doc  bson.D
	part any
}

type windowOutput struct {
	path                 []string
	op                   string
	arg                  expr.Expr
	lower, upper         int64
	lowerOpen, upperOpen bool // "unbounded"
	shiftBy              int64
	shiftDefault         any
	// spec is an accumulator that takes a specification ($topN, $median,
	// ...: accum_n.go); nil for the others.
	spec *accSpec
}

// windowAccumulators are the accumulators that run over a window.
var windowAccumulators = map[string]bool{
	"$sum": true, "$avg": true, "$min": true, "$max": true, "$count": true, "$first": true, "$last": true,
	"$push": true, "$addToSet": true, "$stdDevPop": true, "$stdDevSamp": true,
	"$concatArrays": true, "$setUnion": true,
}

// rankFunctions take no argument and no window.
var rankFunctions = map[string]bool{"$rank": true, "$denseRank": true, "$documentNumber": true}

func newSetWindowFields(arg any, next Stage, env *Env) (Stage, error) {
	d, ok := arg.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.FailedToParse, "the $setWindowFields stage specification must be an object, found %s", query.TypeName(arg))
	}
	w := &windowStage{next: next, ev: newEvaluator(env)}
	scope := env.scope()
	var output bson.D
	hasOutput := false
	for _, e := range d {
		switch e.Key {
		case "partitionBy":
			x, err := expr.Parse(e.Value, scope)
			if err != nil {
				return nil, err
			}
			w.partition = x
		case "sortBy":
			s, ok := e.Value.(bson.D)
			if !ok {
				return nil, mongoerr.Newf(mongoerr.TypeMismatch, "BSON field '$setWindowFields.sortBy' is the wrong type '%s', expected type 'object'", query.TypeName(e.Value))
			}
			sortBy, err := query.ParseSort(s)
			if err != nil {
				return nil, err
			}
			w.sortBy, w.sortKeys = sortBy, len(s)
			if len(s) == 1 {
				w.sortPath = strings.Split(s[0].Key, ".")
			}
		case "output":
			o, ok := e.Value.(bson.D)
			if !ok {
				return nil, mongoerr.Newf(mongoerr.TypeMismatch, "BSON field '$setWindowFields.output' is the wrong type '%s', expected type 'object'", query.TypeName(e.Value))
			}
			output, hasOutput = o, true
		default:
			return nil, mongoerr.Newf(mongoerr.UnknownField, "BSON field '$setWindowFields.%s' is an unknown field.", e.Key)
		}
	}
	if !hasOutput {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field '$setWindowFields.output' is missing but a required field")
	}
	for _, e := range output {
		o, err := w.parseOutput(e, scope)
		if err != nil {
			return nil, err
		}
		w.outputs = append(w.outputs, o)
	}
	return w, nil
}

func (w *windowStage) parseOutput(e bson.E, scope *expr.Scope) (windowOutput, error) {
	o := windowOutput{lowerOpen: true, upperOpen: true}
	if e.Key == "" || strings.HasPrefix(e.Key, "$") {
		return o, mongoerr.Newf(mongoerr.FailedToParse, "$setWindowFields output field names must not be empty or start with '$': %q", e.Key)
	}
	o.path = strings.Split(e.Key, ".")
	spec, ok := e.Value.(bson.D)
	if !ok {
		return o, mongoerr.Newf(mongoerr.FailedToParse, "The field '%s' must be an object", e.Key)
	}
	var window bson.D
	hasWindow := false
	var fnArg any
	for _, f := range spec {
		switch {
		case f.Key == "window":
			d, ok := f.Value.(bson.D)
			if !ok {
				return o, mongoerr.New(mongoerr.FailedToParse, "'window' field must be an object")
			}
			window, hasWindow = d, true
		case strings.HasPrefix(f.Key, "$"):
			if o.op != "" {
				return o, mongoerr.Newf(mongoerr.FailedToParse, "Two window functions given for '%s': %s and %s", e.Key, o.op, f.Key)
			}
			o.op, fnArg = f.Key, f.Value
		default:
			return o, mongoerr.Newf(mongoerr.FailedToParse, "'%s' is not a valid window function field", f.Key)
		}
	}
	switch {
	case o.op == "":
		return o, mongoerr.Newf(mongoerr.FailedToParse, "Expected a window function for '%s'", e.Key)
	case specialAccumulators[o.op] != nil:
		spec, err := specialAccumulators[o.op](o.op, fnArg, scope)
		if err != nil {
			return o, err
		}
		o.spec, o.arg = &spec, spec.arg
		if hasWindow {
			if err := o.parseWindow(window, w.sortKeys > 0); err != nil {
				return o, err
			}
		}
	case windowAccumulators[o.op]:
		arg := fnArg
		if o.op == "$count" {
			if d, ok := arg.(bson.D); !ok || len(d) != 0 {
				return o, mongoerr.New(mongoerr.FailedToParse, "$count takes no arguments, i.e. $count:{}")
			}
			arg = int32(1)
		}
		x, err := expr.Parse(arg, scope)
		if err != nil {
			return o, err
		}
		o.arg = x
		if hasWindow {
			if err := o.parseWindow(window, w.sortKeys > 0); err != nil {
				return o, err
			}
		}
	case rankFunctions[o.op]:
		if d, ok := fnArg.(bson.D); !ok || len(d) != 0 {
			return o, mongoerr.Newf(mongoerr.FailedToParse, "%s takes no arguments, i.e. %s:{}", o.op, o.op)
		}
		if hasWindow {
			return o, mongoerr.Newf(mongoerr.FailedToParse, "%s does not accept a 'window' field", o.op)
		}
		if o.op != "$documentNumber" && w.sortKeys != 1 {
			return o, mongoerr.Newf(mongoerr.FailedToParse, "%s must be specified with a top level sortBy expression with exactly one element", o.op)
		}
	case o.op == "$shift":
		if err := o.parseShift(fnArg, scope); err != nil {
			return o, err
		}
		if hasWindow {
			return o, mongoerr.New(mongoerr.FailedToParse, "$shift does not accept a 'window' field")
		}
		if w.sortKeys == 0 {
			return o, mongoerr.New(mongoerr.FailedToParse, "$shift requires a sortBy")
		}
	case o.op == "$locf" || o.op == "$linearFill":
		if err := o.parseFill(fnArg, hasWindow, w.sortKeys, scope); err != nil {
			return o, err
		}
	case windowUnsupported[o.op]:
		return o, mongoerr.Newf(mongoerr.NotImplemented, "the window function %s is not supported by tierdb", o.op)
	default:
		return o, mongoerr.Newf(mongoerr.FailedToParse, "Unrecognized window function, %s", o.op)
	}
	return o, nil
}

// windowUnsupported are MongoDB window functions tierdb does not run.
var windowUnsupported = map[string]bool{
	"$expMovingAvg": true, "$derivative": true, "$integral": true, "$covariancePop": true, "$covarianceSamp": true,
}

func (o *windowOutput) parseWindow(window bson.D, sorted bool) error {
	for _, e := range window {
		switch e.Key {
		case "documents":
			a, ok := e.Value.(bson.A)
			if !ok || len(a) != 2 {
				return mongoerr.New(mongoerr.FailedToParse, "Window bounds must be a 2-element array")
			}
			var err error
			if o.lower, o.lowerOpen, err = windowBound(a[0]); err != nil {
				return err
			}
			if o.upper, o.upperOpen, err = windowBound(a[1]); err != nil {
				return err
			}
			if !o.lowerOpen && !o.upperOpen && o.lower > o.upper {
				return mongoerr.New(mongoerr.FailedToParse, "Lower bound must not exceed upper bound")
			}
			if !(o.lowerOpen && o.upperOpen) && !sorted {
				return mongoerr.New(mongoerr.FailedToParse, "Document-based bounds require a sortBy")
			}
		case "range", "unit":
			return mongoerr.New(mongoerr.NotImplemented, "$setWindowFields range windows are not supported by tierdb")
		default:
			return mongoerr.Newf(mongoerr.FailedToParse, "'window' field that is not 'documents', 'range' or 'unit': %s", e.Key)
		}
	}
	return nil
}

// windowBound reads one bound: "unbounded" (open), "current" (0) or an
// integer position relative to the current document.
func windowBound(v any) (int64, bool, error) {
	switch v {
	case "unbounded":
		return 0, true, nil
	case "current":
		return 0, false, nil
	}
	n, ok := query.AsInt(v)
	if f, isFloat := v.(float64); isFloat {
		ok = f == float64(int64(f))
		n = int64(f)
	}
	if !ok || !expr.IsNumber(v) {
		return 0, false, mongoerr.Newf(mongoerr.FailedToParse, "Numeric document-based bounds must be an integer: %s", expr.FormatValue(v))
	}
	return n, false, nil
}

func (o *windowOutput) parseShift(arg any, scope *expr.Scope) error {
	d, ok := arg.(bson.D)
	if !ok {
		return mongoerr.New(mongoerr.FailedToParse, "Argument to $shift must be an object")
	}
	hasOutput, hasBy := false, false
	for _, e := range d {
		switch e.Key {
		case "output":
			x, err := expr.Parse(e.Value, scope)
			if err != nil {
				return err
			}
			o.arg, hasOutput = x, true
		case "by":
			n, ok := query.AsInt(e.Value)
			if _, isFloat := e.Value.(float64); isFloat || !ok {
				return mongoerr.New(mongoerr.FailedToParse, "'$shift:by' field must be an integer")
			}
			o.shiftBy, hasBy = n, true
		case "default":
			x, err := expr.Parse(e.Value, scope)
			if err != nil {
				return err
			}
			v, err := x.Eval(expr.NewCtx(bson.D{}, nil, 0))
			if err != nil || expr.IsMissing(v) {
				return mongoerr.New(mongoerr.FailedToParse, "'$shift:default' expression must yield a constant value")
			}
			o.shiftDefault = v
		default:
			return mongoerr.Newf(mongoerr.FailedToParse, "Unknown argument in $shift: %s", e.Key)
		}
	}
	if !hasOutput || !hasBy {
		return mongoerr.New(mongoerr.FailedToParse, "$shift requires 'output' and 'by' fields")
	}
	return nil
}

func (w *windowStage) Push(doc bson.D) error {
	var part any
	if w.partition != nil {
		v, err := w.ev.eval(w.partition, doc)
		if err != nil {
			return err
		}
		if expr.IsMissing(v) {
			v = nil
		}
		part = v
	}
	if w.mem += DocMemory(doc) + valueMemory(part) + 32; w.mem > MaxMemoryBytes {
		return Exceeded("$setWindowFields")
	}
	w.rows = append(w.rows, windowRow{doc: doc, part: part})
	return nil
}

func (w *windowStage) Finish() error {
	rows := w.rows
	w.rows = nil
	sort.SliceStable(rows, func(i, j int) bool {
		if c := query.Compare(rows[i].part, rows[j].part); c != 0 {
			return c < 0
		}
		return w.sortBy.Compare(rows[i].doc, rows[j].doc) < 0
	})
	for start := 0; start < len(rows); {
		end := start + 1
		for end < len(rows) && query.Compare(rows[start].part, rows[end].part) == 0 {
			end++
		}
		if err := w.partitionDone(rows[start:end]); err != nil {
			if err == ErrDone {
				break
			}
			return err
		}
		start = end
	}
	return w.next.Finish()
}

// partitionDone computes the outputs of one sorted partition and passes
// its documents on.
func (w *windowStage) partitionDone(rows []windowRow) error {
	results := make([][]any, len(w.outputs))
	for k := range w.outputs {
		vals, err := w.compute(&w.outputs[k], rows)
		if err != nil {
			return err
		}
		results[k] = vals
	}
	for i, r := range rows {
		out := r.doc
		for k, o := range w.outputs {
			out = setPath(out, o.path, results[k][i])
		}
		rows[i] = windowRow{}
		if err := w.next.Push(out); err != nil {
			return err
		}
	}
	return nil
}

// compute gives one output's value for each row of a partition.
func (w *windowStage) compute(o *windowOutput, rows []windowRow) ([]any, error) {
	out := make([]any, len(rows))
	switch o.op {
	case "$documentNumber":
		for i := range rows {
			out[i] = countValue(int64(i + 1))
		}
		return out, nil
	case "$rank", "$denseRank":
		rank, dense := int64(0), int64(0)
		for i := range rows {
			if i == 0 || w.sortBy.Compare(rows[i-1].doc, rows[i].doc) != 0 {
				rank, dense = int64(i+1), dense+1
			}
			if o.op == "$rank" {
				out[i] = countValue(rank)
			} else {
				out[i] = countValue(dense)
			}
		}
		return out, nil
	}
	vals := make([]any, len(rows))
	for i, r := range rows {
		v, err := w.ev.eval(o.arg, r.doc)
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	switch o.op {
	case "$locf":
		return locf(vals), nil
	case "$linearFill":
		return w.linearFill(rows, vals)
	}
	if o.op == "$shift" {
		for i := range rows {
			j := int64(i) + o.shiftBy
			if j >= 0 && j < int64(len(rows)) && !expr.IsMissing(vals[j]) {
				out[i] = vals[j]
			} else if j >= 0 && j < int64(len(rows)) {
				out[i] = nil
			} else {
				out[i] = o.shiftDefault
			}
		}
		return out, nil
	}
	n := int64(len(rows))
	bounds := func(i int64) (lo, hi int64) {
		lo, hi = 0, n-1
		if !o.lowerOpen {
			lo = max(i+o.lower, 0)
		}
		if !o.upperOpen {
			hi = min(i+o.upper, n-1)
		}
		return lo, hi
	}
	newAcc := func() (accumulator, error) {
		if o.spec != nil {
			return o.spec.instance(w.ev, nil)
		}
		return accumulators[o.op](), nil
	}
	fold := func(lo, hi int64) (any, error) {
		acc, err := newAcc()
		if err != nil {
			return nil, err
		}
		for j := lo; j <= hi; j++ {
			if _, err := acc.add(vals[j]); err != nil {
				return nil, err
			}
		}
		return acc.value(), nil
	}
	switch {
	case o.lowerOpen && o.upperOpen:
		v, err := fold(0, n-1)
		if err != nil {
			return nil, err
		}
		for i := range out {
			out[i] = v
		}
	case o.lowerOpen && o.op != "$push" && o.op != "$addToSet":
		// A growing window: one accumulator, fed as the upper bound moves.
		acc, err := newAcc()
		if err != nil {
			return nil, err
		}
		next := int64(0)
		for i := range out {
			_, hi := bounds(int64(i))
			for ; next <= hi; next++ {
				if _, err := acc.add(vals[next]); err != nil {
					return nil, err
				}
			}
			out[i] = acc.value()
		}
	default:
		for i := range out {
			lo, hi := bounds(int64(i))
			v, err := fold(lo, hi)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
	}
	for i, v := range out {
		if expr.IsMissing(v) {
			out[i] = nil
		}
	}
	return out, nil
}
