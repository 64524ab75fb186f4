package osprio

import "time"

// Nice values run from MinNice (most CPU) to MaxNice (least CPU).
const (
	MinNice = -20
	MaxNice = 19
)

// A custom slice, when not 0 (the kernel's default), lies between MinSlice
// and MaxSlice: the range the kernel clamps sched_runtime to.
const (
	MinSlice = 100 * time.Microsecond
	MaxSlice = 100 * time.Millisecond
)

func checkNice(nice int) error {
	if nice < MinNice || nice > MaxNice {
		return invalidf("nice value %d out of range (%d..%d)", nice, MinNice, MaxNice)
	}
	return nil
}

func checkSlice(slice time.Duration) error {
	if slice != 0 && (slice < MinSlice || slice > MaxSlice) {
		return invalidf("slice %v out of range (0 for the kernel's default, or %v..%v)", slice, MinSlice, MaxSlice)
	}
	return nil
}
