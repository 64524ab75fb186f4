package main

import (
	"slices"
	"testing"
)

func TestRedactArgv(t *testing.T) {
	in := []string{"tierdb", "serve", "--admin-password", "s3cret", "-admin-password=s3cret", "--listen", "x", "--admin-user", "a"}
	want := []string{"tierdb", "serve", "--admin-password", "<redacted>", "-admin-password=<redacted>", "--listen", "x", "--admin-user", "a"}
	if got := redactArgv(in); !slices.Equal(got, want) {
		t.Fatalf("got %q", got)
	}
	if in[3] != "s3cret" {
		t.Fatal("the original argv must not change")
	}
}

func TestTLSFlags(t *testing.T) {
	for _, f := range []authFlags{{tlsCert: "c"}, {tlsKey: "k"}, {tlsCA: "ca"}, {tlsCert: "/nonexistent", tlsKey: "/nonexistent"}} {
		if _, err := f.tlsConfig(); err == nil {
			t.Errorf("%+v: want an error", f)
		}
	}
	if cfg, err := (&authFlags{}).tlsConfig(); cfg != nil || err != nil {
		t.Fatalf("no TLS flags: %v %v", cfg, err)
	}
}
