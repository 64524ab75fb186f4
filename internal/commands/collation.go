package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// checkCollation refuses a collation tierdb does not implement. tierdb
// compares strings by their UTF-8 bytes, which is MongoDB's "simple"
// collation; {locale: "simple"} (or no collation) is therefore accepted and
// anything else refused, never ignored: a case-insensitive count that
// silently counted bytewise would be wrong without an error.
func checkCollation(d bson.D) error {
	v, ok := lookup(d, "collation")
	if !ok {
		return nil
	}
	c, isDoc := v.(bson.D)
	if !isDoc {
		return mongoerr.New(mongoerr.TypeMismatch, "collation must be an object")
	}
	if len(c) == 1 && c[0].Key == "locale" && c[0].Value == "simple" {
		return nil
	}
	return mongoerr.New(mongoerr.NotImplemented, "collations other than {locale: \"simple\"} are not supported by tierdb yet: strings compare by their UTF-8 bytes")
}
