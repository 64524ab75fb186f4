package baseline

import (
	"math/rand/v2"
	"testing"
)

func TestRandomStringIsPrintableAndSeeded(t *testing.T) {
	s := randomString(rand.New(rand.NewPCG(3, 4)), 101)
	if len(s) != 101 {
		t.Fatalf("len %d", len(s))
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			t.Fatalf("unexpected byte %q in %q", r, s)
		}
	}
	if s != randomString(rand.New(rand.NewPCG(3, 4)), 101) {
		t.Error("the same seed should give the same string, so both targets get the same records")
	}
}

func TestOpNamesRoundTrip(t *testing.T) {
	for _, k := range allOps() {
		got, err := parseOps(k.String())
		if err != nil || len(got) != 1 || got[0] != k {
			t.Errorf("parseOps(%q) = %v, %v", k.String(), got, err)
		}
	}
}
