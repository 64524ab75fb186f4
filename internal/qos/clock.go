package qos

import "time"

// Clock is the channel's only source of time. It is injected so that the
// starvation guard and wait-time statistics can be driven by a fake clock in
// tests, and so that qos itself never reads the wall clock.
type Clock interface {
	Now() time.Time
	// AfterFunc runs f on its own goroutine once d has elapsed, unless the
	// returned Timer is stopped first.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call.
type Timer interface {
	// Stop prevents the call if it has not started; it reports whether it did.
	Stop() bool
}

// RealClock returns the Clock backed by package time.
func RealClock() Clock { return realClock{} }

type realClock struct{}

// clockStart anchors realClock.Now: qos compares and subtracts its times
// and never shows them, so the monotonic clock alone serves. Reading it
// once (time.Since) instead of the wall and monotonic clocks both
// (time.Now) halves the cost of a reading, which is most of the gate's
// per-request cost on a VM.
var clockStart = time.Now()

func (realClock) Now() time.Time { return clockStart.Add(time.Since(clockStart)) }

func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
