package update

import (
	"math"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// positionalAt finds the positional operator in a projection key the way
// MongoDB does: the first ".$." or a final ".$" (or the key "$" itself).
// at and end delimit it.
func positionalAt(key string) (at, end int, ok bool) {
	if i := strings.Index(key, ".$."); i >= 0 {
		return i, i + 3, true
	}
	if strings.HasSuffix(key, ".$") {
		return len(key) - 2, len(key), true
	}
	if key == "$" {
		return 0, 1, true
	}
	return 0, 0, false
}

func isInclusionType(v any) bool {
	switch v.(type) {
	case bool, int32, int64, float64, bson.Decimal128:
		return true
	}
	return false
}

func isInclusionValue(v any) bool { return isInclusionType(v) && truthy(v) }

// parsePositional checks a positional projection {"<path>.$": <true>} as
// MongoDB's projection parser does and records its path.
func (p *Projection) parsePositional(path, prefix string, e bson.E, at, end int, hasElemMatch bool) error {
	switch {
	case !isInclusionType(e.Value):
		if _, ok := e.Value.(bson.D); ok {
			return mongoerr.New(mongoerr.Code(31271), "positional projection cannot be used with an expression or sub object")
		}
		return mongoerr.New(mongoerr.Code(31308), "positional projection cannot be used with a literal")
	case p.positional != nil:
		return mongoerr.New(mongoerr.Code(31276), "Cannot specify more than one positional projection per query.")
	case hasElemMatch:
		return mongoerr.New(mongoerr.Code(31256), "Cannot specify positional operator and $elemMatch.")
	case p.filter == nil:
		return mongoerr.New(mongoerr.Code(51050), "Projections with a positional operator require a matcher")
	}
	matchField, _, _ := strings.Cut(path, ".")
	if !p.filter.ConstrainsField(matchField) {
		return mongoerr.Newf(mongoerr.Code(31277), "Positional projection '%s' does not match the query document.", e.Key)
	}
	if strings.HasSuffix(e.Key, ".$.") {
		return mongoerr.New(mongoerr.Code(31270), "Path cannot end with '.$.'")
	}
	rest := e.Key[end:]
	if _, _, twice := positionalAt(rest); twice || rest == "$" {
		return mongoerr.Newf(mongoerr.Code(31287), "Cannot use positional operator twice: %s", e.Key)
	}
	parts, err := splitProjectionPath(prefix+e.Key[:at], e.Key[:at])
	if err != nil {
		return err
	}
	p.positional = parts
	return nil
}

// applyPositional replaces, in out, the first array on the positional
// path with a one-element array: its element at the position the query
// matched in doc. Without an array on the path out is left as it is.
func (p *Projection) applyPositional(doc, out bson.D) (bson.D, error) {
	pos, matched := p.filter.MatchedPosition(doc)
	var cur any = out
	for i, part := range p.positional {
		d, ok := cur.(bson.D)
		if !ok {
			return out, nil
		}
		j := fieldIndex(d, part)
		if j < 0 {
			return out, nil
		}
		switch v := d[j].Value.(type) {
		case bson.A:
			if !matched {
				return nil, mongoerr.New(mongoerr.Code(51246),
					"Executor error during find command :: caused by :: positional operator '.$' couldn't find a matching element in the array")
			}
			idx, _ := strconv.Atoi(pos)
			if idx >= len(v) {
				return nil, mongoerr.New(mongoerr.Code(51247),
					"Executor error during find command :: caused by :: positional operator '.$' element mismatch")
			}
			root := any(out)
			if err := setPath(&root, p.positional[:i+1], bson.A{v[idx]}); err != nil {
				return nil, err
			}
			return root.(bson.D), nil
		case bson.D:
			cur = v
		default:
			return out, nil
		}
	}
	return out, nil
}

// sliceInt reads a $slice number as MongoDB's numberInt does: truncated,
// saturated to int32.
func sliceInt(v any) int64 {
	f := numberAsFloat(v)
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt32:
		return math.MaxInt32
	case f <= math.MinInt32:
		return math.MinInt32
	}
	if i, ok := v.(int64); ok {
		return i
	}
	return int64(f)
}
