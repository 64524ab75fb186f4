package osprio

// Nice values run from MinNice (most CPU) to MaxNice (least CPU).
const (
	MinNice = -20
	MaxNice = 19
)

func checkNice(nice int) error {
	if nice < MinNice || nice > MaxNice {
		return invalidf("nice value %d out of range (%d..%d)", nice, MinNice, MaxNice)
	}
	return nil
}
