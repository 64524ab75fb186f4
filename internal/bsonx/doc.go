// Package bsonx decodes raw BSON documents into bson.D without reflection.
//
// Decode is a drop-in replacement for bson.Unmarshal(raw, &d) with d a bson.D:
// it produces the same Go types, in the same order, with duplicate keys kept,
// and is several times faster because it walks the bytes directly instead of
// going through the driver's codec registry. It exists for the hot paths
// (command documents of every request, stored documents rechecked against a
// filter).
//
// Input is untrusted. Decode must never panic, never read outside raw, and
// never recurse deeper than MaxDepth; every problem is an InvalidBSON
// *mongoerr.Error. It is at least as strict as the driver: whatever Decode
// accepts the driver accepts too, with an equal result. Its extra checks,
// which the wire package's validator makes as well (so anything that passed
// validation decodes), reject what the driver lets through: nesting deeper
// than MaxDepth, an old-binary (subtype 2) inner length that disagrees with
// the outer one, and a code-with-scope code string without its 0x00.
//
// This package must never encode, never interpret what a document means
// (that belongs to the command and query layers), never keep state between
// calls, and never return values that share memory with raw.
package bsonx
