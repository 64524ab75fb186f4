package bench

import (
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"
)

// showProgress rewrites one status line on w twice a second until the
// returned function is called, which clears the line. A nil w shows
// nothing (stderr is not a terminal).
func showProgress(w io.Writer, label string, start time.Time, names []string, counts []atomic.Int64) func() {
	if w == nil {
		return func() {}
	}
	quit, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-quit:
				fmt.Fprint(w, "\r\033[K")
				return
			case <-t.C:
				var b strings.Builder
				fmt.Fprintf(&b, "\r\033[K%s %5.1f s", label, time.Since(start).Seconds())
				for i, n := range names {
					fmt.Fprintf(&b, "  %s %d ops", n, counts[i].Load())
				}
				fmt.Fprint(w, b.String())
			}
		}
	}()
	return func() {
		close(quit)
		<-finished
	}
}
