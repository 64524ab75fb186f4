package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// The time-sensitive clients run in a process of their own. Seed 000's
// time-sensitive clients and its YCSB noise were separate programs on a
// client machine of 96 cores, "to ensure no interference"; in one Go
// process on this VM's one load-generator CPU they would share one Go P,
// and a time-sensitive client's reply would wait, runnable, behind the
// noise clients' goroutines (measured: 1.6–2.1 ms at the p99.9 of the
// load generator's scheduling latencies during fig5-paper's phase, against
// 0.3–0.4 ms with the time-sensitive client alone; Diagnostics.LoadGenSched).
// As separate processes the kernel wakes the time-sensitive one when its
// reply arrives, as it would a client on a machine of its own, while both
// still share the load generator's CPU. A variant with
// ClientsInOneProcess keeps every client in the harness's process.
//
// The protocol, over the child's stdin and stdout: the harness writes the
// job (one JSON line); the child connects its clients and writes "ready";
// the harness writes the run's start (Unix nanoseconds) once every client
// of the run is connected; the child runs its groups from that start and
// writes their recorders (one JSON line), or an error on stderr and exits
// non-zero.

// ClientProcessArg is the argument that makes tierdb-bench a client
// process (cmd/tierdb-bench).
const ClientProcessArg = "client-process"

// childIDBase is where the client process's inserted _ids start, far from
// the harness's own, so that both can insert without colliding.
const childIDBase = int64(1) << 40

type clientJob struct {
	Addr     string        `json:"addr"`
	Variant  string        `json:"variant"`
	Scenario *Scenario     `json:"scenario"`
	Groups   []clientGroup `json:"groups"`
	Period   Duration      `json:"period,omitempty"` // keep read latencies per period (replicated runs)
	Timeout  Duration      `json:"timeout"`          // the run's longest, from its start
}

type clientGroup struct {
	Group          Group                 `json:"group"`
	ReadPreference *ReadPreference       `json:"readPreference,omitempty"`
	Seeds          []uint64              `json:"seeds"`  // one per client
	Logins         []*options.Credential `json:"logins"` // one per client (nil: none)
}

// inClientProcess says whether group g runs in the client process in
// variant v: a time-sensitive YCSB group that ends by itself.
func inClientProcess(g Group, v Variant) bool {
	return !v.ClientsInOneProcess && g.Role == RoleTimeSensitive && g.Kind == KindYCSB && g.AfterOthers == 0
}

// clientProc is a running client process, as the harness sees it.
type clientProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Reader
	stderr strings.Builder
}

// startClientProc starts a client process for job and returns once its
// clients are connected.
func startClientProc(ctx context.Context, job clientJob) (*clientProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	p := &clientProc{cmd: exec.CommandContext(ctx, self, ClientProcessArg)}
	// The harness's process is pinned to the load generator's CPUs, which
	// the child inherits; one Go P per CPU as there.
	p.cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(runtime.GOMAXPROCS(0)))
	p.cmd.Stderr = &p.stderr
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.out = bufio.NewReaderSize(stdout, 1<<20)
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	if err := json.NewEncoder(p.stdin).Encode(job); err != nil {
		return nil, p.fail(err)
	}
	line, err := p.out.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		return nil, p.fail(fmt.Errorf("no ready line (%q, %v)", line, err))
	}
	return p, nil
}

// begin tells the client process the run's start.
func (p *clientProc) begin(start time.Time) error {
	_, err := fmt.Fprintf(p.stdin, "%d\n", start.UnixNano())
	return err
}

// wait returns the recorders of the job's groups, by group and client,
// once the client process has run them.
func (p *clientProc) wait() ([][]*recorder, error) {
	var wire [][]recorderWire
	derr := json.NewDecoder(p.out).Decode(&wire)
	werr := p.cmd.Wait()
	if err := errors.Join(werr, derr); err != nil {
		return nil, fmt.Errorf("client process: %w; its stderr: %s", err, strings.TrimSpace(p.stderr.String()))
	}
	recs := make([][]*recorder, len(wire))
	for i, g := range wire {
		for _, w := range g {
			recs[i] = append(recs[i], w.recorder())
		}
	}
	return recs, nil
}

// fail stops the process after err and says what it said.
func (p *clientProc) fail(err error) error {
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	return fmt.Errorf("client process: %w; its stderr: %s", err, strings.TrimSpace(p.stderr.String()))
}

// kill stops the process if it still runs (a run that failed).
func (p *clientProc) kill() {
	if p.cmd.ProcessState == nil {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	}
}

