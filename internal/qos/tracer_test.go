package qos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// tracer drives a Channel through a script of named requests and keeps a
// model of where each one is, built from the Channel's event hook and from
// what Admit returns. It never sleeps: after each operation it blocks until
// every request it knows of has reached a resting state (running, waiting
// unsignalled, held by the script, or gone).
type tracer struct {
	t       *testing.T
	c       *Channel
	clk     *fakeClock
	events  chan event
	results chan traceResult
	reqs    map[string]*traceReq
	byW     map[*waiter]*traceReq
	// entering is the request whose Admit call is in flight; the harness
	// starts one at a time, so the next queue or fast-path admit event is
	// its.
	entering *traceReq
	woke     []string // signal order during the current step

	gmu   sync.Mutex
	gates map[*waiter]chan struct{} // held waiters stop before re-checking
}

type reqState int

const (
	stEntering   reqState = iota // Admit called, nothing seen yet
	stWaiting                    // queued, no signal in flight
	stWoken                      // signalled, re-check pending
	stAdmitting                  // admitted, Admit not returned yet
	stRunning                    // Admit returned done
	stCancelling                 // ctx cancelled while waiting
	stCancelled                  // Admit returned ctx.Err()
	stExited                     // done called
)

type traceReq struct {
	name     string
	tier     Tier
	internal bool
	cancel   context.CancelFunc
	done     func()
	state    reqState
	w        *waiter
	held     bool
}

type traceResult struct {
	r    *traceReq
	done func()
	err  error
}

func newTracer(t *testing.T, opts ChannelOptions) *tracer {
	t.Helper()
	clk := newFakeClock()
	opts.Clock = clk
	c, err := NewChannel(opts)
	if err != nil {
		t.Fatal(err)
	}
	tr := &tracer{
		t:       t,
		c:       c,
		clk:     clk,
		events:  make(chan event, 4096),
		results: make(chan traceResult, 64),
		reqs:    map[string]*traceReq{},
		byW:     map[*waiter]*traceReq{},
		gates:   map[*waiter]chan struct{}{},
	}
	c.hooks = &hooks{
		event: func(ev event) { tr.events <- ev },
		beforeRecheck: func(w *waiter) {
			tr.gmu.Lock()
			g := tr.gates[w]
			tr.gmu.Unlock()
			if g != nil {
				<-g
			}
		},
	}
	t.Cleanup(tr.releaseAll)
	return tr
}

// releaseAll lets every goroutine the script left behind finish, so a
// failing test does not leak blocked goroutines into the next one.
func (tr *tracer) releaseAll() {
	tr.gmu.Lock()
	for w, g := range tr.gates {
		close(g)
		delete(tr.gates, w)
	}
	tr.gmu.Unlock()
	for _, r := range tr.reqs {
		if r.cancel != nil {
			r.cancel()
		}
	}
}

func (tr *tracer) handleEvent(ev event) {
	switch ev.kind {
	case evQueue:
		r := tr.entering
		if r == nil {
			tr.t.Fatalf("queue event with no request entering")
		}
		r.w = ev.w
		tr.byW[ev.w] = r
		r.state = stWaiting
	case evSignal:
		r := tr.byW[ev.w]
		tr.woke = append(tr.woke, r.name)
		if r.state == stWaiting {
			r.state = stWoken
		}
	case evAdmit:
		r := tr.entering
		if ev.w != nil {
			r = tr.byW[ev.w]
		}
		r.state = stAdmitting
	case evRewait:
		if r := tr.byW[ev.w]; r.state == stWoken {
			r.state = stWaiting
		}
	case evAbandon:
		tr.byW[ev.w].state = stCancelling
	}
}

func (tr *tracer) handleResult(res traceResult) {
	r := res.r
	if res.err != nil {
		if !errors.Is(res.err, context.Canceled) {
			tr.t.Fatalf("%s: Admit returned %v, want context.Canceled", r.name, res.err)
		}
		if res.done != nil {
			tr.t.Fatalf("%s: Admit returned a done func with an error", r.name)
		}
		r.state = stCancelled
		return
	}
	r.done = res.done
	r.state = stRunning
}

