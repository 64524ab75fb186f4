package exec

import (
	"sort"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/expr"
	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

// $densify adds documents where a sequence of numbers or dates has gaps:
// in each partition (the documents with the same partitionByFields
// values), every value of the grid bound + k*step within the range that
// no document has gets a new document holding only that value and the
// partition's fields. The range is the whole input's [min, max] ("full"),
// each partition's own [min, max] ("partition") or [lo, hi) given
// explicitly, where documents outside pass through. Documents whose
// field is null or missing pass through.
//
// As in MongoDB, it is a $sort (by the partition fields, then the field;
// by the field alone for "full") followed by a streaming operator: memory
// is the sort's (which spills when disk use is allowed) plus one entry per
// partition, and at most maxDensifyDocs documents are generated.

// maxDensifyDocs is MongoDB's internalQueryMaxAllowedDensifyDocs default.
var maxDensifyDocs = 500000

type densifyBounds int

const (
	boundsFull densifyBounds = iota
	boundsPartition
	boundsExplicit
)

type densifySpec struct {
	field      []string
	partitions [][]string
	step       any
	unit       string // "" for numbers
	bounds     densifyBounds
	lo, hi     any // boundsExplicit
}

func newDensify(arg any, next Stage, env *Env) (Stage, error) {
	d, ok := arg.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.FailedToParse, "The $densify stage specification must be an object, found %s", query.TypeName(arg))
	}
	spec, err := parseDensify(d)
	if err != nil {
		return nil, err
	}
	sortSpec := bson.D{}
	if spec.bounds != boundsFull {
		for _, p := range spec.partitions {
			sortSpec = append(sortSpec, bson.E{Key: strings.Join(p, "."), Value: int32(1)})
		}
	}
	sortSpec = append(sortSpec, bson.E{Key: strings.Join(spec.field, "."), Value: int32(1)})
	s, err := query.ParseSort(sortSpec)
	if err != nil {
		return nil, err
	}
	op := &densifyStage{next: next, spec: spec, parts: map[string]*densifyPartition{}}
	return &sortStage{next: op, sort: s, spill: env.AllowDiskUse, tempDir: env.TempDir}, nil
}

func parseDensify(d bson.D) (*densifySpec, error) {
	spec := &densifySpec{}
	var rng bson.D
	hasField, hasRange := false, false
	for _, e := range d {
		switch e.Key {
		case "field":
			s, ok := e.Value.(string)
			if !ok {
				return nil, densifyType("field", e.Value, "string")
			}
			parts, err := densifyPath(s)
			if err != nil {
				return nil, err
			}
			spec.field, hasField = parts, true
		case "partitionByFields":
			a, ok := e.Value.(bson.A)
			if !ok {
				return nil, densifyType("partitionByFields", e.Value, "array")
			}
			for i, f := range a {
				s, ok := f.(string)
				if !ok {
					return nil, densifyType("partitionByFields."+strconv.Itoa(i), f, "string")
				}
				parts, err := densifyPath(s)
				if err != nil {
					return nil, err
				}
				spec.partitions = append(spec.partitions, parts)
			}
		case "range":
			r, ok := e.Value.(bson.D)
			if !ok {
				return nil, densifyType("range", e.Value, "object")
			}
			rng, hasRange = r, true
		default:
			return nil, mongoerr.Newf(mongoerr.UnknownField, "BSON field '$densify.%s' is an unknown field.", e.Key)
		}
	}
	if !hasField {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field '$densify.field' is missing but a required field")
	}
	if !hasRange {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field '$densify.range' is missing but a required field")
	}
	field := strings.Join(spec.field, ".")
	for _, p := range spec.partitions {
		// MongoDB compares the paths as strings.
		pf := strings.Join(p, ".")
		if strings.HasPrefix(pf, field) {
			return nil, mongoerr.Newf(mongoerr.Code(8993000), "partitionByFields '%s' cannot include field '%s' that is being densified.", pf, field)
		}
		if strings.HasPrefix(field, pf) {
			return nil, mongoerr.Newf(mongoerr.Code(9554500), "field '%s' that is being densified cannot include partitionByFields '%s'.", field, pf)
		}
	}
	if err := spec.parseRange(rng); err != nil {
		return nil, err
	}
	if spec.bounds == boundsPartition && len(spec.partitions) == 0 {
		return nil, mongoerr.New(mongoerr.Code(5733408), "One cannot specify the bounds as 'partition' without specifying a non-empty array of partitionByFields. You may have meant to specify 'full' bounds.")
	}
	return spec, nil
}

