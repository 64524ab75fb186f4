package main

import (
	"math"
	"math/bits"
	"time"
)

// histogram records durations in log-linear buckets: values below 2^subBits
// ns are exact, larger ones keep their top subBits significant bits, so a
// reported percentile is within 1/2^(subBits-1) (0.8%) of the true value
// while recording stays a couple of nanoseconds and a fixed-size array.
// It is not safe for concurrent use; each worker keeps its own and they
// are merged afterwards.
type histogram struct {
	counts [numBuckets]uint64
	n      uint64
	sum    time.Duration
	max    time.Duration
}

const (
	subBits    = 8
	subHalf    = 1 << (subBits - 1)
	numBuckets = (64-subBits+1)*subHalf + subHalf
)

func bucketOf(v uint64) int {
	l := bits.Len64(v)
	if l <= subBits {
		return int(v)
	}
	shift := l - subBits
	return shift*subHalf + int(v>>shift)
}

// bucketRange is the smallest value in bucket i and the bucket's width.
func bucketRange(i int) (low, width uint64) {
	if i < 1<<subBits {
		return uint64(i), 1
	}
	shift := i/subHalf - 1
	mant := uint64(i - shift*subHalf)
	return mant << shift, 1 << shift
}

func (h *histogram) record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.counts[bucketOf(uint64(d))]++
	h.n++
	h.sum += d
	h.max = max(h.max, d)
}

func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	h.max = max(h.max, o.max)
}

func (h *histogram) count() uint64 { return h.n }

func (h *histogram) mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return h.sum / time.Duration(h.n)
}

// percentile returns the value below or at which p percent of the
// recordings fall, as the middle of its bucket (never above the maximum).
func (h *histogram) percentile(p float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(p / 100 * float64(h.n)))
	rank = min(max(rank, 1), h.n)
	if rank == h.n {
		return h.max // exact, and the value a p100 or a tiny sample asks for
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			low, width := bucketRange(i)
			return min(time.Duration(low+(width-1)/2), h.max)
		}
	}
	return h.max
}
