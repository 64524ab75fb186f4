// Package update implements the document transformations behind MongoDB's
// write commands: update operators ($set, $inc, $push, $bit, …) on plain
// and positional paths ("$", "$[]", "$[<identifier>]" with arrayFilters),
// replacement documents, construction of the document inserted by an
// upsert, find projections (including the positional "a.$"), and the
// checks a document must pass before it is stored. Pipeline-style updates
// are compiled by exec, which owns the expression language and depends on
// this package; they come back here through the Pipeline interface so that
// every kind of update is applied, checked and upserted the same way.
//
// It is pure logic over bson.D values. It must never perform I/O, keep
// state between calls, or mutate a document it was given: every result is
// a fresh value the caller owns. Errors a client may see are
// *mongoerr.Error values carrying MongoDB's codes and, as far as practical,
// MongoDB's wording.
package update
