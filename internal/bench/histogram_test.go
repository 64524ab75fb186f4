package bench

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestHistogramBucketsRoundTrip(t *testing.T) {
	// Every value falls in a bucket whose bounds contain it, bucket
	// indexes grow with the value, and a bucket is at most 1/128 of its
	// low end wide.
	prev := -1
	for _, v := range []uint64{0, 1, 255, 256, 257, 300, 511, 512, 1000, 1 << 20, 1<<20 + 12345, 1 << 40, math.MaxUint64} {
		i := histIndex(v)
		if i < prev {
			t.Errorf("index of %d (%d) below the previous one (%d)", v, i, prev)
		}
		prev = i
		if i >= histBuckets {
			t.Fatalf("index of %d is %d, beyond %d buckets", v, i, histBuckets)
		}
		low, width := histBounds(i)
		if v < low || v-low >= width {
			t.Errorf("%d not in bucket %d [%d, %d+%d)", v, i, low, low, width)
		}
		if low >= 256 && float64(width)/float64(low) > 1.0/128 {
			t.Errorf("bucket %d too wide: %d at %d", i, width, low)
		}
	}
}

func TestHistogramBucketsAreContiguous(t *testing.T) {
	// Every bucket must start where the previous one ends and hold both its
	// ends, up to 2^64, or percentiles would be off.
	var next uint64
	for i := range histBuckets {
		low, width := histBounds(i)
		if low != next {
			t.Fatalf("bucket %d starts at %d, want %d", i, low, next)
		}
		if got := histIndex(low); got != i {
			t.Fatalf("histIndex(%d) = %d, want %d", low, got, i)
		}
		if got := histIndex(low + width - 1); got != i {
			t.Fatalf("histIndex(%d) = %d, want %d", low+width-1, got, i)
		}
		next = low + width
		if next == 0 { // wrapped past 2^64: the last bucket
			if i != histBuckets-1 {
				t.Fatalf("range ends at bucket %d of %d", i, histBuckets)
			}
			return
		}
	}
	t.Fatalf("buckets end at %d, short of 2^64", next)
}

func TestHistogramEmpty(t *testing.T) {
	var h Histogram
	if h.Quantile(0.5) != 0 || h.Mean() != 0 || h.Count() != 0 || h.Max() != 0 || len(h.CDF()) != 0 {
		t.Error("an empty histogram should report zeros")
	}
	var merged Histogram
	merged.Merge(&h)
	if merged.Count() != 0 {
		t.Error("merging an empty histogram added recordings")
	}
}

func TestHistogramQuantilesWithinOnePercent(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var h Histogram
	var exact []time.Duration
	for range 100_000 {
		// Log-normal-ish latencies from ~50 µs to seconds.
		d := time.Duration(math.Exp(rng.NormFloat64()*1.2+math.Log(800e3))) + 50*time.Microsecond
		h.Record(d)
		exact = append(exact, d)
	}
	slices.Sort(exact)
	for _, q := range []float64{0.001, 0.5, 0.9, 0.99, 0.999, 1} {
		want := exact[int(math.Ceil(q*float64(len(exact))))-1]
		got := h.Quantile(q)
		if rel := math.Abs(float64(got-want)) / float64(want); rel > 0.01 {
			t.Errorf("q%.3f: got %v, exact %v (%.2f%% off)", q, got, want, 100*rel)
		}
	}
	if h.Max() != exact[len(exact)-1] || h.Min() != exact[0] {
		t.Errorf("min/max %v/%v, want %v/%v", h.Min(), h.Max(), exact[0], exact[len(exact)-1])
	}
	var sum time.Duration
	for _, d := range exact {
		sum += d
	}
	if mean := sum / time.Duration(len(exact)); absDur(h.Mean()-mean) > time.Microsecond {
		t.Errorf("mean %v, want %v", h.Mean(), mean)
	}
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

func TestHistogramSmallCountsAreExact(t *testing.T) {
	var h Histogram
	for _, us := range []int{100, 200, 300, 400, 10_000} {
		h.Record(time.Duration(us) * time.Microsecond)
	}
	if got := h.Quantile(1); got != 10*time.Millisecond {
		t.Errorf("p100 = %v, want the maximum", got)
	}
	// Nearest rank: the 3rd of 5 values is the median.
	if got := h.Quantile(0.5); absDur(got-300*time.Microsecond) > 3*time.Microsecond {
		t.Errorf("p50 = %v, want ~300µs", got)
	}
	var empty Histogram
	if empty.Quantile(0.5) != 0 || empty.Mean() != 0 || len(empty.CDF()) != 0 {
		t.Error("an empty histogram reports zeros")
	}
	h.Record(-time.Second)
	if h.Min() != 0 {
		t.Errorf("a negative duration counts as 0, min = %v", h.Min())
	}
}

func TestHistogramMergeAndCDF(t *testing.T) {
	var a, b Histogram
	for i := 1; i <= 100; i++ {
		a.Record(time.Duration(i) * time.Millisecond)
		b.Record(time.Duration(i+100) * time.Millisecond)
	}
	a.Merge(&b)
	a.Merge(nil)
	if a.Count() != 200 || a.Max() != 200*time.Millisecond || a.Min() != time.Millisecond {
		t.Fatalf("merged: n %d min %v max %v", a.Count(), a.Min(), a.Max())
	}
	if p := a.Quantile(0.5); absDur(p-100*time.Millisecond) > time.Millisecond {
		t.Errorf("merged p50 = %v", p)
	}
	cdf := a.CDF()
	if len(cdf) == 0 || cdf[len(cdf)-1].Fraction != 1 {
		t.Fatalf("CDF ends at %v", cdf[len(cdf)-1])
	}
	for i := 1; i < len(cdf); i++ {
		if cdf[i].Latency <= cdf[i-1].Latency || cdf[i].Fraction <= cdf[i-1].Fraction {
			t.Fatalf("CDF not increasing at %d: %v then %v", i, cdf[i-1], cdf[i])
		}
	}
}

func TestHistogramJSON(t *testing.T) {
	var h Histogram
	for i := range 1000 {
		h.Record(time.Duration(i*i) * time.Microsecond)
	}
	b, err := json.Marshal(&h)
	if err != nil {
		t.Fatal(err)
	}
	var back Histogram
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	for _, q := range []float64{0.1, 0.5, 0.99, 1} {
		if back.Quantile(q) != h.Quantile(q) {
			t.Errorf("q%v: %v after the round trip, %v before", q, back.Quantile(q), h.Quantile(q))
		}
	}
	if back.Mean() != h.Mean() || back.Count() != h.Count() {
		t.Error("mean or count changed in the round trip")
	}
	if err := json.Unmarshal([]byte(`{"n":5,"buckets":[[1,2]]}`), &back); err == nil {
		t.Error("buckets that do not add up to n were accepted")
	}
	if err := json.Unmarshal([]byte(`{"n":1,"buckets":[[99999999,1]]}`), &back); err == nil {
		t.Error("an out-of-range bucket was accepted")
	}
}
