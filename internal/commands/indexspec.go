package commands

import (
	"math"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
	"tierdb/internal/storage"
)

// maxTTLSeconds is the largest expireAfterSeconds MongoDB accepts.
const maxTTLSeconds = math.MaxInt32

// parseIndexSpec validates one createIndexes specification {key, name,
// unique, sparse, partialFilterExpression, expireAfterSeconds, hidden, ...}
// with MongoDB's codes: a missing key or name is FailedToParse, a bad key
// or option value CannotCreateIndex, an unknown option
// InvalidIndexSpecificationOption, an index kind or option tierdb does not
// implement NotImplemented.
func parseIndexSpec(doc bson.D) (storage.Index, error) {
	var ix storage.Index
	specErr := func(code mongoerr.Code, format string, args ...any) error {
		return mongoerr.Newf(code, "Error in specification %s :: caused by :: "+format, append([]any{renderSpec(doc)}, args...)...)
	}
	keyV, ok := lookup(doc, "key")
	if !ok {
		return ix, specErr(mongoerr.FailedToParse, "The 'key' field is a required property of an index specification")
	}
	key, ok := keyV.(bson.D)
	if !ok {
		return ix, specErr(mongoerr.TypeMismatch, "The field 'key' must be an object, but got %s", query.TypeName(keyV))
	}
	keys, err := parseIndexKey(key)
	if err != nil {
		return ix, err
	}
	ix.Keys = keys
	nameV, ok := lookup(doc, "name")
	if !ok {
		return ix, specErr(mongoerr.FailedToParse, "The 'name' field is a required property of an index specification")
	}
	if ix.Name, ok = nameV.(string); !ok {
		return ix, specErr(mongoerr.TypeMismatch, "The field 'name' must be a string, but got %s", query.TypeName(nameV))
	}
	switch ix.Name {
	case "":
		return ix, mongoerr.New(mongoerr.CannotCreateIndex, "index name cannot be empty")
	case "*":
		return ix, mongoerr.New(mongoerr.BadValue, "The index name '*' is not valid.")
	}
	isID := len(ix.Keys) == 1 && ix.Keys[0].Field == "_id" && !ix.Keys[0].Hashed
	hashed := 0
	for _, k := range ix.Keys {
		if k.Hashed {
			hashed++
		}
	}
	for _, e := range doc {
		switch e.Key {
		case "key", "name":
		case "v":
			v, ok := query.AsInt(e.Value)
			if !ok || v < 1 || v > 2 {
				return ix, specErr(mongoerr.CannotCreateIndex, "Invalid index specification; the index version must be 1 or 2")
			}
		case "background", "ns":
			// background is a no-op since MongoDB 4.2; ns is the legacy
			// namespace field, which names this collection.
		case "unique":
			if ix.Unique, err = getBool(doc, e.Key, false); err != nil {
				return ix, err
			}
		case "sparse":
			if ix.Sparse, err = getBool(doc, e.Key, false); err != nil {
				return ix, err
			}
		case "hidden":
			if ix.Hidden, err = getBool(doc, e.Key, false); err != nil {
				return ix, err
			}
		case "partialFilterExpression":
			f, ok := e.Value.(bson.D)
			if !ok {
				return ix, specErr(mongoerr.TypeMismatch, "The field 'partialFilterExpression' must be an object, but got %s", query.TypeName(e.Value))
			}
			if err := query.CheckPartialFilter(f); err != nil {
				return ix, err
			}
			if ix.Partial, err = bsonx.Marshal(f); err != nil {
				return ix, err
			}
		case "expireAfterSeconds":
			n, ok := ttlSeconds(e.Value)
			if !ok {
				return ix, specErr(mongoerr.CannotCreateIndex, "TTL index 'expireAfterSeconds' option must be numeric and within [0, %d], but received %v", maxTTLSeconds, e.Value)
			}
			ix.ExpireAfterSeconds = &n
		case "collation":
			if err := checkCollation(bson.D{e}); err != nil {
				return ix, err
			}
		case "weights", "default_language", "language_override", "textIndexVersion":
			if !isTextKey(ix.Keys) {
				return ix, specErr(mongoerr.CannotCreateIndex, "the option '%s' is only valid for text indexes", e.Key)
			}
		case "2dsphereIndexVersion", "bits", "min", "max", "bucketSize", "wildcardProjection", "clustered", "prepareUnique", "storageEngine":
			return ix, mongoerr.Newf(mongoerr.NotImplemented, "index option '%s' is not supported by tierdb", e.Key)
		default:
			return ix, mongoerr.Newf(mongoerr.InvalidIndexSpecificationOpt, "The field '%s' is not valid for an index specification. Specification: %s", e.Key, renderSpec(doc))
		}
	}
	if isTextKey(ix.Keys) {
		if ix.Text, err = parseTextOptions(doc, ix.Keys); err != nil {
			return ix, err
		}
		// Text indexes are always sparse: a document without indexed
		// strings is not in them.
		ix.Sparse = false
		if ix.Unique || ix.ExpireAfterSeconds != nil {
			return ix, specErr(mongoerr.CannotCreateIndex, "text indexes cannot be unique or TTL indexes in tierdb")
		}
	}
	switch {
	case ix.Sparse && ix.Partial != nil:
		return ix, specErr(mongoerr.CannotCreateIndex, "cannot mix \"partialFilterExpression\" and \"sparse\" options")
	case hashed > 0 && ix.Unique:
		return ix, specErr(mongoerr.CannotCreateIndex, "Currently hashed indexes cannot guarantee uniqueness. Use a regular index.")
	case ix.ExpireAfterSeconds != nil && len(ix.Keys) != 1:
		return ix, specErr(mongoerr.CannotCreateIndex, "TTL indexes are single-field indexes, compound indexes do not support TTL")
	case ix.ExpireAfterSeconds != nil && hashed > 0:
		return ix, specErr(mongoerr.CannotCreateIndex, "TTL indexes cannot be hashed")
	}
	if ix.Name == "_id_" && !isID {
		return ix, mongoerr.New(mongoerr.BadValue, "The index name '_id_' is reserved for the _id index")
	}
	if isID {
		switch {
		case ix.Sparse, ix.Partial != nil, ix.ExpireAfterSeconds != nil:
			return ix, mongoerr.Newf(mongoerr.InvalidIndexSpecificationOpt, "The field 'sparse', 'partialFilterExpression' or 'expireAfterSeconds' is not valid for an _id index specification. Specification: %s", renderSpec(doc))
		case ix.Hidden:
			return ix, mongoerr.New(mongoerr.BadValue, "can't hide _id index")
		}
		if ix.Keys[0].Desc {
			// MongoDB builds {_id: -1} as an index of its own, which the
			// _id index (both directions) makes redundant here.
			return ix, mongoerr.New(mongoerr.NotImplemented, "an index on {_id: -1} is not supported by tierdb: the _id index serves both directions")
		}
		ix.Unique = true // the _id index exists already and is unique
		ix.Name = "_id_"
	}
	return ix, nil
}

