package bsonx_test

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
)

// encodeBenchDocs are the shapes tierdb marshals most: a stored YCSB
// record, a find reply carrying one stored document as bson.Raw, and a
// write command's reply.
func encodeBenchDocs(b *testing.B) map[string]bson.D {
	ycsb := bson.D{{Key: "_id", Value: "user6284781860667377211"}}
	for i := range 10 {
		ycsb = append(ycsb, bson.E{Key: "field" + string(rune('0'+i)), Value: strings.Repeat(string(rune('a'+i)), 100)})
	}
	stored := bson.Raw(mustMarshal(b, ycsb))
	return map[string]bson.D{
		"ycsb": ycsb,
		"find": {{Key: "cursor", Value: bson.D{{Key: "firstBatch", Value: bson.A{stored}}, {Key: "id", Value: int64(0)},
			{Key: "ns", Value: "db.c"}}}, {Key: "ok", Value: 1.0}},
		"small": {{Key: "n", Value: int32(1)}, {Key: "nModified", Value: int32(1)}, {Key: "ok", Value: 1.0}},
	}
}

func BenchmarkEncode(b *testing.B) {
	docs := encodeBenchDocs(b)
	for _, name := range []string{"ycsb", "find", "small"} {
		d := docs[name]
		size := int64(len(mustMarshal(b, d)))
		b.Run(name+"/bsonx.Marshal", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(size)
			for b.Loop() {
				if _, err := bsonx.Marshal(d); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/bsonx.AppendDocument", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(size)
			var buf []byte
			for b.Loop() {
				var err error
				if buf, err = bsonx.AppendDocument(buf[:0], d); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/bson.Marshal", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(size)
			for b.Loop() {
				if _, err := bson.Marshal(d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
