//go:build unix

package server

import (
	"errors"
	"syscall"
)

// peekGone looks at a socket without consuming anything: gone when the
// peer closed or reset it, wait when there is nothing to read yet.
func peekGone(fd uintptr) (gone, wait bool) {
	var b [1]byte
	n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR) {
		return false, true
	}
	return n == 0 || err != nil, false
}
