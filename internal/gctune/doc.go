// Package gctune paces Go's garbage collector for tierdb: a server whose
// live heap is small (a few MB) but which allocates quickly while it
// serves (tens of MB a second). With Go's default (GOGC=100, a collection
// whenever the heap has doubled) such a process collects several times a
// second, and each collection is a burst of a few milliseconds of CPU on
// the server's cores, which the requests in flight then wait out, the
// high tier's among them. gctune instead lets the heap grow by a fixed
// headroom past what the last collection left live before the next one
// (and never by less than the default's doubling), so collections become
// rare while the heap stays within live + headroom.
//
// While the high tier is active (SetHighActive, from the priority channel)
// and for a second after, the headroom is four times as large: the
// collections that remain fall in the high tier's pauses, not in its
// requests, and the heap stays within live + 4 × headroom.
//
// It must never override what the operator chose: with GOGC set in the
// environment it does nothing. It only adjusts the collector's percentage
// (debug.SetGCPercent); it never forces a collection or holds memory, and
// it never decides which requests run (that is qos).
package gctune
