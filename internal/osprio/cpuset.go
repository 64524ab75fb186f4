package osprio

import (
	"slices"
	"strconv"
	"strings"
)

// maxCPUID bounds the CPU ids accepted anywhere, so that a typo such as
// "0-4000000000" is an error instead of a huge allocation. Linux itself
// supports at most 8192 CPUs today.
const maxCPUID = 1<<16 - 1

// CPUSet is a set of CPU ids. Sets built by ParseCPUList are sorted and free
// of duplicates; functions taking a CPUSet accept any order.
type CPUSet []int

// ParseCPUList parses the kernel's CPU list format, as found in
// /sys/devices/system/cpu/online and the cpuset cgroup files: comma-separated
// ids and inclusive ranges, e.g. "0", "0-3", "0,2-3". Surrounding white space
// (such as the trailing newline of a sysfs file) is ignored. An empty string
// yields an empty set.
func ParseCPUList(s string) (CPUSet, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return CPUSet{}, nil
	}
	var set CPUSet
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := parseCPUID(lo, s)
		if err != nil {
			return nil, err
		}
		last := first
		if isRange {
			if last, err = parseCPUID(hi, s); err != nil {
				return nil, err
			}
			if last < first {
				return nil, invalidf("CPU list %q: range %q runs backwards", s, part)
			}
		}
		for id := first; id <= last; id++ {
			set = append(set, id)
		}
	}
	return set.normalize(), nil
}

func parseCPUID(field, list string) (int, error) {
	// Atoi alone would accept "+1"; CPU ids are plain decimal digits.
	if field == "" || strings.TrimLeft(field, "0123456789") != "" {
		return 0, invalidf("CPU list %q: %q is not a CPU id", list, field)
	}
	id, err := strconv.Atoi(field)
	if err != nil || id > maxCPUID {
		return 0, invalidf("CPU list %q: CPU id %q is out of range (max %d)", list, field, maxCPUID)
	}
	return id, nil
}

// String formats the set in the kernel's CPU list format, collapsing runs
// into ranges: CPUSet{0, 1, 3} is "0-1,3". The empty set is "".
func (s CPUSet) String() string {
	n := s.normalize()
	var b strings.Builder
	for i := 0; i < len(n); {
		j := i
		for j+1 < len(n) && n[j+1] == n[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(n[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(n[j]))
		}
		i = j + 1
	}
	return b.String()
}

// Contains reports whether id is in the set.
func (s CPUSet) Contains(id int) bool {
	return slices.Contains(s, id)
}

// Equal reports whether both sets hold the same CPUs, whatever their order.
func (s CPUSet) Equal(other CPUSet) bool {
	return slices.Equal(s.normalize(), other.normalize())
}

// normalize returns a sorted, duplicate-free copy, never aliasing s so that
// callers may keep and mutate their own slice.
func (s CPUSet) normalize() CPUSet {
	n := slices.Clone(s)
	slices.Sort(n)
	return slices.Compact(n)
}

// checkCPUs rejects sets the kernel could never accept, before a system call.
func checkCPUs(set CPUSet) error {
	if len(set) == 0 {
		return invalidf("empty CPU set: a process must be allowed at least one CPU")
	}
	for _, id := range set {
		if id < 0 || id > maxCPUID {
			return invalidf("CPU id %d is out of range (0..%d)", id, maxCPUID)
		}
	}
	return nil
}

// ValidateCPUs checks that set is non-empty and that every CPU in it is
// online on this machine, so that a configured CPU pool is rejected at start
// rather than silently narrowed by the kernel later.
func ValidateCPUs(set CPUSet) error {
	online, err := OnlineCPUs()
	if err != nil {
		return err
	}
	return validateAgainst(set, online)
}

func validateAgainst(set, online CPUSet) error {
	if err := checkCPUs(set); err != nil {
		return err
	}
	var missing CPUSet
	for _, id := range set {
		if !online.Contains(id) {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return invalidf("CPU(s) %s not online; online CPUs are %s", missing, online)
	}
	return nil
}
