package procfs

import (
	"os"
	"testing"
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
