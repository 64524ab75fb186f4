package qos

// tokenTable tells an Entry's or an Admission's Done whether it already
// ran. Each admission takes a (slot, generation) pair, which the Entry or
// Admission carries by value. Settling bumps the generation, which makes
// every older copy of the pair stale: a second Done of the same request,
// even after the slot was handed to a new one, finds a different
// generation and does nothing.
//
// It is guarded by the mutex of the Channel or Gate that owns it, which
// release takes anyway.
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

// live reports whether (slot, gen) is outstanding.
func (tt *tokenTable) live(slot uint32, gen uint64) bool {
	return int(slot) < len(tt.gen) && tt.gen[slot] == gen
}

// settle reports whether (slot, gen) was outstanding, and retires it.
func (tt *tokenTable) settle(slot uint32, gen uint64) bool {
	if !tt.live(slot, gen) {
		return false
	}
	tt.gen[slot]++
	tt.free = append(tt.free, slot)
	return true
}

// outstanding is the number of tokens taken and not settled.
func (tt *tokenTable) outstanding() int { return len(tt.gen) - len(tt.free) }
