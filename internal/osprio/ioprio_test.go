package osprio

import "testing"

func TestIOPrioEncoding(t *testing.T) {
	cases := []struct {
		class IOClass
		level int
		raw   uintptr
	}{
		{IOClassNone, 0, 0},
		{IOClassRT, 0, 1 << 13},
		{IOClassBestEffort, 4, 2<<13 | 4},
		{IOClassIdle, 0, 3 << 13},
	}
	for _, c := range cases {
		if got := encodeIOPrio(c.class, c.level); got != c.raw {
			t.Errorf("encode(%v, %d) = %#x, want %#x", c.class, c.level, got, c.raw)
		}
		if class, level := decodeIOPrio(c.raw); class != c.class || level != c.level {
			t.Errorf("decode(%#x) = %v/%d", c.raw, class, level)
		}
	}
	// A hint in bits 3..12 (newer kernels) must not leak into the level.
	if class, level := decodeIOPrio(2<<13 | 1<<3 | 5); class != IOClassBestEffort || level != 5 {
		t.Errorf("decode with hint = %v/%d, want best-effort/5", class, level)
	}
}

func TestCheckIOPrio(t *testing.T) {
	for _, ok := range []IOPrio{{IOClassNone, 0}, {IOClassIdle, 0}, {IOClassBestEffort, 0}, {IOClassBestEffort, 7}, {IOClassRT, 3}} {
		if err := checkIOPrio(ok.Class, ok.Level); err != nil {
			t.Errorf("checkIOPrio(%v): %v", ok, err)
		}
	}
	for _, bad := range []IOPrio{{IOClassBestEffort, 8}, {IOClassRT, -1}, {IOClassIdle, 2}, {IOClassNone, 4}, {IOClass(4), 0}, {IOClass(-1), 0}} {
		if err := checkIOPrio(bad.Class, bad.Level); err == nil || !IsInvalid(err) {
			t.Errorf("checkIOPrio(%v) = %v, want invalid error", bad, err)
		}
	}
}
