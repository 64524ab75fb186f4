package bench

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// UserRun is one database user's figures in a run (groups with
// connectionsPerUser).
type UserRun struct {
	Name   string  `json:"name"`
	Group  string  `json:"group"`
	Weight float64 `json:"weight"`
	Ops    int64   `json:"ops"`
	// Series counts its operations answered per SeriesBucket.
	Series []int32 `json:"series"`
	// MeanUs and CV are the mean and coefficient of variation of its
	// latencies; P999Us its p99.9.
	MeanUs float64 `json:"meanUs"`
	CV     float64 `json:"cv"`
	P999Us float64 `json:"p999Us"`
	// First and Last: its first operation sent and last answered, seconds
	// from the run's start.
	First float64 `json:"first"`
	Last  float64 `json:"last"`
}

// Fairness is seed 004's view of a run's users (§3.1). U_f is
// max_i |N_i/φ_i − H| / H with H the mean of N_i/φ_i over the users, N_i
// user i's operations in an interval and φ_i its weight; V_l is the
// coefficient of variation of request latency averaged across users.
type Fairness struct {
	Users int `json:"users"`
	// Windows is how many 1 s windows U_f was taken over: from the
	// scenario's warm-up after the last user started to the first user's
	// end.
	Windows int `json:"windows"`
	// UfMean and UfP90 summarise U_f over the windows; UfSpan is U_f over
	// the whole measured span at once.
	UfMean float64 `json:"ufMean"`
	UfP90  float64 `json:"ufP90"`
	UfSpan float64 `json:"ufSpan"`
	// UfFloor is the least UfMean whole operations allow the same windows
	// (ufFloor), for users of equal weights; 0 otherwise.
	UfFloor float64 `json:"ufFloor,omitempty"`
	// CV is V_l.
	CV float64 `json:"cv"`
	// MinRate and MaxRate are the slowest and fastest user's operations
	// per second per unit of weight over the span.
	MinRate float64 `json:"minRate"`
	MaxRate float64 `json:"maxRate"`
}

// FairnessWindow is the interval U_f is measured over.
const FairnessWindow = time.Second

// userRun merges the recorders of one user's clients.
func userRun(name, group string, weight float64, recs []*recorder) UserRun {
	u := UserRun{Name: name, Group: group, Weight: weight, First: -1}
	var h Histogram
	var sum, sumSq float64
	for _, r := range recs {
		h.Merge(&r.hist)
		u.Ops += r.ops
		sum += r.latSum
		sumSq += r.latSumSq
		for len(u.Series) < len(r.series) {
			u.Series = append(u.Series, 0)
		}
		for i, c := range r.series {
			u.Series[i] += c
		}
		if r.first >= 0 && (u.First < 0 || r.first.Seconds() < u.First) {
			u.First = r.first.Seconds()
		}
		u.Last = max(u.Last, r.last.Seconds())
	}
	if u.Ops > 0 {
		mean := sum / float64(u.Ops)
		u.MeanUs = mean * 1e6
		if mean > 0 {
			u.CV = math.Sqrt(max(sumSq/float64(u.Ops)-mean*mean, 0)) / mean
		}
		u.P999Us = float64(h.Quantile(0.999).Microseconds())
	}
	return u
}

// fairnessOf measures U_f and V_l over users, leaving warmup out.
func fairnessOf(users []UserRun, warmup time.Duration) *Fairness {
	if len(users) < 2 {
		return nil
	}
	f := &Fairness{Users: len(users)}
	start, end := 0.0, math.Inf(1)
	for _, u := range users {
		start = max(start, u.First)
		end = min(end, u.Last)
		f.CV += u.CV / float64(len(users))
	}
	start += warmup.Seconds()
	per := int(FairnessWindow / SeriesBucket)
	from := int(math.Ceil(start / SeriesBucket.Seconds()))
	to := int(math.Floor(end / SeriesBucket.Seconds()))
	var ufs, floors []float64
	for b := from; b+per <= to; b += per {
		if uf, ok := unfairness(users, b, b+per); ok {
			ufs = append(ufs, uf)
			floors = append(floors, ufFloor(users, b, b+per))
		}
	}
	f.Windows = len(ufs)
	if len(ufs) > 0 {
		for i, uf := range ufs {
			f.UfMean += uf / float64(len(ufs))
			f.UfFloor += floors[i] / float64(len(ufs))
		}
		slices.Sort(ufs)
		f.UfP90 = ufs[min(len(ufs)-1, int(math.Ceil(0.9*float64(len(ufs))))-1)]
	}
	if to > from {
		f.UfSpan, _ = unfairness(users, from, to)
		secs := float64(to-from) * SeriesBucket.Seconds()
		f.MinRate = math.Inf(1)
		for _, u := range users {
			r := float64(bucketSum(u.Series, from, to)) / weightOf(u) / secs
			f.MinRate, f.MaxRate = min(f.MinRate, r), max(f.MaxRate, r)
		}
	}
	return f
}