// parseIndexKey validates a key pattern: fields with a non-zero number
// (ascending, descending) or "hashed" (at most one field).
func parseIndexKey(key bson.D) ([]storage.IndexKey, error) {
	if len(key) == 0 {
		return nil, mongoerr.New(mongoerr.CannotCreateIndex, "Index keys cannot be empty.")
	}
	if len(key) > 32 {
		return nil, mongoerr.New(mongoerr.CannotCreateIndex, "Index key pattern has more than 32 fields")
	}
	var keys []storage.IndexKey
	if len(key) == 2 && key[0].Key == "_fts" && key[0].Value == "text" && key[1].Key == "_ftsx" {
		// How listIndexes shows a text index: names it (dropIndexes, collMod).
		return []storage.IndexKey{{Field: "_fts", Text: true}}, nil
	}
	hashed, text := 0, 0
	for _, k := range key {
		if k.Key == "$**" && k.Value == "text" {
			keys = append(keys, storage.IndexKey{Field: k.Key, Text: true})
			text++
			continue
		}
		if k.Key == "$**" || strings.HasSuffix(k.Key, ".$**") {
			return nil, mongoerr.New(mongoerr.NotImplemented, "wildcard indexes are not supported by tierdb")
		}
		if k.Key == "" || strings.HasPrefix(k.Key, "$") || strings.Contains(k.Key, "..") || strings.HasPrefix(k.Key, ".") || strings.HasSuffix(k.Key, ".") {
			return nil, mongoerr.Newf(mongoerr.CannotCreateIndex, "Index key contains an illegal field name: '%s'", k.Key)
		}
		ik := storage.IndexKey{Field: k.Key}
		switch v := k.Value.(type) {
		case string:
			switch v {
			case "hashed":
				ik.Hashed = true
				hashed++
			case "text":
				ik.Text = true
				text++
			case "2d", "2dsphere", "geoHaystack":
				return nil, mongoerr.Newf(mongoerr.NotImplemented, "%s indexes are not supported by tierdb", v)
			default:
				return nil, mongoerr.Newf(mongoerr.CannotCreateIndex, "Unknown index plugin '%s'", v)
			}
		default:
			n, ok := asNumber(v)
			if !ok {
				return nil, mongoerr.Newf(mongoerr.CannotCreateIndex, "Values in v:2 index key pattern cannot be of type %s. Only numbers > 0, numbers < 0, and strings are allowed.", query.TypeName(v))
			}
			if n == 0 || math.IsNaN(n) {
				return nil, mongoerr.Newf(mongoerr.CannotCreateIndex, "Values in the index key pattern can only be non-zero numbers or strings, got %v for '%s'", v, k.Key)
			}
			ik.Desc = n < 0
		}
		for _, prev := range keys {
			if prev.Field == k.Key {
				return nil, mongoerr.Newf(mongoerr.CannotCreateIndex, "duplicate field in index key pattern: %s", k.Key)
			}
		}
		keys = append(keys, ik)
	}
	if hashed > 1 {
		return nil, mongoerr.New(mongoerr.Code(31303), "A maximum of one index field is allowed to be hashed")
	}
	if text > 0 && (text != len(keys) || hashed > 0) {
		return nil, mongoerr.New(mongoerr.NotImplemented, "compound text indexes with non-text fields are not supported by tierdb")
	}
	return keys, nil
}

