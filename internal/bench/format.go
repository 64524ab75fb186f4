package bench

import (
	"fmt"
	"math"
	"time"
)

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// fmtMicros prints a latency in µs below 10 ms, else in ms.
func fmtMicros(us float64) string {
	switch {
	case math.IsNaN(us):
		return "–"
	case us < 10_000:
		return fmt.Sprintf("%.0f µs", us)
	default:
		return fmt.Sprintf("%.1f ms", us/1000)
	}
}

// fmtChange prints a ratio as a signed percentage change: 0.3 → "−70%".
func fmtChange(ratio float64) string {
	if math.IsNaN(ratio) || math.IsInf(ratio, 0) {
		return "–"
	}
	pct := (ratio - 1) * 100
	if pct < 0 {
		return fmt.Sprintf("−%.0f%%", -pct)
	}
	return fmt.Sprintf("+%.0f%%", pct)
}

func fmtRate(opsPerSec float64) string {
	if opsPerSec == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f", opsPerSec)
}
