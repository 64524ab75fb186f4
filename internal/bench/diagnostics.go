package bench

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Diagnostics say where a run's time went on the server side, to explain
// a latency rather than only measure it.
type Diagnostics struct {
	// Tierdb maps a tier to tierdb's own count and mean duration of the
	// requests it handled (its tierdb_request_duration_seconds metric:
	// admission wait included; reading the request off the socket and
	// waiting for a goroutine to run it not included).
	Tierdb map[string]TierRequests `json:"tierdb,omitempty"`
	// Waits maps a tier to what its PostgreSQL backends were doing when
	// sampled while active: "CPU" (running or waiting for a CPU) or a wait
	// event such as "IO:WALSync" or "Lock:transactionid", with the number
	// of samples. Backends are told apart by tierdb's application_name.
	Waits map[string]map[string]int `json:"waits,omitempty"`
	// WaitRounds is how many times pg_stat_activity was sampled.
	WaitRounds int `json:"waitRounds,omitempty"`
	// BackendCPU maps a tier to the CPU seconds its PostgreSQL backends
	// used during the run.
	BackendCPU map[string]float64 `json:"backendCPU,omitempty"`
	// WALSyncs and WALSyncMs are pg_stat_wal's WAL fsyncs over the run and
	// the time they took (track_wal_io_timing).
	WALSyncs  int64   `json:"walSyncs"`
	WALSyncMs float64 `json:"walSyncMs"`
}

// TierRequests is tierdb's view of one tier's requests.
type TierRequests struct {
	Count  int64   `json:"count"`
	MeanUs float64 `json:"meanUs"`
}

// waitSampleInterval is how often pg_stat_activity is sampled: often
// enough for a few hundred samples per run, rarely enough to cost the
// server CPU well under 1%.
const waitSampleInterval = 50 * time.Millisecond

// waitSampler samples the tierdb backends' wait events until stopped.
type waitSampler struct {
	stopOnce sync.Once
	quit     chan struct{}
	done     chan struct{}
	counts   map[string]map[string]int
	rounds   int
}

func startWaitSampler(ctx context.Context, connString string) (*waitSampler, error) {
	conn, err := pgx.Connect(ctx, connString)
	if err != nil {
		return nil, err
	}
	s := &waitSampler{quit: make(chan struct{}), done: make(chan struct{}), counts: map[string]map[string]int{}}
	go func() {
		defer close(s.done)
		defer conn.Close(context.Background())
		t := time.NewTicker(waitSampleInterval)
		defer t.Stop()
		for {
			select {
			case <-s.quit:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			rows, err := conn.Query(ctx, `SELECT application_name,
				coalesce(wait_event_type || ':' || wait_event, 'CPU')
				FROM pg_stat_activity
				WHERE state = 'active' AND application_name LIKE 'tierdb-%' AND pid <> pg_backend_pid()`)
			if err != nil {
				continue
			}
			s.rounds++
			for rows.Next() {
				var app, event string
				if rows.Scan(&app, &event) != nil {
					continue
				}
				tier := strings.TrimPrefix(app, "tierdb-")
				if s.counts[tier] == nil {
					s.counts[tier] = map[string]int{}
				}
				s.counts[tier][event]++
			}
			rows.Close()
		}
	}()
	return s, nil
}

// stop ends the sampling and returns the counts and the number of rounds.
func (s *waitSampler) stop() (map[string]map[string]int, int) {
	s.stopOnce.Do(func() { close(s.quit) })
	<-s.done
	return s.counts, s.rounds
}

// walSyncs reads pg_stat_wal's fsync count and time (ms).
func walSyncs(ctx context.Context, connString string) (int64, float64, error) {
	conn, err := pgx.Connect(ctx, connString)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close(context.Background())
	var n int64
	var ms float64
	err = conn.QueryRow(ctx, "SELECT wal_sync, wal_sync_time FROM pg_stat_wal").Scan(&n, &ms)
	return n, ms, err
}

// tierdbMetrics is what the harness reads off tierdb's /metrics: its own
// view of each tier's requests, and the Go runtime's allocation and
// collection counters (totals since the process started).
type tierdbMetrics struct {
	Tiers      map[string]TierRequests
	AllocBytes float64 // go_memstats_alloc_bytes_total
	GCs        int64   // go_gc_duration_seconds_count
}

// scrapeMetrics reads tierdb's /metrics.
func scrapeMetrics(ctx context.Context, addr string) (tierdbMetrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return tierdbMetrics{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return tierdbMetrics{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return tierdbMetrics{}, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return parseMetrics(bufio.NewScanner(resp.Body))
}

// parseMetrics picks tierdb_request_duration_seconds_sum and _count and
// the runtime counters out of Prometheus text.
func parseMetrics(sc *bufio.Scanner) (tierdbMetrics, error) {
	const metric = "tierdb_request_duration_seconds_"
	var m tierdbMetrics
	sums, counts := map[string]float64{}, map[string]int64{}
	for sc.Scan() {
		line := sc.Text()
		if name, value, ok := strings.Cut(line, " "); ok && (name == "go_memstats_alloc_bytes_total" || name == "go_gc_duration_seconds_count") {
			v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
			if err != nil {
				return m, fmt.Errorf("metrics: %q: %w", line, err)
			}
			if name == "go_gc_duration_seconds_count" {
				m.GCs = int64(v)
			} else {
				m.AllocBytes = v
			}
			continue
		}
		rest, ok := strings.CutPrefix(line, metric)
		if !ok {
			continue
		}
		kind, rest, ok := strings.Cut(rest, `{tier="`)
		if !ok || (kind != "sum" && kind != "count") {
			continue
		}
		tier, value, ok := strings.Cut(rest, `"} `)
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return m, fmt.Errorf("metrics: %q: %w", line, err)
		}
		if kind == "sum" {
			sums[tier] = v
		} else {
			counts[tier] = int64(v)
		}
	}
	if err := sc.Err(); err != nil {
		return m, err
	}
	m.Tiers = map[string]TierRequests{}
	for tier, n := range counts {
		if n > 0 {
			m.Tiers[tier] = TierRequests{Count: n, MeanUs: sums[tier] / float64(n) * 1e6}
		}
	}
	return m, nil
}

// backendCPU returns the CPU seconds used so far by each tierdb backend,
// by PID, with its tier.
func backendCPU(ctx context.Context, connString string) (map[int]tierCPU, error) {
	conn, err := pgx.Connect(ctx, connString)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, "SELECT pid, application_name FROM pg_stat_activity WHERE application_name LIKE 'tierdb-%'")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int]tierCPU{}
	for rows.Next() {
		var pid int32
		var app string
		if err := rows.Scan(&pid, &app); err != nil {
			return nil, err
		}
		out[int(pid)] = tierCPU{tier: strings.TrimPrefix(app, "tierdb-"), cpu: processCPU(int(pid))}
	}
	return out, rows.Err()
}

type tierCPU struct {
	tier string
	cpu  float64
}

// backendCPUDelta sums per tier the CPU the backends used between two
// readings; a backend opened in between counts from zero.
func backendCPUDelta(a, b map[int]tierCPU) map[string]float64 {
	out := map[string]float64{}
	for pid, end := range b {
		out[end.tier] += end.cpu - a[pid].cpu
	}
	return out
}