func (tr *tracer) settled() bool {
	for _, r := range tr.reqs {
		switch r.state {
		case stWaiting, stRunning, stCancelled, stExited:
		case stWoken, stCancelling:
			if !r.held {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// next handles one event or result, blocking until there is one. Events go
// first: a request's events are sent before its Admit returns, so handling a
// result before the events that precede it would apply them to the wrong
// state.
func (tr *tracer) next() {
	select {
	case ev := <-tr.events:
		tr.handleEvent(ev)
		return
	default:
	}
	select {
	case ev := <-tr.events:
		tr.handleEvent(ev)
	case res := <-tr.results:
		tr.drainEvents()
		tr.handleResult(res)
	}
}

func (tr *tracer) drainEvents() {
	for {
		select {
		case ev := <-tr.events:
			tr.handleEvent(ev)
		default:
			return
		}
	}
}

// settle processes everything already reported, then blocks until the
// script's requests are at rest.
func (tr *tracer) settle() {
	for {
		tr.drainEvents()
		if tr.settled() {
			return
		}
		tr.next()
	}
}

func (tr *tracer) req(name string) *traceReq {
	r := tr.reqs[name]
	if r == nil {
		tr.t.Fatalf("unknown request %q", name)
	}
	return r
}

// do runs one script word:
//
//	+H1 +N1 +L1   admit a high/normal/low request (+IH1 etc.: internal)
//	-H1           call its done; --H1 calls it again
//	xN1           cancel its context
//	hold=N1       make N1 stop after its next wake-up, before re-checking
//	free=N1       let it go on
//	thr=2         SetThreshold
//	guard=10ms    SetStarvationGuard
//	ant=1ms       SetAnticipation; oant=1ms SetObjectiveAnticipation
//	adv=10ms      advance the fake clock
func (tr *tracer) do(word string) {
	tr.t.Helper()
	key, val, isKV := strings.Cut(word, "=")
	switch {
	case isKV && key == "thr":
		n, err := strconv.Atoi(val)
		if err != nil {
			tr.t.Fatal(err)
		}
		if err := tr.c.SetThreshold(n); err != nil {
			tr.t.Fatal(err)
		}
	case isKV && key == "guard":
		tr.c.SetStarvationGuard(mustDuration(tr.t, val))
	case isKV && key == "ant":
		tr.c.SetAnticipation(mustDuration(tr.t, val))
	case isKV && key == "oant":
		tr.c.SetObjectiveAnticipation(mustDuration(tr.t, val))
	case isKV && key == "adv":
		tr.clk.Advance(mustDuration(tr.t, val))
	case isKV && key == "hold":
		r := tr.req(val)
		if r.w == nil {
			tr.t.Fatalf("hold %s: not waiting", val)
		}
		r.held = true
		tr.gmu.Lock()
		tr.gates[r.w] = make(chan struct{})
		tr.gmu.Unlock()
	case isKV && key == "free":
		r := tr.req(val)
		r.held = false
		tr.gmu.Lock()
		close(tr.gates[r.w])
		delete(tr.gates, r.w)
		tr.gmu.Unlock()
	case strings.HasPrefix(word, "+"):
		tr.admit(word[1:])
	case strings.HasPrefix(word, "--"):
		r := tr.req(word[2:])
		if r.state != stExited {
			tr.t.Fatalf("%s: second done before the first", r.name)
		}
		r.done()
	case strings.HasPrefix(word, "-"):
		r := tr.req(word[1:])
		if r.state != stRunning {
			tr.t.Fatalf("%s: done while not running (state %d)", r.name, r.state)
		}
		r.done()
		r.state = stExited
	case strings.HasPrefix(word, "x"):
		r := tr.req(word[1:])
		r.cancel()
		if r.state == stWaiting || r.state == stWoken {
			r.state = stCancelling
		}
	default:
		tr.t.Fatalf("bad script word %q", word)
	}
	tr.settle()
}

func (tr *tracer) admit(name string) {
	if _, dup := tr.reqs[name]; dup {
		tr.t.Fatalf("request %s admitted twice", name)
	}
	r := &traceReq{name: name}
	spec := name
	if strings.HasPrefix(spec, "I") {
		r.internal = true
		spec = spec[1:]
	}
	switch spec[0] {
	case 'H':
		r.tier = High
	case 'N':
		r.tier = Normal
	case 'L':
		r.tier = Low
	default:
		tr.t.Fatalf("request name %q must start with H, N, L or I", name)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	tr.reqs[name] = r
	tr.entering = r
	go func() {
		done, err := chanAdmit(tr.c, ctx, r.tier, r.internal)
		tr.results <- traceResult{r: r, done: done, err: err}
	}()
	// The request is at rest once it is queued or running; until then the
	// next events are its own.
	for r.state == stEntering || r.state == stAdmitting {
		tr.next()
	}
	tr.entering = nil
}

func mustDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// check compares the model and the channel with want, a space-separated
// list of fields:
//
//	run=H1,N1     requests running (any order); omitted means none
//	wait=N2,L1    queued requests, normals then lows, each in queue order;
//	              omitted means none
//	woke=N1,N2    signals sent during the step, in order (checked if given)
//	gN=1 gL=0     guard admissions so far (checked if given)
func (tr *tracer) check(step int, want string) {
	tr.t.Helper()
	fields := map[string]string{}
	for f := range strings.FieldsSeq(want) {
		k, v, _ := strings.Cut(f, "=")
		fields[k] = v
	}
	list := func(s string) []string {
		if s == "" {
			return []string{}
		}
		return strings.Split(s, ",")
	}
	fail := func(format string, args ...any) {
		tr.t.Helper()
		tr.t.Errorf("step %d: %s", step, fmt.Sprintf(format, args...))
	}

	var running []string
	var inProc [NumTiers]int
	for _, r := range tr.reqs {
		if r.state == stRunning {
			running = append(running, r.name)
			if !r.internal {
				inProc[r.tier]++
			}
		}
	}
	slices.Sort(running)
	wantRun := list(fields["run"])
	slices.Sort(wantRun)
	if !slices.Equal(running, wantRun) && !(len(running) == 0 && len(wantRun) == 0) {
		fail("running %v, want %v", running, wantRun)
	}

	// The queue order comes from the channel itself, so that "keeps its
	// place" and FIFO are checked against the real queues.
	var queued []string
	var waiting [NumTiers]int
	var normProc, outstanding int
	tr.c.mu.Lock()
	for _, t := range []Tier{Normal, Low} {
		q := &tr.c.queues[t]
		n, unsig := 0, 0
		for w := q.head; w != nil; w = w.next {
			queued = append(queued, tr.byW[w].name)
			n++
			if !w.signalled {
				unsig++
			}
		}
		if n != q.n || unsig != q.unsignalled {
			fail("%v queue: walked %d (%d unsignalled), recorded %d (%d)", t, n, unsig, q.n, q.unsignalled)
		}
		waiting[t] = n
	}
	normProc = tr.c.normProcLocked()
	outstanding = tr.c.tokens.outstanding()
	tr.c.mu.Unlock()
	if wantWait := list(fields["wait"]); !slices.Equal(queued, wantWait) && !(len(queued) == 0 && len(wantWait) == 0) {
		fail("queued %v, want %v", queued, wantWait)
	}
	for _, name := range queued {
		if s := tr.reqs[name].state; s != stWaiting && s != stWoken && s != stCancelling {
			fail("%s is queued but in state %d", name, s)
		}
	}
	if want := inProc[Normal] + waiting[Normal]; normProc != want {
		fail("len(norm_proc) = %d, want %d running + %d waiting", normProc, inProc[Normal], waiting[Normal])
	}
	if want := inProc[High] + inProc[Normal] + inProc[Low]; outstanding != want {
		fail("%d done tokens outstanding, want %d", outstanding, want)
	}

	st := tr.c.Stats()
	for t := range NumTiers {
		if got := st.Tiers[t].InProcess; got != inProc[t] {
			fail("Stats %v InProcess = %d, want %d", t, got, inProc[t])
		}
		if got := st.Tiers[t].Waiting; got != waiting[t] {
			fail("Stats %v Waiting = %d, want %d", t, got, waiting[t])
		}
	}
	if w, ok := fields["woke"]; ok {
		if got := list(w); !slices.Equal(tr.woke, got) && !(len(tr.woke) == 0 && len(got) == 0) {
			fail("woke %v, want %v", tr.woke, got)
		}
	}
	for key, t := range map[string]Tier{"gN": Normal, "gL": Low} {
		if v, ok := fields[key]; ok {
			n, _ := strconv.Atoi(v)
			if got := st.Tiers[t].GuardAdmissions; got != uint64(n) {
				fail("%v GuardAdmissions = %d, want %d", t, got, n)
			}
		}
	}
}

type traceStep struct {
	do   string // script words, run in order
	want string // see tracer.check
}

func (tr *tracer) run(steps []traceStep) {
	tr.t.Helper()
	for i, s := range steps {
		tr.woke = tr.woke[:0]
		for w := range strings.FieldsSeq(s.do) {
			tr.do(w)
		}
		tr.check(i+1, s.want)
		if tr.t.Failed() {
			tr.t.Fatalf("stopping after step %d (%q)", i+1, s.do)
		}
	}
}
