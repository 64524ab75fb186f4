package bsonx_test

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
)

func benchDocs(b *testing.B) map[string][]byte {
	uuid := bson.Binary{Subtype: 4, Data: []byte("0123456789abcdef")}
	ycsb := bson.D{{Key: "_id", Value: "user6284781860667377211"}}
	for i := range 10 {
		ycsb = append(ycsb, bson.E{Key: "field" + string(rune('0'+i)), Value: strings.Repeat(string(rune('a'+i)), 100)})
	}
	return map[string][]byte{
		"command": mustMarshal(b, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: int32(5)}}},
			{Key: "limit", Value: int32(1)}, {Key: "singleBatch", Value: true}, {Key: "lsid", Value: bson.D{{Key: "id", Value: uuid}}},
			{Key: "$db", Value: "test"}}),
		"ycsb": mustMarshal(b, ycsb),
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, name := range []string{"command", "ycsb"} {
		raw := benchDocs(b)[name]
		b.Run(name+"/bsonx", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if _, err := bsonx.Decode(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/driver", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				var d bson.D
				if err := bson.Unmarshal(raw, &d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
