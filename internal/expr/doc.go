// Package expr is MongoDB's aggregation expression language: an
// expression ("$a.b", {$add: [...]}, {$cond: ...}, literals, documents and
// arrays of expressions) is parsed once into a tree and evaluated against a
// document with variables ($$ROOT, $$CURRENT, $$NOW, $$REMOVE, $let and
// user variables).
//
// Values follow MongoDB's rules: a missing field is Missing, distinct from
// null; numbers keep their BSON type and widen int32 → int64 → double as
// results overflow, with Decimal128 winning over everything; values order
// as query.Compare orders them. Errors carry MongoDB's codes.
//
// expr must never guess: an operator it does not implement, an option it
// does not know, or a time zone it cannot resolve is refused with an
// error, never ignored. It reads documents and never changes them. A
// parsed Expr serves one evaluation at a time (one goroutine).
package expr