// unfairness is U_f over the buckets [from, to); false when no user ran.
func unfairness(users []UserRun, from, to int) (float64, bool) {
	norm := make([]float64, len(users))
	h := 0.0
	for i, u := range users {
		norm[i] = float64(bucketSum(u.Series, from, to)) / weightOf(u)
		h += norm[i] / float64(len(users))
	}
	if h == 0 {
		return 0, false
	}
	worst := 0.0
	for _, n := range norm {
		worst = max(worst, math.Abs(n-h))
	}
	return worst / h, true
}

// ufFloor is the least U_f that whole operations allow users of equal
// weights over the buckets [from, to), given how many they did in all: with
// H each on average, the fairest split gives every user ⌊H⌋ or ⌈H⌉, and a
// fraction f = H − ⌊H⌋ of them at ⌈H⌉ makes U_f max(f, 1 − f)/H (0 when H
// is whole). Where a round of the scheduler does not fit a window a whole
// number of times, f falls anywhere and the floor averages about 0.75/H:
// 11.5 % for 6.5 operations a user a second. 0 for unequal weights, whose
// floor this does not give.
func ufFloor(users []UserRun, from, to int) float64 {
	var all int64
	for _, u := range users {
		if weightOf(u) != weightOf(users[0]) {
			return 0
		}
		all += bucketSum(u.Series, from, to)
	}
	h := float64(all) / float64(len(users))
	f := h - math.Floor(h)
	if h == 0 || f < 1e-9 {
		return 0
	}
	return max(f, 1-f) / h
}

func weightOf(u UserRun) float64 {
	if u.Weight > 0 {
		return u.Weight
	}
	return 1
}

func bucketSum(series []int32, from, to int) int64 {
	var n int64
	for i := from; i < to && i < len(series); i++ {
		n += int64(series[i])
	}
	return n
}

// medianFairness takes the median of every field across repetitions.
func medianFairness(runs []RunResult) *Fairness {
	var fs []*Fairness
	for _, r := range runs {
		if r.Fairness != nil {
			fs = append(fs, r.Fairness)
		}
	}
	if len(fs) == 0 {
		return nil
	}
	pick := func(f func(*Fairness) float64) float64 {
		xs := make([]float64, len(fs))
		for i, x := range fs {
			xs[i] = f(x)
		}
		return Median(xs)
	}
	return &Fairness{
		Users:   fs[0].Users,
		Windows: int(pick(func(f *Fairness) float64 { return float64(f.Windows) })),
		UfMean:  pick(func(f *Fairness) float64 { return f.UfMean }),
		UfP90:   pick(func(f *Fairness) float64 { return f.UfP90 }),
		UfSpan:  pick(func(f *Fairness) float64 { return f.UfSpan }),
		UfFloor: pick(func(f *Fairness) float64 { return f.UfFloor }),
		CV:      pick(func(f *Fairness) float64 { return f.CV }),
		MinRate: pick(func(f *Fairness) float64 { return f.MinRate }),
		MaxRate: pick(func(f *Fairness) float64 { return f.MaxRate }),
	}
}

// variantFairness is the users' figures under variant (nil: none).
func (s *Summary) variantFairness(variant string) *Fairness {
	for _, v := range s.Variants {
		if v.Variant == variant {
			return v.Fairness
		}
	}
	return nil
}

// fairnessTable is the report's section on the users (empty without
// per-user groups).
func fairnessTable(sum *Summary) string {
	var b strings.Builder
	for _, v := range sum.Variants {
		f := v.Fairness
		if f == nil {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("### Users and fairness\n\nSeed 004's measures over the users (medians across repetitions): U_f = max_i |N_i/φ_i − H| / H, H the mean of N_i/φ_i, over 1 s windows (mean and p90) and over the whole span after the warm-up; its floor, the least mean U_f whole operations allow the same windows (every user within one operation of the others; users of equal weights only); V_l the latency CV averaged over users; the slowest and fastest user's ops/s per unit of weight.\n\n")
			b.WriteString("| variant | users | all ops/s | U_f mean | U_f floor | U_f p90 | U_f span | V_l | slowest user | fastest user |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		}
		floor := "–"
		if f.UfFloor > 0 {
			floor = fmt.Sprintf("%.1f%%", 100*f.UfFloor)
		}
		fmt.Fprintf(&b, "| %s | %d | %.0f | %.1f%% | %s | %.1f%% | %.1f%% | %.2f | %.1f | %.1f |\n",
			v.Variant, f.Users, v.Throughput, 100*f.UfMean, floor, 100*f.UfP90, 100*f.UfSpan, f.CV, f.MinRate, f.MaxRate)
	}
	if b.Len() > 0 {
		b.WriteString("\n")
	}
	return b.String()
}

// spread is 1 − the slowest user's rate over the fastest's.
func (f *Fairness) spread() float64 {
	if f.MaxRate <= 0 {
		return 0
	}
	return 1 - f.MinRate/f.MaxRate
}
