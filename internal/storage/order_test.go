package storage

import (
	"bytes"
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// A KeyOrder walk visits the keyed rows in (column, _id) order in either
// direction, continues exactly after the last row of each chunk, and the
// Null scan returns the rows the walk leaves out; ScanChunk's keep drops
// rows without losing the walk's position.
func TestKeyOrderWalk(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	name := t.Name()
	c, err := s.CollectionForWrite(ctx, On{}, "st", name)
	if err != nil {
		t.Fatal(err)
	}
	var docs []Doc
	for i := range 40 {
		d := bson.D{{Key: "_id", Value: int32(i)}}
		switch {
		case i%10 == 3:
			d = append(d, bson.E{Key: "a", Value: bson.A{int32(i)}}) // multikey: NULL column
		case i%10 == 7: // missing: keyed as null
		default:
			d = append(d, bson.E{Key: "a", Value: int32(i % 4)}) // many ties
		}
		docs = append(docs, doc(t, d))
	}
	if _, _, err := s.Insert(ctx, On{}, c, docs, true); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := s.CreateIndexes(ctx, On{}, "st", name, []Index{{Name: "a_1", Keys: []IndexKey{{Field: "a"}}}}); err != nil {
		t.Fatal(err)
	}
	if c, err = s.Collection(ctx, On{}, "st", name); err != nil {
		t.Fatal(err)
	}
	column := c.Indexes[1].Column
	for _, desc := range []bool{false, true} {
		for _, idDesc := range []bool{false, true} {
			var got []Row
			p := ScanParams{Limit: 7}
			var after []byte
			for {
				p.Order = &KeyOrder{Column: column, Desc: desc, IDDesc: idDesc, After: after}
				ch, err := s.ScanChunk(ctx, On{}, c, p, func(doc []byte) bool { return len(doc) > 0 })
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, ch.Rows...)
				if ch.Read < p.Limit {
					break
				}
				p.After, after = ch.LastKey, ch.LastOrderKey
			}
			if len(got) != 36 {
				t.Fatalf("desc=%v idDesc=%v: walked %d rows, want 36", desc, idDesc, len(got))
			}
			for i := 1; i < len(got); i++ {
				c := bytes.Compare(got[i-1].OrderKey, got[i].OrderKey)
				if desc {
					c = -c
				}
				if c == 0 {
					c = bytes.Compare(got[i-1].Key, got[i].Key)
					if idDesc {
						c = -c
					}
				}
				if c >= 0 {
					t.Fatalf("desc=%v idDesc=%v: rows %d and %d out of order", desc, idDesc, i-1, i)
				}
			}
		}
	}
	nulls, err := s.Scan(ctx, On{}, c, ScanParams{Order: &KeyOrder{Column: column, Null: true}})
	if err != nil || len(nulls) != 4 {
		t.Fatalf("NULL rows: %d, %v; want 4", len(nulls), err)
	}
	// keep refusing every row still reports the position reached
	ch, err := s.ScanChunk(ctx, On{}, c, ScanParams{Limit: 5}, func([]byte) bool { return false })
	if err != nil || len(ch.Rows) != 0 || ch.Read != 5 || !bytes.Equal(ch.LastKey, IDKey(int32(4))) {
		t.Fatalf("keep: %d rows, %d read, last %x, %v", len(ch.Rows), ch.Read, ch.LastKey, err)
	}
}

// A chunk stops keeping rows past maxChunkBytes and says so (Cut); Scan
// still returns every row, in order, over several chunks.
func TestChunkBytesBound(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	c, err := s.CollectionForWrite(ctx, On{}, "st", t.Name())
	if err != nil {
		t.Fatal(err)
	}
	var docs []Doc
	for i := range 30 {
		docs = append(docs, doc(t, bson.D{{Key: "_id", Value: int32(i)}, {Key: "pad", Value: "0123456789012345678901234567890123456789"}}))
	}
	if _, _, err := s.Insert(ctx, On{}, c, docs, true); err != nil {
		t.Fatal(err)
	}
	old := maxChunkBytes
	maxChunkBytes = 200 // about three rows
	defer func() { maxChunkBytes = old }()
	ch, err := s.ScanChunk(ctx, On{}, c, ScanParams{Limit: 20}, nil)
	if err != nil || !ch.Cut || len(ch.Rows) >= 20 || ch.Read != len(ch.Rows) || !bytes.Equal(ch.LastKey, ch.Rows[len(ch.Rows)-1].Key) {
		t.Fatalf("chunk: cut %v, %d rows, %d read, %v", ch.Cut, len(ch.Rows), ch.Read, err)
	}
	for _, limit := range []int{0, 20} {
		rows, err := s.Scan(ctx, On{}, c, ScanParams{Limit: limit})
		want := 30
		if limit > 0 {
			want = limit
		}
		if err != nil || len(rows) != want {
			t.Fatalf("limit %d: %d rows, %v", limit, len(rows), err)
		}
		for i, r := range rows {
			if !bytes.Equal(r.Key, IDKey(int32(i))) {
				t.Fatalf("limit %d: row %d out of order", limit, i)
			}
		}
	}
}
