// Package exec runs aggregation pipelines: stages as push operators
// ($match, $project, $group, $sort, $unwind, $lookup, ...) that take
// documents one at a time and pass what they produce to the next, ending in
// a sink. Command handlers parse a command's arguments, read documents from
// storage, push them through a pipeline built here and reply.
//
// exec never talks to PostgreSQL itself: where a stage needs another
// collection ($lookup, $graphLookup, $unionWith) it reads through the
// Reader the handler passes in Env, and $out and $merge write through the
// Env's Output. It never holds more than the memory limit
// (MaxMemoryBytes) in a blocking stage ($sort and $group, when allowed,
// spill to unlinked temporary files instead), and never ignores a stage,
// option or operator it does not implement: those are refused with
// MongoDB's codes.
package exec