func isTextKey(keys []storage.IndexKey) bool {
	return len(keys) > 0 && keys[0].Text
}

// parseTextOptions reads a text index's weights, default_language,
// language_override and textIndexVersion.
func parseTextOptions(doc bson.D, keys []storage.IndexKey) (*storage.TextIndex, error) {
	t := &storage.TextIndex{DefaultLanguage: "english", LanguageOverride: "language"}
	weights := map[string]int32{}
	var order []string
	for _, k := range keys {
		weights[k.Field] = 1
		order = append(order, k.Field)
	}
	for _, e := range doc {
		switch e.Key {
		case "weights":
			w, ok := e.Value.(bson.D)
			if !ok {
				return nil, mongoerr.New(mongoerr.CannotCreateIndex, "text index option 'weights' must be an object")
			}
			for _, f := range w {
				n, ok := asNumber(f.Value)
				if !ok || n <= 0 || n >= 100000 || n != math.Trunc(n) {
					return nil, mongoerr.Newf(mongoerr.CannotCreateIndex, "text index weight must be in the exclusive interval (0,100000) but found: %v", f.Value)
				}
				if _, seen := weights[f.Key]; !seen {
					order = append(order, f.Key)
				}
				weights[f.Key] = int32(n)
			}
		case "default_language", "language_override":
			s, ok := e.Value.(string)
			if !ok || s == "" {
				return nil, mongoerr.Newf(mongoerr.CannotCreateIndex, "text index option '%s' must be a non-empty string", e.Key)
			}
			if e.Key == "language_override" {
				t.LanguageOverride = s
				continue
			}
			if _, ok := storage.TextConfig(s); !ok {
				return nil, mongoerr.Newf(mongoerr.CannotCreateIndex, "default_language: unsupported language: \"%s\" for text index version 3", s)
			}
			t.DefaultLanguage = s
		case "textIndexVersion":
			if v, ok := query.AsInt(e.Value); !ok || v != 3 {
				return nil, mongoerr.New(mongoerr.NotImplemented, "tierdb implements text index version 3 only")
			}
		}
	}
	distinct := map[int32]bool{}
	for _, f := range order {
		t.Weights = append(t.Weights, storage.TextWeight{Field: f, Weight: weights[f]})
		distinct[weights[f]] = true
	}
	if len(distinct) > 4 {
		return nil, mongoerr.New(mongoerr.NotImplemented, "tierdb text indexes support at most 4 distinct weights (PostgreSQL's weight classes)")
	}
	return t, nil
}

