package main

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestBucketsAreContiguousAndOrdered(t *testing.T) {
	// Every value must land in the bucket whose range contains it, and
	// buckets must not overlap or leave gaps, or percentiles would be off.
	var next uint64
	for i := range numBuckets {
		low, width := bucketRange(i)
		if low != next {
			t.Fatalf("bucket %d starts at %d, want %d", i, low, next)
		}
		if got := bucketOf(low); got != i {
			t.Fatalf("bucketOf(%d) = %d, want %d", low, got, i)
		}
		if got := bucketOf(low + width - 1); got != i {
			t.Fatalf("bucketOf(%d) = %d, want %d", low+width-1, got, i)
		}
		next = low + width
		if next == 0 { // wrapped past 2^64: the last bucket
			if i != numBuckets-1 {
				t.Fatalf("range ends at bucket %d of %d", i, numBuckets)
			}
			return
		}
	}
	t.Fatalf("buckets end at %d, short of 2^64", next)
}

func TestPercentilesMatchSortedSample(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h histogram
	var sample []time.Duration
	for range 100000 {
		// Log-uniform from 1µs to ~1s, like real latencies.
		d := time.Duration(1000 * float64(int(1)<<rng.IntN(20)) * (1 + rng.Float64()))
		h.record(d)
		sample = append(sample, d)
	}
	slices.Sort(sample)
	for _, p := range []float64{1, 50, 90, 99, 99.9, 100} {
		idx := int(p/100*float64(len(sample))+0.999999) - 1
		want := sample[max(idx, 0)]
		got := h.percentile(p)
		if diff := float64(got-want) / float64(want); diff > 0.01 || diff < -0.01 {
			t.Errorf("p%v = %v, exact %v (%.2f%% off)", p, got, want, 100*diff)
		}
	}
	if h.count() != 100000 {
		t.Errorf("count = %d", h.count())
	}
	if h.percentile(100) != sample[len(sample)-1] {
		t.Errorf("p100 = %v, max %v", h.percentile(100), sample[len(sample)-1])
	}
}

func TestSmallValuesAreExact(t *testing.T) {
	var h histogram
	for _, d := range []time.Duration{3, 1, 2, 4, 5} {
		h.record(d)
	}
	if got := h.percentile(50); got != 3 {
		t.Errorf("p50 = %v, want 3ns", got)
	}
	if got := h.mean(); got != 3 {
		t.Errorf("mean = %v, want 3ns", got)
	}
}

func TestMergeAddsCounts(t *testing.T) {
	var a, b histogram
	for range 10 {
		a.record(100 * time.Microsecond)
		b.record(300 * time.Microsecond)
	}
	b.record(time.Second)
	a.merge(&b)
	if a.count() != 21 {
		t.Fatalf("count = %d, want 21", a.count())
	}
	if p := a.percentile(40); p < 99*time.Microsecond || p > 101*time.Microsecond {
		t.Errorf("p40 = %v, want ~100µs", p)
	}
	if p := a.percentile(90); p < 297*time.Microsecond || p > 303*time.Microsecond {
		t.Errorf("p90 = %v, want ~300µs", p)
	}
	if a.percentile(100) != time.Second {
		t.Errorf("p100 = %v, want 1s", a.percentile(100))
	}
}

func TestEmptyHistogram(t *testing.T) {
	var h histogram
	if h.percentile(50) != 0 || h.mean() != 0 || h.count() != 0 {
		t.Error("empty histogram should report zeros")
	}
}
