package bench

import (
	"context"
	"math"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// ReplSample is one poll of tierdb's replSetGetStatus during a run: what
// each node served, not what the clients asked for.
type ReplSample struct {
	T float64 `json:"t"` // seconds from the run's start
	// Reads is readsServed per member name; Primary names the primary.
	Reads   map[string]int64 `json:"reads"`
	Primary string           `json:"primary"`
	// StalenessMS is the largest stalenessMillis among the standbys (-1:
	// unknown).
	StalenessMS int64   `json:"stalenessMs"`
	Fraction    float64 `json:"fraction"`
	Ratio       float64 `json:"ratio"`
}

// standbyReads and allReads total a sample's reads.
func (s ReplSample) standbyReads() (standby, all int64) {
	for name, n := range s.Reads {
		all += n
		if name != s.Primary {
			standby += n
		}
	}
	return standby, all
}

type replStatusReply struct {
	Members []struct {
		Name            string `bson:"name"`
		StateStr        string `bson:"stateStr"`
		StalenessMillis *int64 `bson:"stalenessMillis"`
		ReadsServed     int64  `bson:"readsServed"`
	} `bson:"members"`
	ReadBalancer struct {
		Fraction  float64 `bson:"fraction"`
		LastRatio float64 `bson:"lastRatio"`
	} `bson:"readBalancer"`
}

func pollRepl(ctx context.Context, c *mongo.Client) (ReplSample, bson.Raw, error) {
	raw, err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "replSetGetStatus", Value: 1}}).Raw()
	if err != nil {
		return ReplSample{}, nil, err
	}
	var r replStatusReply
	if err := bson.Unmarshal(raw, &r); err != nil {
		return ReplSample{}, nil, err
	}
	s := ReplSample{Reads: map[string]int64{}, StalenessMS: 0, Fraction: r.ReadBalancer.Fraction, Ratio: r.ReadBalancer.LastRatio}
	for _, m := range r.Members {
		s.Reads[m.Name] = m.ReadsServed
		if m.StateStr == "PRIMARY" {
			s.Primary = m.Name
			continue
		}
		if m.StalenessMillis == nil {
			s.StalenessMS = -1
		} else if s.StalenessMS >= 0 {
			s.StalenessMS = max(s.StalenessMS, *m.StalenessMillis)
		}
	}
	return s, raw, nil
}

// replPoller polls replSetGetStatus every interval until stopped.
type replPoller struct {
	client  *mongo.Client
	samples []ReplSample
	last    bson.Raw
	err     error
	stopped chan struct{}
	done    sync.WaitGroup
}

func startReplPoller(ctx context.Context, addr string, cred *options.Credential, start time.Time, interval time.Duration) (*replPoller, error) {
	c, err := mongo.Connect(clientOptions(addr, "bench-repl-poller", 1, cred))
	if err != nil {
		return nil, err
	}
	p := &replPoller{client: c, stopped: make(chan struct{})}
	poll := func() {
		s, raw, err := pollRepl(ctx, c)
		if err != nil {
			if p.err == nil && ctx.Err() == nil {
				p.err = err
			}
			return
		}
		s.T = time.Since(start).Seconds()
		p.samples = append(p.samples, s)
		p.last = raw
	}
	poll() // the counters at the start
	p.done.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				poll()
			case <-p.stopped:
				poll() // the counters at the end
				return
			case <-ctx.Done():
				return
			}
		}
	})
	return p, nil
}

// stop ends the polling and returns the samples and the last reply.
func (p *replPoller) stop() ([]ReplSample, bson.Raw, error) {
	close(p.stopped)
	p.done.Wait()
	_ = p.client.Disconnect(context.Background())
	return p.samples, p.last, p.err
}

// PeriodStats is one period of a replicated run (cf. seed 001 §4.1.6: per
// 10 s period, read throughput, p80 read latency, the share of reads the
// standbys actually served).
type PeriodStats struct {
	Start float64 `json:"start"` // seconds from the run's start
	End   float64 `json:"end"`
	// ReadsPerSec and ReadP80Us are of the YCSB groups' reads (S groups
	// left out).
	ReadsPerSec float64 `json:"readsPerSec"`
	ReadP80Us   float64 `json:"readP80Us"`
	// StandbyShare is the share of all reads tierdb served from standbys
	// in the period (readsServed deltas; -1: no reads or no polls).
	StandbyShare float64 `json:"standbyShare"`
	// Fraction is the balance fraction at the period's end; StalenessMS
	// the largest standby staleness polled in the period.
	Fraction    float64 `json:"fraction"`
	StalenessMS int64   `json:"stalenessMs"`
}

// periodSeries cuts a run into periods of length period up to its end.
// readSeries counts reads per SeriesBucket, latency holds the read
// latencies per period, samples are the replSetGetStatus polls.
func periodSeries(period time.Duration, end float64, readSeries []int32, latency []*Histogram, samples []ReplSample) []PeriodStats {
	var out []PeriodStats
	per := period.Seconds()
	for i := 0; float64(i)*per < end-1e-9; i++ {
		if i > 0 && end-float64(i)*per < per/2 {
			break // a stub at the end: the groups stopping, not a period
		}
		ps := PeriodStats{Start: float64(i) * per, End: min(float64(i+1)*per, end), StandbyShare: -1}
		ps.ReadsPerSec = seriesRate(readSeries, ps.Start, ps.End)
		if i < len(latency) && latency[i].Count() > 0 {
			ps.ReadP80Us = micros(latency[i].Quantile(0.80))
		}
		a, aok := sampleAt(samples, ps.Start)
		b, bok := sampleAt(samples, ps.End)
		if aok && bok {
			sa, alla := a.standbyReads()
			sb, allb := b.standbyReads()
			if allb > alla {
				ps.StandbyShare = float64(sb-sa) / float64(allb-alla)
			}
			ps.Fraction = b.Fraction
		}
		for _, s := range samples {
			if s.T >= ps.Start && s.T <= ps.End {
				if s.StalenessMS < 0 || ps.StalenessMS < 0 {
					ps.StalenessMS = -1
				} else {
					ps.StalenessMS = max(ps.StalenessMS, s.StalenessMS)
				}
			}
		}
		out = append(out, ps)
	}
	return out
}

// sampleAt is the poll closest to t seconds.
func sampleAt(samples []ReplSample, t float64) (ReplSample, bool) {
	best, bestD := ReplSample{}, math.Inf(1)
	for _, s := range samples {
		if d := math.Abs(s.T - t); d < bestD {
			best, bestD = s, d
		}
	}
	return best, !math.IsInf(bestD, 1)
}

// standbyShare is the share of reads served by standbys over a whole run.
func standbyShare(samples []ReplSample) float64 {
	if len(samples) < 2 {
		return -1
	}
	sa, alla := samples[0].standbyReads()
	sb, allb := samples[len(samples)-1].standbyReads()
	if allb <= alla {
		return -1
	}
	return float64(sb-sa) / float64(allb-alla)
}
