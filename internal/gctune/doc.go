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
// It must never override what the operator chose: with GOGC set in the
// environment it does nothing. It only adjusts the collector's percentage
// (debug.SetGCPercent); it never forces a collection or holds memory.
package gctune