func (spec *densifySpec) parseRange(rng bson.D) error {
	var bounds any
	hasStep, hasBounds := false, false
	for _, e := range rng {
		switch e.Key {
		case "step":
			spec.step, hasStep = e.Value, true
		case "unit":
			s, ok := e.Value.(string)
			if !ok {
				return densifyType("range.unit", e.Value, "string")
			}
			spec.unit = s
		case "bounds":
			bounds, hasBounds = e.Value, true
		default:
			return mongoerr.Newf(mongoerr.UnknownField, "BSON field '$densify.range.%s' is an unknown field.", e.Key)
		}
	}
	if !hasStep {
		return mongoerr.New(mongoerr.Location40414, "BSON field '$densify.range.step' is missing but a required field")
	}
	if !hasBounds {
		return mongoerr.New(mongoerr.Location40414, "BSON field '$densify.range.bounds' is missing but a required field")
	}
	if !expr.IsNumber(spec.step) || query.Compare(spec.step, int32(0)) <= 0 {
		return mongoerr.New(mongoerr.Code(5733401), "The step parameter in a range statement must be a strictly positive numeric value")
	}
	if spec.unit != "" {
		if !densifyUnits[spec.unit] {
			return mongoerr.Newf(mongoerr.FailedToParse, "unknown time unit value: %s", spec.unit)
		}
		if n, ok := wholeNumber(spec.step); !ok {
			return mongoerr.New(mongoerr.Code(6586400), "The step parameter in a range statement must be a whole number when densifying a date range")
		} else {
			spec.step = n
		}
	}
	switch b := bounds.(type) {
	case string:
		switch b {
		case "full":
			spec.bounds = boundsFull
		case "partition":
			spec.bounds = boundsPartition
		default:
			return mongoerr.New(mongoerr.Code(5946802), "Bounds string must either be 'full' or 'partition'")
		}
	case bson.A:
		if len(b) != 2 {
			return mongoerr.New(mongoerr.Code(5733403), "A bounding array in a range statement must have exactly two elements")
		}
		if query.Compare(b[0], b[1]) > 0 {
			return mongoerr.New(mongoerr.Code(5733402), "A bounding array must be an ascending array of either two dates or two numbers")
		}
		_, loDate := b[0].(bson.DateTime)
		_, hiDate := b[1].(bson.DateTime)
		switch {
		case expr.IsNumber(b[0]):
			if spec.unit != "" {
				return mongoerr.New(mongoerr.Code(5733409), "Numeric bounds may not have unit parameter")
			}
			if !expr.IsNumber(b[1]) {
				return mongoerr.New(mongoerr.Code(5733406), "A bounding array must contain either both dates or both numeric types")
			}
			if query.TypeName(b[0]) != query.TypeName(b[1]) || query.TypeName(b[0]) != query.TypeName(spec.step) {
				return mongoerr.New(mongoerr.Code(5876900), "Upper bound, lower bound, and step must all have the same type")
			}
		case loDate:
			if !hiDate {
				return mongoerr.New(mongoerr.Code(5733405), "A bounding array must contain either both dates or both numeric types")
			}
			if spec.unit == "" {
				return mongoerr.New(mongoerr.Code(5733410), "A bounding array of dates must specify a unit")
			}
		default:
			return mongoerr.New(mongoerr.Code(5946800), "Explicit bounds must be numeric or dates")
		}
		spec.bounds, spec.lo, spec.hi = boundsExplicit, b[0], b[1]
	default:
		return mongoerr.New(mongoerr.Code(5733404), "The bounds in a range statement must be the string 'full', 'partition', or an ascending array of two numbers or two dates")
	}
	return nil
}

var densifyUnits = map[string]bool{
	"millisecond": true, "second": true, "minute": true, "hour": true, "day": true,
	"week": true, "month": true, "quarter": true, "year": true,
}

// wholeNumber is v as an int64 when it is a number with no fraction.
func wholeNumber(v any) (int64, bool) {
	switch x := v.(type) {
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case float64:
		if x == float64(int64(x)) {
			return int64(x), true
		}
	case bson.Decimal128:
		if n, ok := query.AsInt(x); ok {
			return n, true
		}
	}
	return 0, false
}

func densifyPath(s string) ([]string, error) {
	if strings.HasPrefix(s, "$") {
		return nil, mongoerr.Newf(mongoerr.Location16410, "FieldPath field names may not start with '$'. Consider using $getField or $setField.")
	}
	if err := checkFieldPath(s); err != nil {
		return nil, err
	}
	return strings.Split(s, "."), nil
}

func densifyType(field string, v any, want string) error {
	return mongoerr.Newf(mongoerr.TypeMismatch, "BSON field '$densify.%s' is the wrong type '%s', expected type '%s'", field, query.TypeName(v), want)
}

// densifyStage is the streaming half of $densify, over input sorted by
// the partition fields (except for "full") and then the field.
type densifyStage struct {
	next  Stage
	spec  *densifySpec
	parts map[string]*densifyPartition
	order []string // partition keys in the order first seen
	mem   int
	// cur is the key of the partition being read (not for "full").
	cur string
	// min and max are the smallest and largest value seen ("full").
	min, max  any
	generated int
	done      bool
}

// densifyPartition is one partition's state: its fields (what generated
// documents carry) and the next grid value not yet covered.
type densifyPartition struct {
	fields bson.D
	next   any
}

