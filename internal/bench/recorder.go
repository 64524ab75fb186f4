package bench

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"time"
)

// SampleCap bounds the (time, latency) samples kept per client and run.
const SampleCap = 20_000

// recorder is one client's record of a run; only its worker writes it.
type recorder struct {
	hist   Histogram
	series []int32
	// latSum and latSumSq are the sum and sum of squares of the
	// latencies in seconds, for the latency CV (fairness.go).
	latSum, latSumSq float64
	ops, errs        int64
	firstErr         string
	first            time.Duration // first operation sent, from the run's start
	last             time.Duration // last operation answered
	keep             bool          // keep samples
	samples          [][2]int64
	seen             int64
	reservoirR       *rand.Rand
	// reads counts the successful reads (and scans) per SeriesBucket, and
	// periodHists holds their latencies per period (nil: not kept), for a
	// replicated run's per-period series.
	reads       []int32
	period      time.Duration
	periodHists []*Histogram
}

func newRecorder(keepSamples bool, seed uint64) *recorder {
	return &recorder{keep: keepSamples, first: -1, reservoirR: rand.New(rand.NewPCG(seed, 0x5a))}
}

// keepPeriods makes the recorder keep read latencies per period.
func (r *recorder) keepPeriods(period time.Duration) { r.period = period }

// recordRead is record for a read: it also counts in the read series.
func (r *recorder) recordRead(sent, done time.Duration, err error) {
	r.record(sent, done, err)
	if err != nil {
		return
	}
	b := int(done / SeriesBucket)
	for len(r.reads) <= b {
		r.reads = append(r.reads, 0)
	}
	r.reads[b]++
	if r.period > 0 {
		p := int(done / r.period)
		for len(r.periodHists) <= p {
			r.periodHists = append(r.periodHists, nil)
		}
		if r.periodHists[p] == nil {
			r.periodHists[p] = &Histogram{}
		}
		r.periodHists[p].Record(done - sent)
	}
}

// record notes one operation sent at sent and answered at done (both from
// the run's start).
func (r *recorder) record(sent, done time.Duration, err error) {
	if r.first < 0 {
		r.first = sent
	}
	r.last = max(r.last, done)
	if err != nil {
		r.errs++
		if r.firstErr == "" {
			r.firstErr = err.Error()
		}
		return
	}
	lat := done - sent
	r.hist.Record(lat)
	r.ops++
	r.latSum += lat.Seconds()
	r.latSumSq += lat.Seconds() * lat.Seconds()
	b := int(done / SeriesBucket)
	for len(r.series) <= b {
		r.series = append(r.series, 0)
	}
	r.series[b]++
	if !r.keep {
		return
	}
	// Reservoir sampling: beyond the cap every operation still has the
	// same chance to be kept, so the timeline shows the whole run.
	s := [2]int64{sent.Microseconds(), lat.Microseconds()}
	r.seen++
	if len(r.samples) < SampleCap {
		r.samples = append(r.samples, s)
	} else if j := r.reservoirR.Int64N(r.seen); j < SampleCap {
		r.samples[j] = s
	}
}

// mergeGroup combines the recorders of one group's clients.
func mergeGroup(g Group, clients int, recs []*recorder) GroupRun {
	gr := GroupRun{Name: g.Name, Tier: g.Tier, Role: g.Role, Clients: clients, Latency: &Histogram{}, Series: []int32{}}
	first, last := time.Duration(-1), time.Duration(0)
	for _, r := range recs {
		gr.Latency.Merge(&r.hist)
		gr.Ops += r.ops
		gr.Errors += r.errs
		if gr.FirstError == "" {
			gr.FirstError = r.firstErr
		}
		if r.first >= 0 && (first < 0 || r.first < first) {
			first = r.first
		}
		last = max(last, r.last)
		for len(gr.Series) < len(r.series) {
			gr.Series = append(gr.Series, 0)
		}
		for i, c := range r.series {
			gr.Series[i] += c
		}
		for len(gr.ReadSeries) < len(r.reads) {
			gr.ReadSeries = append(gr.ReadSeries, 0)
		}
		for i, c := range r.reads {
			gr.ReadSeries[i] += c
		}
		if r.keep {
			s := slices.Clone(r.samples)
			slices.SortFunc(s, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
			gr.Samples = append(gr.Samples, s)
		}
	}
	if first >= 0 {
		gr.Start, gr.End = first.Seconds(), last.Seconds()
	}
	return gr
}

// periodReadLatency merges the recorders' read latencies of each period.
func periodReadLatency(recs []*recorder) []*Histogram {
	var out []*Histogram
	for _, r := range recs {
		for p, h := range r.periodHists {
			for len(out) <= p {
				out = append(out, &Histogram{})
			}
			if h != nil {
				out[p].Merge(h)
			}
		}
	}
	return out
}
