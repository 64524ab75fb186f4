package bench

import (
	"math"
	"strconv"

	"gonum.org/v1/plot"
)

// logTicks labels a log axis at 1, 2 and 5 times each power of ten, with
// unlabeled minor ticks at the other integers: plot.LogTicks labels powers
// of ten only, which leaves a latency axis spanning less than a decade
// without numbers.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi <= lo {
		return nil
	}
	var out []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		base := math.Pow(10, e)
		for m := 1.0; m <= 9; m++ {
			v := m * base
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				t.Label = tickLabel(v)
			}
			out = append(out, t)
		}
	}
	return out
}

// plainTicks are gonum's default linear ticks with labels free of
// trailing zeros ("7500", not "7500.00").
type plainTicks struct{}

func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i, t := range ticks {
		if t.Label != "" {
			ticks[i].Label = tickLabel(t.Value)
		}
	}
	return ticks
}

func tickLabel(v float64) string {
	return strconv.FormatFloat(v, 'g', 6, 64)
}