// ttlSeconds reads expireAfterSeconds: a number within [0, 2^31-1]
// (fractions are truncated, as MongoDB does).
func ttlSeconds(v any) (int64, bool) {
	n, ok := asNumber(v)
	if !ok || math.IsNaN(n) || n < 0 || n > maxTTLSeconds {
		return 0, false
	}
	return int64(n), true
}

// keyPattern renders an index's key pattern as listIndexes shows it.
func keyPattern(ix *storage.Index) bson.D {
	if ix.Text != nil {
		return bson.D{{Key: "_fts", Value: "text"}, {Key: "_ftsx", Value: int32(1)}}
	}
	key := bson.D{}
	for _, k := range ix.Keys {
		var dir any = int32(1)
		switch {
		case k.Hashed:
			dir = "hashed"
		case k.Desc:
			dir = int32(-1)
		}
		key = append(key, bson.E{Key: k.Field, Value: dir})
	}
	return key
}

// indexInfo is an index as listIndexes describes it: every option it was
// created with.
func indexInfo(ix *storage.Index) bson.D {
	spec := bson.D{{Key: "v", Value: int32(2)}, {Key: "key", Value: keyPattern(ix)}, {Key: "name", Value: ix.Name}}
	if ix.Unique && ix.Name != "_id_" {
		spec = append(spec, bson.E{Key: "unique", Value: true})
	}
	if ix.Sparse {
		spec = append(spec, bson.E{Key: "sparse", Value: true})
	}
	if len(ix.Partial) > 0 {
		if d, err := bsonx.Decode(ix.Partial); err == nil {
			spec = append(spec, bson.E{Key: "partialFilterExpression", Value: d})
		}
	}
	if ix.ExpireAfterSeconds != nil {
		spec = append(spec, bson.E{Key: "expireAfterSeconds", Value: int32(*ix.ExpireAfterSeconds)})
	}
	if ix.Hidden {
		spec = append(spec, bson.E{Key: "hidden", Value: true})
	}
	if t := ix.Text; t != nil {
		weights := bson.D{}
		for _, w := range t.Weights {
			weights = append(weights, bson.E{Key: w.Field, Value: w.Weight})
		}
		spec = append(spec, bson.E{Key: "weights", Value: weights}, bson.E{Key: "default_language", Value: t.DefaultLanguage},
			bson.E{Key: "language_override", Value: t.LanguageOverride}, bson.E{Key: "textIndexVersion", Value: int32(3)})
	}
	return spec
}

// renderSpec shows a specification in error messages, as MongoDB quotes it.
func renderSpec(doc bson.D) string {
	b, err := bson.MarshalExtJSON(doc, false, false)
	if err != nil {
		return "{}"
	}
	return string(b)
}
