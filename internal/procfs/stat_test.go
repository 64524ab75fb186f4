package procfs

import (
	"maps"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	// A command name with spaces and parentheses must not shift the fields.
	line := "4242 (post gres: (x)) S 77 4242 4242 0 -1 4194560 100 0 0 0 250 50 7 3 20 0 1 0 123 456 78 18446744073709551615\n"
	st, err := ParseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	want := Stat{State: 'S', PPID: 77, UTime: 250, STime: 50, CUTime: 7, CSTime: 3}
	if st != want {
		t.Errorf("got %+v, want %+v", st, want)
	}
	for _, bad := range []string{"12 (x) S 1", "12 x S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15", "12 (x) SS 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15", ""} {
		if _, err := ParseStat([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestReadStatOfThisProcess(t *testing.T) {
	st, err := ReadStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// The thread group leader may be running or asleep, never a zombie.
	if st.PPID != os.Getppid() || (st.State != 'R' && st.State != 'S') {
		t.Errorf("got %+v, want ppid %d and state R or S", st, os.Getppid())
	}
}

func TestParseCPUTimes(t *testing.T) {
	stat := "cpu  10 1 5 100 4 2 3 9 0 0\n" +
		"cpu0 7 1 3 60 2 1 2 5 0 0\n" +
		"cpu2 3 0 2 40 2 1 1 4 0 0\n" +
		"intr 1 2 3\nctxt 99\n"
	got, err := ParseCPUTimes([]byte(stat))
	if err != nil {
		t.Fatal(err)
	}
	// CPU 1 is offline (no line).
	want := map[int]CPUTime{0: {Busy: 11, IRQ: 3, Idle: 60, IOWait: 2, Steal: 5}, 2: {Busy: 5, IRQ: 2, Idle: 40, IOWait: 2, Steal: 4}}
	if !maps.Equal(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	for _, bad := range []string{"cpu  1 2 3\n", "cpu0 1 2 3\n", "cpu0 1 2 x 4 5 6 7 8\n"} {
		if _, err := ParseCPUTimes([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestChildrenOfThisProcess(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	kids, err := Children(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(kids, cmd.Process.Pid) {
		t.Errorf("children %v lack %d", kids, cmd.Process.Pid)
	}
}

func TestParseSchedStat(t *testing.T) {
	got, err := ParseSchedStat([]byte("123456789 2500000 77\n"))
	want := SchedStat{Run: 123456789 * time.Nanosecond, Wait: 2500 * time.Microsecond, Slices: 77}
	if err != nil || got != want {
		t.Errorf("got %+v, %v; want %+v", got, err, want)
	}
	for _, bad := range []string{"", "1 2", "1 2 3 4", "1 x 3", "-1 2 3"} {
		if _, err := ParseSchedStat([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// A process that spins ran, in at least one timeslice, and its counts
// only grow.
func TestReadSchedStatOfASpinningProcess(t *testing.T) {
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	time.Sleep(50 * time.Millisecond)
	a, err := ReadSchedStat(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	b, err := ReadSchedStat(cmd.Process.Pid)
	if err != nil || a.Run <= 0 || a.Slices == 0 || b.Run <= a.Run || b.Wait < a.Wait || b.Slices < a.Slices {
		t.Errorf("before %+v, after %+v, %v", a, b, err)
	}
}
