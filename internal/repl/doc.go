// Package repl watches the standbys of the primary: how far each has
// replayed the primary's WAL, what that means as staleness in time, and when
// a write has been applied by enough members for its write concern.
//
// Staleness is measured conservatively. The monitor samples the primary's
// WAL end position with the time just before asking; every write
// acknowledged before that time lies before that position. A standby that
// has replayed up to or past a sample's position therefore shows every write
// acknowledged before the sample's time, and its staleness is at most now
// minus that time. Sampling every few milliseconds keeps the bound tight;
// a standby that stops answering only grows staler.
//
// This package must never route requests (that is router's job) or build
// SQL (storage's); it only reads positions through storage.
package repl
