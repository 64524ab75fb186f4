package exec

import (
	"sort"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

// maxDistinctBytes is MongoDB's cap on distinct's values: a reply
// document (a variable for tests).
var maxDistinctBytes = 16 * 1024 * 1024

// Distinct gathers the distinct values of a key among the documents
// pushed to it, as MongoDB's distinct does: arrays at the key are unwound
// one level, missing values are left out (null is a value), values equal
// in BSON (1 and 1.0) count once, within the reply's size cap. It is a
// Stage, the sink of a view's pipeline.
type Distinct struct {
	key    string
	seen   map[string]bool
	values bson.A
	size   int
}

// NewDistinct gathers the distinct values at key.
func NewDistinct(key string) *Distinct { return &Distinct{key: key, seen: map[string]bool{}} }

func (d *Distinct) add(v any) error {
	k := string(query.AppendKey(nil, v))
	if d.seen[k] {
		return nil
	}
	raw, err := bsonx.Marshal(bson.D{{Key: "v", Value: v}})
	if err != nil {
		return err
	}
	if d.size += len(raw); d.size > maxDistinctBytes {
		return mongoerr.New(mongoerr.Location17217, "distinct too big, 16mb cap")
	}
	d.seen[k] = true
	d.values = append(d.values, v)
	return nil
}

// Push adds the values of doc at the key, arrays unwound one level.
func (d *Distinct) Push(doc bson.D) error {
	for _, v := range query.LookupAll(doc, d.key) {
		if arr, isArray := v.(bson.A); isArray {
			for _, e := range arr {
				if err := d.add(e); err != nil {
					return err
				}
			}
			continue
		}
		if err := d.add(v); err != nil {
			return err
		}
	}
	return nil
}

// Finish does nothing: the values wait for Values.
func (d *Distinct) Finish() error { return nil }

// Values is the values in BSON order.
func (d *Distinct) Values() bson.A {
	sort.SliceStable(d.values, func(i, j int) bool { return query.Compare(d.values[i], d.values[j]) < 0 })
	if d.values == nil {
		return bson.A{}
	}
	return d.values
}
