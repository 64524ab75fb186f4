package update

import "tierdb/internal/mongoerr"

// MongoDB codes used here that internal/mongoerr does not name. The numbers
// are MongoDB's; mongoerr renders their codeName as "Location<N>".
const (
	codeNotSingleValueField mongoerr.Code = 54
	codeEmptyFieldName      mongoerr.Code = 56

	// Projection codes, from MongoDB's projection parser.
	codeProjectionExclusionInInclusion mongoerr.Code = 31254
	codeProjectionInclusionInExclusion mongoerr.Code = 31253
	codeProjectionPathCollision        mongoerr.Code = 31250
	codeProjectionPathCollisionSub     mongoerr.Code = 31249
)

// maxBSONSize is the largest document MongoDB accepts for storage.
const maxBSONSize = 16 * 1024 * 1024

// maxArrayBackfill bounds how many null elements a positional $set may add
// to an array, so that {$set: {"a.99999999": 1}} cannot exhaust memory.
// The number is MongoDB's.
const maxArrayBackfill = 1500000
