package main

import (
	"bufio"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

const exampleConfig = "../../deploy/tierdb.yaml"

// newServeFlags is serve's flag set as a clean environment defines it
// (--admin-user's default comes from $TIERDB_ADMIN_USER).
func newServeFlags(t *testing.T) (*serveFlags, *flag.FlagSet) {
	t.Setenv(adminUserEnv, "")
	os.Unsetenv(adminUserEnv)
	f := &serveFlags{}
	return f, f.flagSet()
}

// The example config names every flag of serve (a flag added without an
// example entry fails here), and loading it through --config, the code
// path serve uses, leaves every flag at its default.
func TestExampleConfigListsEveryFlagWithItsDefault(t *testing.T) {
	b, err := os.ReadFile(exampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]yaml.Node
	if err := yaml.Unmarshal(b, &keys); err != nil {
		t.Fatal(err)
	}
	_, fs := newServeFlags(t)
	fs.VisitAll(func(fl *flag.Flag) {
		if _, ok := keys[fl.Name]; !ok && fl.Name != "config" {
			t.Errorf("deploy/tierdb.yaml lacks %q (%s): add it with its default and a comment", fl.Name, fl.Usage)
		}
	})
	if err := parseFlags(fs, []string{"--config", exampleConfig}); err != nil {
		t.Fatalf("loading the example: %v", err)
	}
	fs.VisitAll(func(fl *flag.Flag) {
		if fl.Name != "config" && fl.Value.String() != fl.DefValue {
			t.Errorf("deploy/tierdb.yaml sets %s to %q; its default is %q", fl.Name, fl.Value.String(), fl.DefValue)
		}
	})

	// Every setting comes with a comment saying what it does.
	key := regexp.MustCompile(`^([a-z][a-z0-9-]*):`)
	prev := ""
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if m := key.FindStringSubmatch(line); m != nil && !strings.HasPrefix(prev, "#") {
			t.Errorf("deploy/tierdb.yaml:%d: %s has no comment above it", n, m[1])
		}
		prev = line
	}
}

func TestConfigFile(t *testing.T) {
	dir := t.TempDir()
	load := func(content string, args ...string) (*serveFlags, error) {
		path := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		f, fs := newServeFlags(t)
		return f, parseFlags(fs, append([]string{"--config", path}, args...))
	}

	f, err := load("listen: 0.0.0.0:27018\ncursor-timeout: 90s\nqos: off\nfair-cv: 0.5\npostgres-url:\nbackends: ~\n", "--listen", "127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	if f.listen != "127.0.0.1:1" {
		t.Errorf("the command line must win over the file: listen %q", f.listen)
	}
	if f.cursorTimeout.String() != "1m30s" || f.qos.mode != "off" || f.qos.fair.CVBound != 0.5 || f.postgresURL != "" || f.backends != "" {
		t.Errorf("values not applied: %+v", f)
	}

	for _, tc := range []struct{ content, want string }{
		{"listen: 127.0.0.1:1\nlisten-address: x\n", `line 2: unknown setting "listen-address"`},
		{"--listen: x\n", `unknown setting "--listen"`},
		{"config: other.yaml\n", `unknown setting "config"`},
		{"threshold: many\n", "line 1: threshold: parse error"},
		{"nice: [1, 2]\n", "nice: want a single value"},
		{"backends:\n  high: 8\n", "backends: want a single value"},
		{"- listen\n", "cannot unmarshal"},
		{"listen: a\nlisten: b\n", "already defined"},
	} {
		if _, err := load(tc.content); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got error %v, want one containing %q", tc.content, err, tc.want)
		}
	}
	if _, err := load(""); err != nil {
		t.Errorf("an empty file: %v", err)
	}
}
