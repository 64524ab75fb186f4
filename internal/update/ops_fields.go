package update

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

// setMod is $set and $setOnInsert.
type setMod struct{ value any }

func parseSet(_ string, arg any) (modifier, error) { return &setMod{value: arg}, nil }

func (m *setMod) apply(c *applyCtx, op *fieldOp) error {
	if old, ok := getPath(*c.root, op.parts); ok && identical(old, m.value) {
		return nil
	}
	// The value is copied because the same Update is applied to many
	// documents, which callers may go on to modify.
	return setPath(c.root, op.parts, deepCopy(m.value))
}

// unsetMod is $unset; its argument is ignored, as in MongoDB.
type unsetMod struct{}

func parseUnset(string, any) (modifier, error) { return unsetMod{}, nil }

func (unsetMod) apply(c *applyCtx, op *fieldOp) error {
	unsetPath(c.root, op.parts)
	return nil
}

// currentDateMod is $currentDate.
type currentDateMod struct{ timestamp bool }

func parseCurrentDate(_ string, arg any) (modifier, error) {
	switch x := arg.(type) {
	case bool:
		return currentDateMod{}, nil
	case bson.D:
		m, found := currentDateMod{}, false
		for _, e := range x {
			if e.Key != "$type" {
				return nil, mongoerr.Newf(mongoerr.BadValue, "Unrecognized $currentDate option: %s", e.Key)
			}
			switch e.Value {
			case "date":
				m.timestamp, found = false, true
			case "timestamp":
				m.timestamp, found = true, true
			}
		}
		if !found {
			return nil, mongoerr.New(mongoerr.BadValue,
				"The '$type' string field is required to be 'date' or 'timestamp': {$currentDate: {field : {$type: 'date'}}}")
		}
		return m, nil
	default:
		return nil, mongoerr.Newf(mongoerr.BadValue,
			"%s is not valid type for $currentDate. Please use a boolean ('true') or a $type expression ({$type: 'timestamp/date'}).",
			query.TypeName(arg))
	}
}

func (m currentDateMod) apply(c *applyCtx, op *fieldOp) error {
	var v any = bson.NewDateTimeFromTime(c.now)
	if m.timestamp {
		// The increment distinguishes timestamps within one second; a
		// single update has one instant, so 1 is as good as any.
		v = bson.Timestamp{T: uint32(c.now.Unix()), I: 1}
	}
	return setPath(c.root, op.parts, v)
}

// renameMod is $rename. Its fieldOp sits at the destination path.
type renameMod struct {
	fromPath string
	from     []string
}

func parseRename(from string, fromParts []string, arg any) (fieldOp, error) {
	to, ok := arg.(string)
	if !ok {
		return fieldOp{}, mongoerr.Newf(mongoerr.BadValue,
			"The 'to' field for $rename must be a string: %s: %s", from, formatValue(arg))
	}
	toParts, err := splitUpdatePath(to)
	if err != nil {
		return fieldOp{}, err
	}
	if hasPositional(toParts) {
		return fieldOp{}, mongoerr.Newf(mongoerr.BadValue, "The destination field for $rename may not be dynamic: %s", to)
	}
	if from == to {
		return fieldOp{}, mongoerr.Newf(mongoerr.BadValue,
			"The source and target field for $rename must differ: %s: %s", from, formatValue(arg))
	}
	if strings.HasPrefix(to, from+".") || strings.HasPrefix(from, to+".") {
		return fieldOp{}, mongoerr.Newf(mongoerr.BadValue,
			"The source and target field for $rename must not be on the same path: %s: %s", from, formatValue(arg))
	}
	return fieldOp{
		op:    "$rename",
		path:  to,
		parts: toParts,
		mod:   &renameMod{fromPath: from, from: fromParts},
	}, nil
}

func (m *renameMod) apply(c *applyCtx, op *fieldOp) error {
	// MongoDB does not rename into or out of arrays: positions would be
	// ambiguous once the source element is gone.
	if err := noArrayOnPath(*c.root, m.from, "source", c.orig); err != nil {
		return err
	}
	v, ok := getPath(*c.root, m.from)
	if !ok {
		return nil
	}
	if err := noArrayOnPath(*c.root, op.parts, "destination", c.orig); err != nil {
		return err
	}
	unsetPath(c.root, m.from)
	return setPath(c.root, op.parts, v)
}

// noArrayOnPath fails if any proper prefix of parts names an array.
func noArrayOnPath(root any, parts []string, role string, orig bson.D) error {
	v := root
	for i, p := range parts[:len(parts)-1] {
		d, ok := v.(bson.D)
		if !ok {
			return nil
		}
		j := fieldIndex(d, p)
		if j < 0 {
			return nil
		}
		v = d[j].Value
		if _, isArr := v.(bson.A); isArr {
			return mongoerr.Newf(mongoerr.BadValue,
				"The %s field cannot be an array element, '%s' in doc with %s has an array field called '%s'",
				role, strings.Join(parts, "."), idText(orig), strings.Join(parts[:i+1], "."))
		}
	}
	return nil
}
