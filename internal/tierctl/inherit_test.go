package tierctl

import (
	"os/exec"
	"syscall"
	"testing"

	"tierdb/internal/osprio"
	"tierdb/internal/pgmanage"
	"tierdb/internal/qos"
)

// fakePostgres starts a sleeping process whose command line reads like a
// PostgreSQL process's ("postgres: walwriter"), so the controller takes it
// for one of its server's (isLocalPostgres), in a session of its own as
// each backend is (the controller sets the session's nice level too), and
// kills it when the test ends.
func fakePostgres(t *testing.T, title string) int {
	t.Helper()
	path, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep(1)")
	}
	cmd := &exec.Cmd{Path: path, Args: []string{"postgres: " + title, "30"}, SysProcAttr: &syscall.SysProcAttr{Setsid: true}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd.Process.Pid
}

func niceOf(t *testing.T, pid int) int {
	t.Helper()
	n, err := osprio.Nice(pid)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// needsNegativeNice skips the test where this process may not give pid a
// negative nice level (no CAP_SYS_NICE).
func needsNegativeNice(t *testing.T, pid int) {
	t.Helper()
	if err := osprio.SetNice(pid, -1); osprio.IsPermission(err) {
		t.Skip("negative nice levels need CAP_SYS_NICE")
	} else if err != nil {
		t.Fatal(err)
	}
	if err := osprio.SetNice(pid, 0); err != nil {
		t.Fatal(err)
	}
}

// SetBoosted gives exactly the waited-for lower-tier backends the high
// tier's nice level (never a high-tier backend's count, never a process
// that is not a backend of ours) and puts those no longer waited for back
// to their own tier's level, which for a lower tier is its positive level
// only while the high tier is active.
func TestSetBoostedRaisesExactlyTheHoldersAndPutsThemBack(t *testing.T) {
	low, normal, high := fakePostgres(t, "low"), fakePostgres(t, "normal"), fakePostgres(t, "high")
	stranger := fakePostgres(t, "not ours")
	needsNegativeNice(t, stranger)
	strangerNice := niceOf(t, stranger)
	c := New(Options{}, quietConfig())
	defer c.Close()
	c.BackendOpened(low, qos.Low)
	c.BackendOpened(normal, qos.Normal)
	c.BackendOpened(high, qos.High)
	c.mu.Lock()
	c.niced = true // as while the high tier is active
	c.apply(low, qos.Low)
	c.apply(normal, qos.Normal)
	c.mu.Unlock()
	if niceOf(t, low) != 19 || niceOf(t, normal) != 10 || niceOf(t, high) != -19 {
		t.Fatalf("tiers' levels: low %d, normal %d, high %d", niceOf(t, low), niceOf(t, normal), niceOf(t, high))
	}

	c.SetBoosted([]int{low, high, stranger})
	if niceOf(t, low) != -19 || niceOf(t, normal) != 10 || niceOf(t, stranger) != strangerNice {
		t.Errorf("boosting the low backend: low %d, normal %d, a stranger %d", niceOf(t, low), niceOf(t, normal), niceOf(t, stranger))
	}
	if st := c.Status(); len(st.Boosted) != 1 || st.Boosted[0] != low || st.Boosts != 1 {
		t.Errorf("status: boosted %v, %d boosts; want [%d], 1", st.Boosted, st.Boosts, low)
	}
	c.SetBoosted([]int{normal, low}) // low still waited for: no second boost
	if niceOf(t, low) != -19 || niceOf(t, normal) != -19 || c.Status().Boosts != 2 {
		t.Errorf("both waited for: low %d, normal %d, %d boosts", niceOf(t, low), niceOf(t, normal), c.Status().Boosts)
	}
	c.SetBoosted(nil)
	if niceOf(t, low) != 19 || niceOf(t, normal) != 10 {
		t.Errorf("after: low %d, normal %d; want their tiers' 19 and 10", niceOf(t, low), niceOf(t, normal))
	}
	// With the high tier calm the lower tiers run at 0, as with QoS off.
	c.SetBoosted([]int{low})
	c.mu.Lock()
	c.niced = false
	c.mu.Unlock()
	c.SetBoosted(nil)
	if niceOf(t, low) != 0 {
		t.Errorf("after, high tier calm: low %d, want 0", niceOf(t, low))
	}
}

// The WAL path's processes (WAL writer, senders, a standby's receiver and
// startup process) get the high tier's nice level while it is active and
// 0 after; other background processes are left alone.
func TestWALPathFollowsTheHighTier(t *testing.T) {
	walwriter, receiver, checkpointer := fakePostgres(t, "walwriter"), fakePostgres(t, "walreceiver"), fakePostgres(t, "checkpointer")
	needsNegativeNice(t, walwriter)
	listed := 0
	procs := func() ([]pgmanage.BackgroundProcess, error) {
		listed++
		return []pgmanage.BackgroundProcess{{PID: walwriter, Title: "walwriter"}, {PID: receiver, Title: "walreceiver"}, {PID: checkpointer, Title: "checkpointer"}}, nil
	}
	c := New(Options{BackgroundProcesses: procs}, quietConfig())
	defer c.Close()
	before := niceOf(t, checkpointer)
	c.boostWALPath(true)
	c.boostWALPath(true) // no change: not listed again
	if niceOf(t, walwriter) != -19 || niceOf(t, receiver) != -19 || niceOf(t, checkpointer) != before {
		t.Errorf("boosted: walwriter %d, walreceiver %d, checkpointer %d", niceOf(t, walwriter), niceOf(t, receiver), niceOf(t, checkpointer))
	}
	c.boostWALPath(false)
	if niceOf(t, walwriter) != 0 || niceOf(t, receiver) != 0 || listed != 2 {
		t.Errorf("after: walwriter %d, walreceiver %d, listed %d times (want 2)", niceOf(t, walwriter), niceOf(t, receiver), listed)
	}
}
