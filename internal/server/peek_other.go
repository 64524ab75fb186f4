//go:build !unix

package server

// peekGone cannot peek here, so the watch ends at once: a disconnect is
// noticed only when the handler reads again.
func peekGone(uintptr) (gone, wait bool) { return false, false }
