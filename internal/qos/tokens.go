package qos

// tokenTable tells a done func whether it already ran. Each admission takes a
// (slot, generation) pair; the done closure carries both by value, so the only
// per-request allocation is the closure itself. Settling bumps the
// generation, which makes every older copy of the pair stale: a second call of
// the same done func, even after the slot was handed to a new request, finds a
// different generation and does nothing.
//
// It is guarded by Channel.mu, which release takes anyway.
type tokenTable struct {
	gen  []uint64
	free []uint32
}

func (tt *tokenTable) take() (slot uint32, gen uint64) {
	if n := len(tt.free); n > 0 {
		slot = tt.free[n-1]
		tt.free = tt.free[:n-1]
	} else {
		slot = uint32(len(tt.gen))
		tt.gen = append(tt.gen, 0)
	}
	tt.gen[slot]++
	return slot, tt.gen[slot]
}

// settle reports whether (slot, gen) was outstanding, and retires it.
func (tt *tokenTable) settle(slot uint32, gen uint64) bool {
	if int(slot) >= len(tt.gen) || tt.gen[slot] != gen {
		return false
	}
	tt.gen[slot]++
	tt.free = append(tt.free, slot)
	return true
}

// outstanding is the number of tokens taken and not settled.
func (tt *tokenTable) outstanding() int { return len(tt.gen) - len(tt.free) }
