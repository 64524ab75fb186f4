package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"time"
)

// Histogram counts latencies in log-linear buckets: below 256 ns each
// nanosecond has its own bucket; above, a bucket spans 1/128 of the value's
// power of two, so the middle of the bucket is within 0.4% of anything in
// it. Recording is an index computation and an increment, with a fixed
// memory cost (about 60 KB), whatever the number of operations.
//
// It is not safe for concurrent use: each client keeps its own and they
// are merged when the run ends.
type Histogram struct {
	counts   []uint64 // allocated on first Record
	n        uint64
	sum      float64 // ns; a float so that sums over hours cannot overflow
	min, max uint64  // ns
}

const (
	histSubBits = 8
	histHalf    = 1 << (histSubBits - 1) // sub-buckets per power of two above 256
	histBuckets = 1<<histSubBits + (64-histSubBits)*histHalf
)

func histIndex(v uint64) int {
	l := bits.Len64(v)
	if l <= histSubBits {
		return int(v)
	}
	shift := l - histSubBits
	return 1<<histSubBits + (shift-1)*histHalf + int(v>>shift) - histHalf
}

// histBounds returns the smallest value of bucket i and its width.
func histBounds(i int) (low, width uint64) {
	if i < 1<<histSubBits {
		return uint64(i), 1
	}
	j := i - 1<<histSubBits
	shift := j/histHalf + 1
	mant := uint64(j%histHalf + histHalf)
	return mant << shift, 1 << shift
}

// Record adds one latency; negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	v := uint64(max(d, 0))
	if h.counts == nil {
		h.counts = make([]uint64, histBuckets)
	}
	h.counts[histIndex(v)]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	h.max = max(h.max, v)
	h.n++
	h.sum += float64(v)
}

// Merge adds o's recordings to h.
func (h *Histogram) Merge(o *Histogram) {
	if o == nil || o.n == 0 {
		return
	}
	if h.counts == nil {
		h.counts = make([]uint64, histBuckets)
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.n += o.n
	h.sum += o.sum
}

// Count is the number of recordings.
func (h *Histogram) Count() uint64 { return h.n }

// Mean is the exact mean.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.n))
}

// Min and Max are exact.
func (h *Histogram) Min() time.Duration { return time.Duration(h.min) }

// Max is the largest recording.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Quantile returns the nearest-rank q-quantile (0 < q ≤ 1): the smallest
// recorded value such that at least q of the recordings are at or below it,
// as the middle of its bucket, clamped to the exact minimum and maximum.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = min(max(rank, 1), h.n)
	if rank == h.n {
		return time.Duration(h.max) // exact, and what p100 or a tiny count asks for
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			low, width := histBounds(i)
			mid := low + (width-1)/2
			return time.Duration(min(max(mid, h.min), h.max))
		}
	}
	return time.Duration(h.max)
}

// CDFPoint is one step of the empirical distribution.
type CDFPoint struct {
	Latency  time.Duration
	Fraction float64 // of the recordings at or below Latency
}

// CDF returns one point per non-empty bucket, at the bucket's upper end
// (clamped to the maximum).
func (h *Histogram) CDF() []CDFPoint {
	var out []CDFPoint
	var seen uint64
	for i, c := range h.counts {
		if c == 0 {
			continue
		}
		seen += c
		low, width := histBounds(i)
		out = append(out, CDFPoint{
			Latency:  time.Duration(min(low+width-1, h.max)),
			Fraction: float64(seen) / float64(h.n),
		})
	}
	return out
}

// histJSON is the stored form: only the non-empty buckets, as
// [index, count] pairs.
type histJSON struct {
	N       uint64      `json:"n"`
	SumNs   float64     `json:"sumNs"`
	MinNs   uint64      `json:"minNs"`
	MaxNs   uint64      `json:"maxNs"`
	Buckets [][2]uint64 `json:"buckets"`
}

// MarshalJSON writes the sparse form.
func (h *Histogram) MarshalJSON() ([]byte, error) {
	j := histJSON{N: h.n, SumNs: h.sum, MinNs: h.min, MaxNs: h.max, Buckets: [][2]uint64{}}
	for i, c := range h.counts {
		if c > 0 {
			j.Buckets = append(j.Buckets, [2]uint64{uint64(i), c})
		}
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads the sparse form and checks it is consistent.
func (h *Histogram) UnmarshalJSON(b []byte) error {
	var j histJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*h = Histogram{n: j.N, sum: j.SumNs, min: j.MinNs, max: j.MaxNs}
	if j.N == 0 {
		return nil
	}
	h.counts = make([]uint64, histBuckets)
	var total uint64
	for _, p := range j.Buckets {
		if p[0] >= histBuckets {
			return fmt.Errorf("histogram bucket %d out of range", p[0])
		}
		h.counts[p[0]] += p[1]
		total += p[1]
	}
	if total != j.N {
		return errors.New("histogram buckets do not add up to n")
	}
	return nil
}
