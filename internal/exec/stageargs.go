package exec

import (
	"math"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

// Argument checks of $skip, $limit, $count and $sort with MongoDB's codes.

// stageCount reads the argument of $skip or $limit: a number with a whole,
// non-negative value (a $limit also above 0).
func stageCount(name string, arg any) (int64, error) {
	if d, ok := arg.(bson.Decimal128); ok {
		f, err := strconv.ParseFloat(d.String(), 64)
		if err != nil {
			f = math.NaN()
		}
		arg = f
	}
	if n, ok := arg.(int); ok {
		arg = int64(n)
	}
	switch arg.(type) {
	case int32, int64, float64:
	default:
		if name == "$skip" {
			return 0, mongoerr.Newf(mongoerr.Location15972, "Argument to $skip must be a number not a %s", query.TypeName(arg))
		}
		return 0, mongoerr.New(mongoerr.Location15957, "the limit must be specified as a number")
	}
	n, ok := query.AsInt(arg)
	if !ok || n < 0 {
		code := mongoerr.Location5107200
		if name == "$limit" {
			code = mongoerr.Location5107201
		}
		return 0, mongoerr.Newf(code, "invalid argument to %s stage: Expected a non-negative whole number: %v", name, arg)
	}
	if name == "$limit" && n == 0 {
		return 0, mongoerr.New(mongoerr.Location15958, "the limit must be positive")
	}
	return n, nil
}

// countField reads $count's argument: the name of the field to output.
func countField(arg any) (string, error) {
	field, ok := arg.(string)
	switch {
	case !ok:
		return "", mongoerr.New(mongoerr.Location40156, "the count field must be a non-empty string")
	case field == "":
		return "", mongoerr.New(mongoerr.Location40157, "the count field must be a non-empty string")
	case strings.HasPrefix(field, "$"):
		return "", mongoerr.New(mongoerr.Location40158, "the count field cannot be a $-prefixed path")
	case strings.Contains(field, "."):
		return "", mongoerr.New(mongoerr.Location40160, "the count field cannot contain '.'")
	}
	return field, nil
}

// checkSortStage applies the checks MongoDB makes on a $sort stage's
// document before its keys are read: at least one key, each 1, -1 or a
// {$meta: ...} document.
func checkSortStage(arg any) error {
	d, ok := arg.(bson.D)
	if !ok {
		return mongoerr.New(mongoerr.Location15973, "the $sort key specification must be an object")
	}
	if len(d) == 0 {
		return mongoerr.New(mongoerr.Location15976, "$sort stage must have at least one sort key")
	}
	for _, e := range d {
		if d, isDoc := e.Value.(bson.D); isDoc {
			if len(d) == 1 && d[0].Key == "$meta" {
				continue // newSortStage checks the keyword
			}
			return mongoerr.Newf(mongoerr.Location15974, "Illegal key in $sort specification: %s", e.Key)
		}
		f, isNum := numberValue(e.Value)
		if !isNum {
			return mongoerr.Newf(mongoerr.Location15974, "Illegal key in $sort specification: %s: %v", e.Key, e.Value)
		}
		if f != 1 && f != -1 {
			return mongoerr.New(mongoerr.Location15975, "$sort key ordering must be 1 (for ascending) or -1 (for descending)")
		}
	}
	return nil
}

func numberValue(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	case float64:
		return n, true
	case bson.Decimal128:
		f, err := strconv.ParseFloat(n.String(), 64)
		return f, err == nil
	}
	return 0, false
}
