package wire

import (
	"sync/atomic"

	"tierdb/internal/mongoerr"
)

// Budget bounds the bytes that all connections together hold in messages
// still arriving. A message's buffer grows with what has arrived (never to
// its declared length up front), and every growth past the first MiB is
// taken from the budget, given back once the message is complete. A client
// that declares 48 MB, sends most of it and stalls therefore holds what it
// sent, and all such clients together at most the budget: past it, the
// message that would need more is refused and its connection closed.
type Budget struct {
	limit int64
	used  atomic.Int64
}

// NewBudget returns a budget of limit bytes (<= 0: no limit).
func NewBudget(limit int64) *Budget { return &Budget{limit: limit} }

func (b *Budget) take(n int64) bool {
	if b == nil || b.limit <= 0 {
		return true
	}
	if b.used.Add(n) > b.limit {
		b.used.Add(-n)
		return false
	}
	return true
}

func (b *Budget) give(n int64) {
	if b != nil && b.limit > 0 {
		b.used.Add(-n)
	}
}

// Used is how many bytes unfinished messages hold now.
func (b *Budget) Used() int64 {
	if b == nil {
		return 0
	}
	return b.used.Load()
}

func budgetExceeded(h *Header, limit int64) *FrameError {
	return fatalf(h, mongoerr.ExceededMemoryLimit, "the server holds %d bytes of unfinished messages already (its limit); retry later", limit)
}
