package query

import (
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"tierdb/internal/bsonx"
)

// MatchRaw is Match on a document's BSON bytes, without decoding the
// document: each path is looked up in place and only the scalar it reaches
// is decoded. It answers only when that gives Match's answer for certain;
// ok is false when the document must be decoded and given to MatchErr: a
// path that reaches an array or ends at a document, an $expr, an operator
// it does not know, or bytes it cannot read. Clauses are visited in
// Match's order, so a fallback happens before any clause Match would not
// have reached.
func (f *Filter) MatchRaw(raw []byte) (matched, ok bool) {
	return rawMatchDoc(f.root, bson.Raw(raw))
}

func rawMatchDoc(x docExpr, doc bson.Raw) (bool, bool) {
	switch e := x.(type) {
	case andDoc:
		for _, c := range e {
			m, ok := rawMatchDoc(c, doc)
			if !ok || !m {
				return m, ok
			}
		}
		return true, true
	case orDoc:
		for _, c := range e {
			m, ok := rawMatchDoc(c, doc)
			if !ok || m {
				return m, ok
			}
		}
		return false, true
	case norDoc:
		m, ok := rawMatchDoc(orDoc(e), doc)
		return !m, ok
	case constDoc:
		return bool(e), true
	case pathDoc:
		return rawMatchPath(e.expr, doc, e.parts)
	}
	return false, false
}

func rawMatchPath(x fieldExpr, doc bson.Raw, parts []string) (bool, bool) {
	switch e := x.(type) {
	case leafExpr:
		v, missing, ok := rawLeaf(doc, parts)
		if !ok {
			return false, false
		}
		return e.pred.match(v, missing), true
	case notExpr:
		m, ok := rawMatchPath(e.x, doc, parts)
		return !m, ok
	case andExpr:
		for _, c := range e {
			m, ok := rawMatchPath(c, doc, parts)
			if !ok || !m {
				return m, ok
			}
		}
		return true, true
	}
	return false, false
}

// rawLeaf is walkDoc for a path that meets no array and ends at a scalar
// (or nowhere): the one element it yields. ok is false otherwise.
func rawLeaf(doc bson.Raw, parts []string) (v any, missing, ok bool) {
	cur := bsoncore.Document(doc)
	for i, p := range parts {
		val, found, good := lookupRaw(cur, p)
		if !good {
			return nil, false, false
		}
		if !found {
			return nil, true, true
		}
		last := i == len(parts)-1
		switch val.Type {
		case bsoncore.TypeArray:
			return nil, false, false
		case bsoncore.TypeEmbeddedDocument:
			if last {
				return nil, false, false
			}
			sub, ok := val.DocumentOK()
			if !ok {
				return nil, false, false
			}
			cur = sub
			continue
		}
		if !last {
			return nil, true, true // a path through a scalar ends early
		}
		x, err := bsonx.DecodeValue(bson.Type(val.Type), val.Data)
		if err != nil {
			return nil, false, false
		}
		return x, false, true
	}
	return nil, false, false
}

// lookupRaw finds the first field named key in doc, allocating nothing;
// good is false when the bytes are malformed.
func lookupRaw(doc bsoncore.Document, key string) (val bsoncore.Value, found, good bool) {
	length, rem, ok := bsoncore.ReadLength(doc)
	if !ok || int(length) > len(doc) || length < 5 {
		return val, false, false
	}
	rem = doc[4 : length-1]
	for len(rem) > 0 {
		var elem bsoncore.Element
		elem, rem, ok = bsoncore.ReadElement(rem)
		if !ok {
			return val, false, false
		}
		if string(elem.KeyBytes()) == key {
			v, err := elem.ValueErr()
			return v, err == nil, err == nil
		}
	}
	return val, false, true
}
