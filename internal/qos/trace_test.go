package qos

import (
	"testing"
	"time"
)

func TestChannelTraces(t *testing.T) {
	tests := []struct {
		name  string
		opts  ChannelOptions
		steps []traceStep
	}{
		{
			name: "threshold 1: high blocks normal and low, exits wake in tier order",
			steps: []traceStep{
				{"+H1", "run=H1"},
				{"+N1", "run=H1 wait=N1"},
				{"+L1", "run=H1 wait=N1,L1"},
				{"+H2 +H3", "run=H1,H2,H3 wait=N1,L1"},
				{"-H1 -H2", "run=H3 wait=N1,L1 woke="},
				// N1 may run; L1 is still held back by N1 itself.
				{"-H3", "run=N1 wait=L1 woke=N1"},
				{"-N1", "run=L1 woke=L1"},
				{"-L1", ""},
			},
		},
		{
			name: "a waiting normal blocks lows at threshold 1; internal requests never wait",
			steps: []traceStep{
				{"+H1 +N1", "run=H1 wait=N1"},
				// Stop N1 between its wake-up and its re-check: no high
				// is in process, but N1 still counts in norm_proc.
				{"hold=N1 -H1", "wait=N1 woke=N1"},
				{"+L1", "wait=N1,L1"},
				{"+IL1 +IN1 +IH1", "run=IL1,IN1,IH1 wait=N1,L1"},
				{"free=N1", "run=IL1,IN1,IH1,N1 wait=L1 woke="},
				{"-N1", "run=IL1,IN1,IH1,L1 woke=L1"},
				{"-IL1 -IN1 -IH1 -L1", ""},
			},
		},
		{
			name: "a woken normal that meets a new high waits again at the front",
			steps: []traceStep{
				{"+H1 +N1 +N2 +L1", "run=H1 wait=N1,N2,L1"},
				{"hold=N1 -H1", "run=N2 wait=N1,L1 woke=N1,N2"},
				{"+H2 +N3", "run=N2,H2 wait=N1,N3,L1"},
				{"free=N1", "run=N2,H2 wait=N1,N3,L1"},
				{"-H2", "run=N2,N1,N3 wait=L1 woke=N1,N3"},
				{"-N1 -N2 -N3", "run=L1 woke=L1"},
				{"-L1", ""},
			},
		},
		{
			name: "FIFO within a tier, with a cancellation in the middle",
			steps: []traceStep{
				{"+H1 +N1 +L1 +N2 +L2 +N3 +L3", "run=H1 wait=N1,N2,N3,L1,L2,L3"},
				{"xN2 xL2", "run=H1 wait=N1,N3,L1,L3"},
				{"-H1", "run=N1,N3 wait=L1,L3 woke=N1,N3"},
				{"-N3", "run=N1 wait=L1,L3 woke="},
				{"-N1", "run=L1,L3 woke=L1,L3"},
				{"-L1 -L3", ""},
			},
		},
		{
			name: "threshold 2",
			opts: ChannelOptions{Threshold: 2},
			steps: []traceStep{
				{"+H1 +N1", "run=H1,N1"},
				{"+L1", "run=H1,N1 wait=L1"},
				{"+H2 +N2", "run=H1,H2,N1 wait=N2,L1"},
				{"-N1", "run=H1,H2 wait=N2,L1 woke="},
				{"-H1", "run=H2,N2 wait=L1 woke=N2"},
				{"-H2", "run=N2,L1 woke=L1"},
				{"+H3 +N3", "run=H3,N2,N3,L1"},
				{"+L2", "run=H3,N2,N3,L1 wait=L2"},
				{"-H3 -N2", "run=N3,L1,L2 woke=L2"},
				{"-N3 -L1 -L2", ""},
			},
		},
		{
			name: "threshold 3",
			opts: ChannelOptions{Threshold: 3},
			steps: []traceStep{
				{"+H1 +H2 +N1", "run=H1,H2,N1"},
				{"+L1", "run=H1,H2,N1 wait=L1"},
				{"+H3 +N2", "run=H1,H2,H3,N1 wait=N2,L1"},
				{"-N1", "run=H1,H2,H3 wait=N2,L1 woke="},
				{"-H1", "run=H2,H3,N2 wait=L1 woke=N2"},
				{"-H2", "run=H3,N2,L1 woke=L1"},
				{"-H3 -N2 -L1", ""},
			},
		},
		{
			name: "raising and lowering the threshold at run time",
			steps: []traceStep{
				{"+H1 +N1 +L1", "run=H1 wait=N1,L1"},
				{"thr=2", "run=H1,N1 wait=L1 woke=N1"},
				{"thr=3", "run=H1,N1,L1 woke=L1"},
				// Lowering never preempts; it only holds back newcomers.
				{"thr=1", "run=H1,N1,L1"},
				{"+N2 +L2 +H2", "run=H1,H2,N1,L1 wait=N2,L2"},
				{"-H1", "run=H2,N1,L1 wait=N2,L2 woke="},
				{"-H2", "run=N1,N2,L1 wait=L2 woke=N2"},
				{"thr=4", "run=N1,N2,L1,L2 woke=L2"},
				{"-N1 -N2 -L1 -L2", ""},
			},
		},
		{
			name: "cancelling a woken normal unblocks the lows it held back",
			steps: []traceStep{
				{"+H1 +N1 +L1", "run=H1 wait=N1,L1"},
				{"hold=N1 -H1", "wait=N1,L1 woke=N1"},
				{"xN1 free=N1", "run=L1 woke=L1"},
				{"+N2", "run=L1,N2"},
				{"-L1 -N2", ""},
			},
		},
		{
			name: "cancelling a waiting normal at threshold 2 unblocks lows",
			opts: ChannelOptions{Threshold: 2},
			steps: []traceStep{
				{"+H1 +H2 +N1 +L1", "run=H1,H2 wait=N1,L1"},
				{"hold=N1 -H2", "run=H1 wait=N1,L1 woke=N1"},
				{"xN1 free=N1", "run=H1,L1 woke=L1"},
				{"-H1 -L1", ""},
			},
		},
		{
			name: "cancelling a waiting low touches nothing else",
			steps: []traceStep{
				{"+H1 +N1 +L1 +L2", "run=H1 wait=N1,L1,L2"},
				{"xL1", "run=H1 wait=N1,L2 woke="},
				{"-H1", "run=N1 wait=L2 woke=N1"},
				{"-N1", "run=L2 woke=L2"},
				{"-L2", ""},
			},
		},
		{
			name: "calling done twice does not decrement twice",
			steps: []traceStep{
				{"+H1 +H2 +N1", "run=H1,H2 wait=N1"},
				{"-H1", "run=H2 wait=N1"},
				{"--H1", "run=H2 wait=N1 woke="},
				{"+H3 -H2 --H2", "run=H3 wait=N1 woke="},
				{"-H3", "run=N1 woke=N1"},
				{"-N1 --N1 --H3", ""},
			},
		},
		{
			name: "starvation guard off: nothing leaks however long highs stay",
			opts: ChannelOptions{},
			steps: []traceStep{
				{"+H1 +N1 +L1", "run=H1 wait=N1,L1"},
				{"adv=1h", "run=H1 wait=N1,L1 woke= gN=0 gL=0"},
				{"-H1", "run=N1 wait=L1"},
				{"-N1", "run=L1"},
				{"-L1", ""},
			},
		},
		{
			name: "starvation guard on: exactly one lower-tier admission per interval",
			opts: ChannelOptions{StarvationGuard: 10 * time.Millisecond},
			steps: []traceStep{
				{"+H1 +N1 +N2 +L1 +L2", "run=H1 wait=N1,N2,L1,L2"},
				{"adv=9ms", "run=H1 wait=N1,N2,L1,L2 woke="},
				{"adv=1ms", "run=H1,N1 wait=N2,L1,L2 woke=N1 gN=1 gL=0"},
				{"adv=9ms", "run=H1,N1 wait=N2,L1,L2 woke="},
				{"adv=1ms", "run=H1,N1,N2 wait=L1,L2 woke=N2 gN=2"},
				// Normals first, then the oldest low.
				{"adv=10ms", "run=H1,N1,N2,L1 wait=L2 woke=L1 gL=1"},
				{"adv=10ms", "run=H1,N1,N2,L1,L2 woke=L2 gL=2"},
				{"adv=50ms", "run=H1,N1,N2,L1,L2 woke="},
				{"-H1 -N1 -N2 -L1 -L2", "gN=2 gL=2"},
			},
		},
		{
			name: "starvation guard: only waiters that waited a full interval count, normals first",
			opts: ChannelOptions{StarvationGuard: 10 * time.Millisecond},
			steps: []traceStep{
				{"+H1 +L1", "run=H1 wait=L1"},
				{"adv=5ms +N1", "run=H1 wait=N1,L1"},
				// L1 has starved for 10ms, N1 only for 5ms.
				{"adv=5ms", "run=H1,L1 wait=N1 woke=L1 gL=1"},
				{"adv=5ms", "run=H1,L1 wait=N1 woke="},
				{"adv=5ms", "run=H1,L1,N1 woke=N1 gN=1"},
				// A newcomer is not starving yet.
				{"+N2 adv=9ms", "run=H1,L1,N1 wait=N2 woke="},
				{"adv=1ms", "run=H1,L1,N1,N2 woke=N2 gN=2"},
				{"-H1 -L1 -N1 -N2", ""},
			},
		},
		{
			name: "starvation guard switched on and off at run time",
			steps: []traceStep{
				{"+H1 +N1 +N2", "run=H1 wait=N1,N2"},
				{"adv=1s", "run=H1 wait=N1,N2"},
				// N1 and N2 have starved long already: one goes at once.
				{"guard=10ms adv=0s", "run=H1,N1 wait=N2 woke=N1 gN=1"},
				{"guard=0s adv=1s", "run=H1,N1 wait=N2 woke= gN=1"},
				{"-H1", "run=N1,N2 woke=N2 gN=1"},
				{"-N1 -N2", ""},
			},
		},
		{
			name: "a guard pass is not admitted twice nor counted when the tier is free anyway",
			opts: ChannelOptions{StarvationGuard: 10 * time.Millisecond},
			steps: []traceStep{
				{"+H1 +N1 +N2", "run=H1 wait=N1,N2"},
				{"hold=N1 adv=10ms", "run=H1 wait=N1,N2 woke=N1"},
				// The pass is pending on N1; the next interval goes to N2.
				{"adv=10ms", "run=H1,N2 wait=N1 woke=N2 gN=1"},
				{"-H1 free=N1", "run=N1,N2 gN=1"},
				{"-N1 -N2", ""},
			},
		},
		{
			name: "a guard pass whose holder is cancelled passes to the next starving waiter",
			opts: ChannelOptions{StarvationGuard: 10 * time.Millisecond},
			steps: []traceStep{
				{"+H1 +N1 +N2", "run=H1 wait=N1,N2"},
				{"hold=N1 adv=10ms", "run=H1 wait=N1,N2 woke=N1"},
				{"xN1 free=N1", "run=H1,N2 woke=N2 gN=1"},
				{"-H1 -N2", ""},
			},
		},
		{
			name: "anticipation: the gap after the last high holds lower tiers until it runs out",
			opts: ChannelOptions{Anticipation: 2 * time.Millisecond},
			steps: []traceStep{
				{"+H1 +N1 +L1", "run=H1 wait=N1,L1"},
				{"-H1", "wait=N1,L1 woke="},
				{"+N2", "wait=N1,N2,L1"},
				{"adv=1ms", "wait=N1,N2,L1 woke="},
				{"adv=1ms", "run=N1,N2 wait=L1 woke=N1,N2"},
				// Only the high tier's own exit anticipates.
				{"-N1 -N2", "run=L1 woke=L1"},
				{"-L1 adv=10ms", ""},
			},
		},
		{
			name: "anticipation: a high request in the gap ends it; the next exit starts a new one",
			opts: ChannelOptions{Anticipation: 2 * time.Millisecond},
			steps: []traceStep{
				{"+H1 +N1", "run=H1 wait=N1"},
				{"-H1 adv=1ms", "wait=N1"},
				{"+H2", "run=H2 wait=N1"},
				// The first period's timer must not release N1 now.
				{"adv=1500us", "run=H2 wait=N1 woke="},
				{"-H2 adv=1999us", "wait=N1 woke="},
				{"adv=1us", "run=N1 woke=N1"},
				{"-N1", ""},
			},
		},
		{
			name: "anticipation at threshold 2 counts as one high in process",
			opts: ChannelOptions{Threshold: 2, Anticipation: time.Millisecond},
			steps: []traceStep{
				{"+H1 -H1", ""},
				{"+N1", "run=N1"},
				{"+L1", "run=N1 wait=L1"},
				{"adv=1ms", "run=N1,L1 woke=L1"},
				{"-N1 -L1", ""},
			},
		},
		{
			name: "anticipation switched off at run time releases what it holds",
			opts: ChannelOptions{Anticipation: time.Hour},
			steps: []traceStep{
				{"+H1 +N1 +L1 -H1", "wait=N1,L1"},
				{"ant=0s", "run=N1 wait=L1 woke=N1"},
				{"-N1", "run=L1 woke=L1"},
				{"-L1 +H2 -H2 +N2", "run=N2"},
				{"-N2", ""},
			},
		},
		{
			name: "the objectives' anticipation: the longer of it and the configured one holds; at zero both, held lowers go",
			opts: ChannelOptions{Anticipation: time.Millisecond},
			steps: []traceStep{
				{"oant=3ms +H1 +N1 -H1", "wait=N1"},
				{"adv=1ms", "wait=N1 woke="},
				{"adv=2ms", "run=N1 woke=N1"},
				{"-N1 oant=500us +H2 +N2 -H2", "wait=N2"},
				{"adv=1ms", "run=N2 woke=N2"},
				{"-N2 ant=0s +H3 +N3 -H3", "wait=N3"},
				{"adv=499us", "wait=N3 woke="},
				{"oant=0s", "run=N3 woke=N3"},
				{"-N3 +H4 -H4 +N4", "run=N4"},
				{"-N4", ""},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTracer(t, tc.opts)
			tr.run(tc.steps)
			if n := tr.clk.pending(); tc.opts.StarvationGuard == 0 && tc.opts.Anticipation == 0 && n != 0 {
				t.Errorf("%d timers pending with the guard and anticipation off", n)
			}
		})
	}
}
