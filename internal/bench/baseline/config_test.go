package baseline

import (
	"slices"
	"testing"
	"time"
)

func TestDefaultsMatchTheIssue(t *testing.T) {
	c, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.clients != 16 || c.records != 10000 || c.duration != 10*time.Second || c.warmup != 2*time.Second ||
		c.rounds != 3 || !c.pin || c.tierdbBin != "" || c.monitoring != "poll" {
		t.Errorf("defaults: %+v", c)
	}
	if !slices.Equal(c.ops, allOps()) {
		t.Errorf("default ops %v", c.ops)
	}
}

func TestFlags(t *testing.T) {
	c, err := parseFlags([]string{"--ops", "update-by-_id, find-by-_id,update-by-_id", "--tierdb-args", "--log-level warn", "--pin=false"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.ops, []opKind{opUpdate, opFind}) {
		t.Errorf("ops = %v", c.ops)
	}
	if !slices.Equal(c.tierdbArgs, []string{"--log-level", "warn"}) || c.pin {
		t.Errorf("config = %+v", c)
	}
	for _, bad := range [][]string{
		{"--ops", "delete"},
		{"--clients", "0"},
		{"--rounds", "0"},
		{"--duration", "0s"},
		{"--server-monitoring", "sometimes"},
		{"stray"},
	} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("parseFlags(%q) accepted", bad)
		}
	}
}
