// Package bsonx decodes raw BSON documents into bson.D, and encodes bson.D
// back into BSON, without reflection.
//
// Decode is a drop-in replacement for bson.Unmarshal(raw, &d) with d a bson.D:
// it produces the same Go types, in the same order, with duplicate keys kept,
// and is several times faster because it walks the bytes directly instead of
// going through the driver's codec registry. It exists for the hot paths
// (command documents of every request, stored documents rechecked against a
// filter).
//
// AppendDocument and Marshal are the same for bson.Marshal(d): byte for byte
// the driver's output, and errors where the driver errors, for the trees
// tierdb builds (replies, documents on their way to storage). Values of
// types they do not know are encoded by the driver itself, one value at a
// time, so equality with bson.Marshal never depends on the list of types
// handled directly. Document lengths are back-patched, so encoding is one
// pass.
//
// Decode's input is untrusted. It must never panic, never read outside raw, and
// never recurse deeper than MaxDepth; every problem is an InvalidBSON
// *mongoerr.Error. It is at least as strict as the driver: whatever Decode
// accepts the driver accepts too, with an equal result. Its extra checks,
// which the wire package's validator makes as well (so anything that passed
// validation decodes), reject what the driver lets through: nesting deeper
// than MaxDepth, an old-binary (subtype 2) inner length that disagrees with
// the outer one, and a code-with-scope code string without its 0x00.
//
// The encoder trusts its input tree (it has no depth limit, like the
// driver) but not embedded bson.Raw values, which it checks as the driver
// does before copying them.
//
// This package must never interpret what a document means (that belongs to
// the command and query layers), never keep state between calls, never
// return decoded values that share memory with raw, and never produce bytes
// that differ from bson.Marshal's.
package bsonx
