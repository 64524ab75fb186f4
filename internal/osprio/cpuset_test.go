package osprio

import (
	"slices"
	"strings"
	"testing"
)

func TestParseCPUList(t *testing.T) {
	good := []struct {
		in   string
		want CPUSet
		str  string
	}{
		{"", CPUSet{}, ""},
		{"0", CPUSet{0}, "0"},
		{"0-3", CPUSet{0, 1, 2, 3}, "0-3"},
		{"0,2-3", CPUSet{0, 2, 3}, "0,2-3"},
		{"0-1\n", CPUSet{0, 1}, "0-1"}, // as read from sysfs
		{"3,1,2", CPUSet{1, 2, 3}, "1-3"},
		{"1,1,0-1", CPUSet{0, 1}, "0-1"},
		{"5-5", CPUSet{5}, "5"},
		{"0,2,4-6,8", CPUSet{0, 2, 4, 5, 6, 8}, "0,2,4-6,8"},
		{"007", CPUSet{7}, "7"},
	}
	for _, tc := range good {
		got, err := ParseCPUList(tc.in)
		if err != nil {
			t.Errorf("ParseCPUList(%q): %v", tc.in, err)
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("ParseCPUList(%q) = %v, want %v", tc.in, []int(got), []int(tc.want))
		}
		if got.String() != tc.str {
			t.Errorf("ParseCPUList(%q).String() = %q, want %q", tc.in, got.String(), tc.str)
		}
	}

	bad := []string{
		"a", "0-", "-1", "1-0", "0,,1", ",", "0-1-2", "+1", "0 - 1", "1.5",
		"0x1", "99999999999999999999", "0-4000000000", "65536",
	}
	for _, in := range bad {
		got, err := ParseCPUList(in)
		if err == nil {
			t.Errorf("ParseCPUList(%q) = %v, want error", in, got)
			continue
		}
		if !IsInvalid(err) {
			t.Errorf("ParseCPUList(%q) error %v is not IsInvalid", in, err)
		}
		if !strings.Contains(err.Error(), in) {
			t.Errorf("ParseCPUList(%q) error %q does not quote the input", in, err)
		}
	}
}

func TestCPUSetStringUnsortedDoesNotMutate(t *testing.T) {
	s := CPUSet{3, 0, 1, 1}
	if got := s.String(); got != "0-1,3" {
		t.Errorf("String() = %q, want 0-1,3", got)
	}
	if !slices.Equal(s, CPUSet{3, 0, 1, 1}) {
		t.Errorf("String() reordered its receiver: %v", []int(s))
	}
	if !s.Equal(CPUSet{0, 1, 3}) || s.Equal(CPUSet{0, 1}) {
		t.Errorf("Equal ignores order and duplicates but not members")
	}
}

func TestValidateAgainst(t *testing.T) {
	online := CPUSet{0, 1, 2, 3, 6}
	for _, ok := range []CPUSet{{0}, {3, 0}, {6}, online} {
		if err := validateAgainst(ok, online); err != nil {
			t.Errorf("validateAgainst(%v): %v", ok, err)
		}
	}
	for _, bad := range []CPUSet{nil, {}, {4}, {0, 7}, {-1}, {maxCPUID + 1}} {
		err := validateAgainst(bad, online)
		if err == nil || !IsInvalid(err) {
			t.Errorf("validateAgainst(%v) = %v, want invalid error", []int(bad), err)
		}
	}
	err := validateAgainst(CPUSet{0, 4, 5}, online)
	if err == nil || !strings.Contains(err.Error(), "4-5") || !strings.Contains(err.Error(), "0-3,6") {
		t.Errorf("error should name the missing CPUs 4-5 and the online CPUs 0-3,6: %v", err)
	}
}
