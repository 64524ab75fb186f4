package main

import (
	"flag"
	"testing"

	"tierdb/internal/qos"
)

func TestBackendSizes(t *testing.T) {
	got, err := backendSizes(8, "low=2, high=16")
	if err != nil || got != [qos.NumTiers]int{16, 8, 2} {
		t.Fatalf("got %v, %v", got, err)
	}
	for _, bad := range []string{"low=0", "gold=2", "low", "low=x", "low=65"} {
		if _, err := backendSizes(8, bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := backendSizes(0, ""); err == nil {
		t.Error("--backends-per-tier 0 accepted")
	}
}

func TestQoSFlags(t *testing.T) {
	parse := func(args ...string) (qos.Config, error) {
		var q qosFlags
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		q.register(fs)
		if err := fs.Parse(args); err != nil {
			return qos.Config{}, err
		}
		return q.config()
	}
	c, err := parse("--threshold", "2", "--nice", "high=-10,low=10", "--io-priority", "background=idle,low=best-effort/6", "--cpu-pools", "priority=0-1;standard=0-1;restricted=1")
	if err != nil {
		t.Fatal(err)
	}
	if !c.Enabled || c.Threshold != 2 || c.Nice != [qos.NumTiers]int{-10, 10, 10} || c.IO.Tiers[qos.Low] != (qos.IOPrio{Class: qos.IOBestEffort, Level: 6}) || len(c.Pools.Restricted) != 1 {
		t.Fatalf("unexpected config %+v", c)
	}
	if c, err := parse("--qos", "off"); err != nil || c.Enabled {
		t.Fatalf("--qos off: %+v %v", c, err)
	}
	for _, bad := range [][]string{
		{"--qos", "maybe"}, {"--threshold", "0"}, {"--nice", "high=-40"}, {"--nice", "gold=1"},
		{"--io-priority", "low=loud"}, {"--cpu-pools", "priority=0;standard=0"}, {"--cpu-pools", "priority=0;standard=0;restricted=99"},
	} {
		if _, err := parse(bad...); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
