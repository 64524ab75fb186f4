package procfs

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Stat holds the fields of /proc/<pid>/stat that tierdb uses. CPU times
// are in clock ticks (USER_HZ).
type Stat struct {
	// State is the one-letter process state: R, S, D, Z (zombie), X …
	State                        byte
	PPID                         int
	UTime, STime, CUTime, CSTime uint64
}

// ReadStat reads /proc/<pid>/stat.
func ReadStat(pid int) (Stat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Stat{}, err
	}
	return ParseStat(b)
}

// ParseStat parses a /proc/<pid>/stat line. The command name (field 2) is
// in parentheses and may itself contain spaces and parentheses, so the
// fields are counted from the last ')'.
func ParseStat(b []byte) (Stat, error) {
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return Stat{}, fmt.Errorf("procfs: malformed stat line %q", b)
	}
	// f[0] is field 3 (state), f[1] field 4 (ppid), f[11:15] fields 14–17
	// (utime, stime, cutime, cstime).
	f := strings.Fields(s[i+1:])
	if len(f) < 15 || len(f[0]) != 1 {
		return Stat{}, fmt.Errorf("procfs: short or malformed stat line %q", b)
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return Stat{}, fmt.Errorf("procfs: malformed stat line %q", b)
	}
	var t [4]uint64
	for k := range t {
		if t[k], err = strconv.ParseUint(f[11+k], 10, 64); err != nil {
			return Stat{}, fmt.Errorf("procfs: malformed stat line %q", b)
		}
	}
	return Stat{State: f[0][0], PPID: ppid, UTime: t[0], STime: t[1], CUTime: t[2], CSTime: t[3]}, nil
}
