package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// harnessOnly are import path prefixes the server binary must not link:
// the benchmark harness (cmd/tierdb-bench) and the plotting library it
// draws with, and that library's own dependencies.
var harnessOnly = []string{
	"tierdb/internal/bench", // the harness, its baseline and rig
	"gonum.org/",
	"github.com/ajstarks/svgo",
	"github.com/golang/freetype",
	"golang.org/x/image",
	"git.sr.ht/~sbinet/",
	"codeberg.org/go-fonts/",
	"codeberg.org/go-latex/",
	"codeberg.org/go-pdf/",
	"github.com/go-fonts/",
	"github.com/go-latex/",
	"github.com/go-pdf/",
	"github.com/jung-kurt/gofpdf",
}

// sharedModules are modules the plotting library uses that the server may
// need for reasons of its own.
var sharedModules = []string{"golang.org/x/text", "golang.org/x/sys"}

// TestServerLinksNoHarness keeps the benchmark harness and its plotting
// code out of the server binary (issue 14): `go list -deps ./cmd/tierdb`
// must name none of it, nor any module the plotting packages bring in.
func TestServerLinksNoHarness(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	server := goList(t, "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}\t{{with .Module}}{{.Path}}{{end}}{{end}}", ".")
	if len(server) < 10 {
		t.Fatalf("go list found only %d packages in the server: %q", len(server), server)
	}
	// The modules plotting brings, found rather than listed, so that a new
	// dependency of gonum's is caught too.
	var plotModules []string
	for _, line := range goList(t, "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", "gonum.org/v1/plot/plotter", "gonum.org/v1/plot/vg/vgimg") {
		if line != "" && !slices.Contains(plotModules, line) && !slices.Contains(sharedModules, line) {
			plotModules = append(plotModules, line)
		}
	}
	if !slices.Contains(plotModules, "gonum.org/v1/plot") {
		t.Fatalf("go list of the plotting packages names modules %q, not gonum.org/v1/plot", plotModules)
	}
	for _, line := range server {
		pkg, mod, _ := strings.Cut(line, "\t")
		if i := slices.IndexFunc(harnessOnly, func(prefix string) bool { return under(pkg, prefix) }); i >= 0 {
			t.Errorf("the server links %s (harness or plotting code, %s)", pkg, harnessOnly[i])
		} else if slices.Contains(plotModules, mod) {
			t.Errorf("the server links %s, of module %s that the plotting packages use", pkg, mod)
		}
	}
}

// under reports whether pkg is the package prefix or below it.
func under(pkg, prefix string) bool {
	prefix = strings.TrimSuffix(prefix, "/")
	return pkg == prefix || strings.HasPrefix(pkg, prefix+"/")
}

// goList runs `go list args...` in this package's directory and returns
// its output's lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	// go test puts its own GOROOT/bin first on $PATH.
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on $PATH")
	}
	cmd := exec.Command(goBin, append([]string{"list"}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}