// RunIfClientProcess makes this process the client process, and exits,
// when its arguments (os.Args) ask for one: in tierdb-bench, and in a test
// binary whose tests run scenarios.
func RunIfClientProcess(args []string) {
	if len(args) < 2 || args[1] != ClientProcessArg {
		return
	}
	if err := clientProcessMain(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "tierdb-bench client process:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// clientProcessMain is the client process: it runs the job on stdin and
// writes its recorders to stdout.
func clientProcessMain(in io.Reader, out io.Writer) error {
	r := bufio.NewReader(in)
	var job clientJob
	line, err := r.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("reading the job: %w", err)
	}
	if err := json.Unmarshal(line, &job); err != nil {
		return fmt.Errorf("reading the job: %w", err)
	}
	ctx := context.Background()
	wl := newWorkload(job.Scenario)
	wl.nextID.Store(childIDBase)
	var workers [][]*worker
	defer func() {
		for _, ws := range workers {
			for _, w := range ws {
				w.client.close()
			}
		}
	}()
	for _, cg := range job.Groups {
		var ws []*worker
		for ci, seed := range cg.Seeds {
			c, err := connectTierClient(ctx, job.Addr, fmt.Sprintf("bench-%s-%d", cg.Group.Name, ci), cg.Group.Tier, cg.Group.WriteConcern, cg.ReadPreference, cg.Logins[ci])
			if err != nil {
				return fmt.Errorf("client %d of group %s: %w", ci, cg.Group.Name, err)
			}
			rec := newRecorder(*cg.Group.Samples, seed)
			if job.Period > 0 {
				rec.keepPeriods(job.Period.D())
			}
			ws = append(ws, &worker{g: cg.Group, wl: wl, client: c, rec: rec, done: &atomic.Int64{}, rng: clientRand(seed, job.Variant)})
		}
		workers = append(workers, ws)
	}
	if _, err := fmt.Fprintln(out, "ready"); err != nil {
		return err
	}
	line, err = r.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("reading the start: %w", err)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(line)), 10, 64)
	if err != nil {
		return fmt.Errorf("reading the start: %w", err)
	}
	start := time.Unix(0, ns)
	ctx, cancel := context.WithDeadline(ctx, start.Add(job.Timeout.D()))
	defer cancel()
	done := make(chan struct{})
	n := 0
	for _, ws := range workers {
		for _, w := range ws {
			w.start = start
			n++
			go func() {
				w.run(ctx)
				done <- struct{}{}
			}()
		}
	}
	for range n {
		<-done
	}
	wire := make([][]recorderWire, len(workers))
	for i, ws := range workers {
		for _, w := range ws {
			if err := w.client.checkTier(ctx); err != nil {
				return err
			}
			wire[i] = append(wire[i], w.rec.wire())
		}
	}
	return json.NewEncoder(out).Encode(wire)
}

// recorderWire is a recorder as the client process sends it.
type recorderWire struct {
	Hist        histWire    `json:"hist"`
	Series      []int32     `json:"series,omitempty"`
	LatSum      float64     `json:"latSum"`
	LatSumSq    float64     `json:"latSumSq"`
	Ops         int64       `json:"ops"`
	Errs        int64       `json:"errs"`
	FirstErr    string      `json:"firstErr,omitempty"`
	First       int64       `json:"first"`
	Last        int64       `json:"last"`
	Keep        bool        `json:"keep"`
	Samples     [][2]int64  `json:"samples,omitempty"`
	Reads       []int32     `json:"reads,omitempty"`
	Period      int64       `json:"period,omitempty"`
	PeriodHists []*histWire `json:"periodHists,omitempty"`
}

type histWire struct {
	Counts   []uint64 `json:"counts,omitempty"`
	N        uint64   `json:"n"`
	Sum      float64  `json:"sum"`
	Min, Max uint64
}

func (h *Histogram) wire() histWire {
	return histWire{Counts: h.counts, N: h.n, Sum: h.sum, Min: h.min, Max: h.max}
}

func (w histWire) histogram() Histogram {
	return Histogram{counts: w.Counts, n: w.N, sum: w.Sum, min: w.Min, max: w.Max}
}

func (r *recorder) wire() recorderWire {
	w := recorderWire{Hist: r.hist.wire(), Series: r.series, LatSum: r.latSum, LatSumSq: r.latSumSq, Ops: r.ops, Errs: r.errs, FirstErr: r.firstErr,
		First: int64(r.first), Last: int64(r.last), Keep: r.keep, Samples: r.samples, Reads: r.reads, Period: int64(r.period)}
	for _, h := range r.periodHists {
		var hw *histWire
		if h != nil {
			x := h.wire()
			hw = &x
		}
		w.PeriodHists = append(w.PeriodHists, hw)
	}
	return w
}

func (w recorderWire) recorder() *recorder {
	r := &recorder{hist: w.Hist.histogram(), series: w.Series, latSum: w.LatSum, latSumSq: w.LatSumSq, ops: w.Ops, errs: w.Errs, firstErr: w.FirstErr,
		first: time.Duration(w.First), last: time.Duration(w.Last), keep: w.Keep, samples: w.Samples, reads: w.Reads, period: time.Duration(w.Period)}
	for _, hw := range w.PeriodHists {
		var h *Histogram
		if hw != nil {
			x := hw.histogram()
			h = &x
		}
		r.periodHists = append(r.periodHists, h)
	}
	return r
}
