package exec

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

// newFill is $fill, which MongoDB defines as a $setWindowFields with a
// $locf or $linearFill output for each field filled by a method,
// followed by an $addFields setting each field filled by a value to
// {$ifNull: ["$field", value]}. partitionByFields [f, ...] partitions by
// {f: "$f", ...}. Its memory is $setWindowFields'.
func newFill(arg any, next Stage, env *Env) (Stage, error) {
	d, ok := arg.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.FailedToParse, "The $fill stage specification must be an object, found %s", query.TypeName(arg))
	}
	var sortBy, output bson.D
	var partitionBy any
	hasSort, hasOutput, hasPartition, hasFields := false, false, false, false
	for _, e := range d {
		switch e.Key {
		case "sortBy":
			s, ok := e.Value.(bson.D)
			if !ok {
				return nil, fillType("sortBy", e.Value, "object")
			}
			sortBy, hasSort = s, true
		case "partitionBy":
			switch e.Value.(type) {
			case string, bson.D:
			default:
				return nil, fillType("partitionBy", e.Value, "[string, object]")
			}
			if hasFields {
				return nil, fillBothPartitions()
			}
			partitionBy, hasPartition = e.Value, true
		case "partitionByFields":
			a, ok := e.Value.(bson.A)
			if !ok {
				return nil, fillType("partitionByFields", e.Value, "array")
			}
			if hasPartition {
				return nil, fillBothPartitions()
			}
			fields := bson.D{}
			for i, f := range a {
				s, ok := f.(string)
				if !ok {
					return nil, mongoerr.Newf(mongoerr.TypeMismatch, "BSON field '$fill.partitionByFields.%d' is the wrong type '%s', expected type 'string'", i, query.TypeName(f))
				}
				if err := checkFieldPath(s); err != nil {
					return nil, err
				}
				fields = append(fields, bson.E{Key: s, Value: "$" + s})
			}
			partitionBy, hasFields = fields, true
		case "output":
			o, ok := e.Value.(bson.D)
			if !ok {
				return nil, fillType("output", e.Value, "object")
			}
			output, hasOutput = o, true
		default:
			return nil, mongoerr.Newf(mongoerr.UnknownField, "BSON field '$fill.%s' is an unknown field.", e.Key)
		}
	}
	if !hasOutput {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field '$fill.output' is missing but a required field")
	}
	if len(output) == 0 {
		return nil, mongoerr.New(mongoerr.Code(6050203), "The output field in '$fill' must contain an object with at least one element")
	}
	windows, values := bson.D{}, bson.D{}
	for _, e := range output {
		spec, ok := e.Value.(bson.D)
		if !ok {
			return nil, mongoerr.New(mongoerr.Code(6050200), "Each fill output specification must be an object with exactly one field")
		}
		var method any
		var value any
		hasMethod, hasValue := false, false
		for _, f := range spec {
			switch f.Key {
			case "method":
				method, hasMethod = f.Value, true
			case "value":
				value, hasValue = f.Value, true
			default:
				return nil, mongoerr.Newf(mongoerr.UnknownField, "BSON field '$fill.output.%s' is an unknown field.", f.Key)
			}
		}
		switch {
		case hasMethod && hasValue:
			return nil, mongoerr.New(mongoerr.Code(6050201), "Each fill output specification must have exactly one of 'method' or 'value' fields, not both")
		case hasMethod:
			m, ok := method.(string)
			if !ok {
				return nil, fillType("output.method", method, "string")
			}
			fn := map[string]string{"locf": "$locf", "linear": "$linearFill"}[m]
			if fn == "" {
				return nil, mongoerr.New(mongoerr.Code(6050202), "Method must be either locf or linear")
			}
			windows = append(windows, bson.E{Key: e.Key, Value: bson.D{{Key: fn, Value: "$" + e.Key}}})
		case hasValue:
			values = append(values, bson.E{Key: e.Key, Value: bson.D{{Key: "$ifNull", Value: bson.A{"$" + e.Key, value}}}})
		default:
			return nil, mongoerr.New(mongoerr.Code(6050200), "Each fill output specification must be an object with exactly one field")
		}
	}
	if len(values) > 0 {
		a, err := parseAddFields("$addFields", values, env)
		if err != nil {
			return nil, err
		}
		next = &mapStage{next: next, fn: func(doc bson.D) (bson.D, bool, error) {
			out, err := a.apply(doc)
			return out, true, err
		}}
	}
	if len(windows) == 0 {
		return next, nil
	}
	// Without sortBy, $locf follows the input's order and $linearFill
	// is refused (605001), as in MongoDB.
	spec := bson.D{{Key: "output", Value: windows}}
	if hasSort {
		spec = append(spec, bson.E{Key: "sortBy", Value: sortBy})
	}
	if partitionBy != nil {
		spec = append(spec, bson.E{Key: "partitionBy", Value: partitionBy})
	}
	return newSetWindowFields(spec, next, env)
}

func fillType(field string, v any, want string) error {
	return mongoerr.Newf(mongoerr.TypeMismatch, "BSON field '$fill.%s' is the wrong type '%s', expected type '%s'", field, query.TypeName(v), want)
}

func fillBothPartitions() error {
	return mongoerr.New(mongoerr.Code(6050204), "Maximum one of 'partitionBy' and 'partitionByFields can be specified in '$fill'")
}

// checkFieldPath refuses an empty path, an empty part or one starting
// with '$'.
func checkFieldPath(s string) error {
	for _, p := range strings.Split(s, ".") {
		if p == "" || strings.HasPrefix(p, "$") {
			return mongoerr.Newf(mongoerr.Location15998, "FieldPath field names may not be empty strings or start with '$': %s", s)
		}
	}
	return nil
}