func (s *densifyStage) Push(doc bson.D) error {
	if s.done {
		return ErrDone
	}
	v, _ := nestedField(doc, s.spec.field)
	if nullish(v) {
		return s.emit(doc)
	}
	if err := s.checkValue(v); err != nil {
		return err
	}
	fields := bson.D{}
	for _, p := range s.spec.partitions {
		if pv, ok := nestedField(doc, p); ok && !expr.IsMissing(pv) {
			fields = setPath(fields, p, pv)
		}
	}
	key := string(query.AppendKey(nil, fields))
	if s.spec.bounds == boundsFull {
		if s.min == nil {
			s.min = v
		}
		s.max = v
	} else if key != s.cur {
		// Sorted by partition: the previous one is complete.
		if p := s.parts[s.cur]; p != nil {
			if err := s.finishPartition(p); err != nil {
				return err
			}
			delete(s.parts, s.cur)
		}
		s.cur = key
	}
	p := s.parts[key]
	if p == nil {
		p = &densifyPartition{fields: fields}
		switch s.spec.bounds {
		case boundsFull:
			p.next = s.min
		case boundsPartition:
			p.next = v
		case boundsExplicit:
			p.next = s.spec.lo
		}
		if s.mem += DocMemory(fields) + 64 + len(key); s.mem > MaxMemoryBytes {
			return Exceeded("$densify")
		}
		s.parts[key] = p
		s.order = append(s.order, key)
	}
	// Generate the grid values below v (and below hi), then let v cover
	// its own.
	upper := v
	if s.spec.bounds == boundsExplicit && query.Compare(s.spec.hi, v) < 0 {
		upper = s.spec.hi
	}
	if err := s.generate(p, upper, false); err != nil {
		return err
	}
	if query.Compare(p.next, v) == 0 {
		n, err := s.increment(p.next)
		if err != nil {
			return err
		}
		p.next = n
	}
	return s.emit(doc)
}

// generate emits the partition's grid values below upper (up to it
// when inclusive).
func (s *densifyStage) generate(p *densifyPartition, upper any, inclusive bool) error {
	for {
		c := query.Compare(p.next, upper)
		if c > 0 || (c == 0 && !inclusive) {
			return nil
		}
		if s.generated++; s.generated > maxDensifyDocs {
			return mongoerr.Newf(mongoerr.Code(5897900), "Generated %d documents in $densify, which is over the limit of %d. Increase the 'internalQueryMaxAllowedDensifyDocs' parameter to allow more generated documents", s.generated, maxDensifyDocs)
		}
		if err := s.emit(setPath(p.fields, s.spec.field, p.next)); err != nil {
			return err
		}
		n, err := s.increment(p.next)
		if err != nil {
			return err
		}
		p.next = n
	}
}

// finishPartition generates what the range holds past a partition's
// last document: up to hi for explicit bounds; nothing for "partition".
func (s *densifyStage) finishPartition(p *densifyPartition) error {
	if s.spec.bounds == boundsExplicit {
		return s.generate(p, s.spec.hi, false)
	}
	return nil
}

func (s *densifyStage) emit(doc bson.D) error {
	err := s.next.Push(doc)
	if err == ErrDone {
		s.done = true
	}
	return err
}

func (s *densifyStage) Finish() error {
	if !s.done {
		if err := s.finishAll(); err != nil && err != ErrDone {
			return err
		}
	}
	return s.next.Finish()
}

func (s *densifyStage) finishAll() error {
	switch s.spec.bounds {
	case boundsFull:
		// Every partition runs to the largest value of all.
		keys := append([]string(nil), s.order...)
		sort.Strings(keys)
		for _, k := range keys {
			if err := s.generate(s.parts[k], s.max, true); err != nil {
				return err
			}
		}
	case boundsExplicit:
		if len(s.order) == 0 {
			// No document at all: the range alone, without partition
			// fields, as MongoDB does.
			p := &densifyPartition{fields: bson.D{}, next: s.spec.lo}
			return s.generate(p, s.spec.hi, false)
		}
		if p := s.parts[s.cur]; p != nil {
			return s.finishPartition(p)
		}
	}
	return nil
}

// checkValue refuses a value that is neither a number nor a date, or
// whose kind does not match the unit.
func (s *densifyStage) checkValue(v any) error {
	_, isDate := v.(bson.DateTime)
	switch {
	case !expr.IsNumber(v) && !isDate:
		return mongoerr.New(mongoerr.Code(5733201), "Densify field type must be numeric or a date")
	case s.spec.unit != "" && !isDate:
		return mongoerr.New(mongoerr.Code(6053600), "Encountered numeric densify value in collection when step has a date unit.")
	case s.spec.unit == "" && isDate:
		return mongoerr.New(mongoerr.Code(6053600), "Encountered date densify value in collection when step does not have a date unit.")
	}
	return nil
}

func (s *densifyStage) increment(v any) (any, error) {
	if d, ok := v.(bson.DateTime); ok {
		return dateAdd(d, s.spec.unit, s.spec.step.(int64)), nil
	}
	return expr.Add(v, s.spec.step)
}
