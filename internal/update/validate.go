package update

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

// ValidateForStorage checks a document about to be stored (inserted,
// replaced, or produced by an update) against MongoDB 5.0+ rules: no
// $-prefixed top-level field names, no NUL bytes in any field name, an _id
// of a storable type, and an encoded size within 16 MiB. Unlike MongoDB,
// which since 5.0 tolerates $-prefixed names at the top level of some
// writes, it refuses them everywhere at the top level.
func ValidateForStorage(doc bson.D) error {
	ids := 0
	for _, e := range doc {
		if strings.HasPrefix(e.Key, "$") {
			return mongoerr.Newf(mongoerr.DollarPrefixedFieldName,
				"Document can't have $ prefixed field names: %s", e.Key)
		}
		if e.Key == "_id" {
			if ids++; ids > 1 {
				// Which _id would the index hold, which would a query see?
				return mongoerr.New(mongoerr.BadValue, "can't have multiple _id fields in one document")
			}
			if err := validateID(e.Value); err != nil {
				return err
			}
		}
	}
	if err := checkFieldNames(doc); err != nil {
		return err
	}
	size, ok := encodedDocSize(doc)
	if !ok {
		raw, err := bson.Marshal(doc)
		if err != nil {
			return &mongoerr.Error{Code: mongoerr.BadValue, Msg: "document cannot be encoded as BSON", Cause: err}
		}
		size = len(raw)
	}
	if size > maxBSONSize {
		return mongoerr.Newf(mongoerr.BSONObjectTooLarge,
			"object to insert too large. size in bytes: %d, max size: %d", size, maxBSONSize)
	}
	return nil
}

func validateID(v any) error {
	switch v.(type) {
	case bson.A, bson.Regex, bson.Undefined:
		return mongoerr.Newf(mongoerr.InvalidIDField, "The '_id' value cannot be of type %s", query.TypeName(v))
	case bson.D:
		// An _id document is compared and indexed as a whole; operator-like
		// names inside it would be ambiguous in queries.
		if name, ok := dollarName(v); ok {
			return mongoerr.Newf(mongoerr.DollarPrefixedFieldName,
				"_id fields may not contain '$'-prefixed fields: %s is not valid for storage.", name)
		}
	}
	return nil
}

// dollarName finds a $-prefixed field name anywhere inside v.
func dollarName(v any) (string, bool) {
	switch x := v.(type) {
	case bson.D:
		for _, e := range x {
			if strings.HasPrefix(e.Key, "$") {
				return e.Key, true
			}
			if n, ok := dollarName(e.Value); ok {
				return n, true
			}
		}
	case bson.A:
		for _, e := range x {
			if n, ok := dollarName(e); ok {
				return n, true
			}
		}
	}
	return "", false
}

// checkFieldNames refuses NUL bytes in field names at any depth: BSON
// stores names as C strings, so such a name could not round-trip.
func checkFieldNames(v any) error {
	switch x := v.(type) {
	case bson.D:
		for _, e := range x {
			if strings.IndexByte(e.Key, 0) >= 0 {
				return mongoerr.Newf(mongoerr.BadValue, "field names cannot contain NUL bytes: %q", e.Key)
			}
			if err := checkFieldNames(e.Value); err != nil {
				return err
			}
		}
	case bson.A:
		for _, e := range x {
			if err := checkFieldNames(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// encodedDocSize computes the BSON size of d without encoding it. ok is
// false when d holds a value of a type not listed here; the caller then
// encodes to measure.
func encodedDocSize(d bson.D) (int, bool) {
	n := 4 + 1 // length prefix and terminator
	for _, e := range d {
		s, ok := encodedValueSize(e.Value)
		if !ok {
			return 0, false
		}
		n += 1 + len(e.Key) + 1 + s
	}
	return n, true
}

func encodedValueSize(v any) (int, bool) {
	switch x := v.(type) {
	case nil, bson.Undefined, bson.MinKey, bson.MaxKey:
		return 0, true
	case bool:
		return 1, true
	case int32:
		return 4, true
	case int64, float64, bson.DateTime, bson.Timestamp:
		return 8, true
	case bson.Decimal128:
		return 16, true
	case bson.ObjectID:
		return 12, true
	case string:
		return 4 + len(x) + 1, true
	case bson.Symbol:
		return 4 + len(x) + 1, true
	case bson.JavaScript:
		return 4 + len(x) + 1, true
	case bson.Regex:
		return len(x.Pattern) + 1 + len(x.Options) + 1, true
	case bson.DBPointer:
		return 4 + len(x.DB) + 1 + 12, true
	case bson.Binary:
		if x.Subtype == 0x02 {
			// The old binary subtype repeats the length inside the data.
			return 4 + 1 + 4 + len(x.Data), true
		}
		return 4 + 1 + len(x.Data), true
	case bson.D:
		return encodedDocSize(x)
	case bson.A:
		n := 4 + 1
		for i, e := range x {
			s, ok := encodedValueSize(e)
			if !ok {
				return 0, false
			}
			n += 1 + decimalLen(i) + 1 + s
		}
		return n, true
	case bson.CodeWithScope:
		scope, ok := x.Scope.(bson.D)
		if !ok {
			return 0, false
		}
		s, ok := encodedDocSize(scope)
		return 4 + 4 + len(x.Code) + 1 + s, ok
	}
	return 0, false
}

// decimalLen is the number of digits of a non-negative int: the length of
// an array index used as a BSON key.
func decimalLen(i int) int {
	n := 1
	for ; i >= 10; i /= 10 {
		n++
	}
	return n
}

// EnsureID returns doc with _id as its first field, generating an ObjectID
// when doc has no _id, together with the _id value. doc itself is never
// modified; when _id is already first it is returned as is.
func EnsureID(doc bson.D) (bson.D, any) {
	i := fieldIndex(doc, "_id")
	switch {
	case i == 0:
		return doc, doc[0].Value
	case i > 0:
		out := make(bson.D, 0, len(doc))
		out = append(out, doc[i])
		out = append(out, doc[:i]...)
		out = append(out, doc[i+1:]...)
		return out, doc[i].Value
	}
	id := bson.NewObjectID()
	out := make(bson.D, 0, len(doc)+1)
	out = append(out, bson.E{Key: "_id", Value: id})
	return append(out, doc...), id
}
