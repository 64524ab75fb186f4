// Package buildinfo says which tierdb this is: its version, and the commit
// and Go toolchain it was built from (stamped by `go build` from the git
// checkout, read back with runtime/debug). It must stay a leaf: no tierdb
// imports, nothing but the standard library.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Version is tierdb's own version (buildInfo.tierdbVersion,
// `tierdb version`); the MongoDB version it follows is commands.Version.
const Version = "0.1.0"

// Info describes a build.
type Info struct {
	Version string
	// Revision is the git commit (vcs.revision); "" when the binary was
	// built without VCS information (go test, -buildvcs=false, a source
	// tree without .git).
	Revision string
	// Modified: the checkout had uncommitted changes (vcs.modified).
	Modified bool
	// CommitTime is the commit's time (vcs.time), RFC 3339; "" if unknown.
	CommitTime string
	GoVersion  string
	Platform   string // GOOS/GOARCH
}

// Read describes the running binary.
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return FromBuildInfo(bi)
}

// FromBuildInfo describes the build bi records (nil: nothing recorded).
func FromBuildInfo(bi *debug.BuildInfo) Info {
	i := Info{Version: Version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi == nil {
		return i
	}
	if bi.GoVersion != "" {
		i.GoVersion = bi.GoVersion
	}
	var goos, goarch string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			i.Revision = s.Value
		case "vcs.modified":
			i.Modified = s.Value == "true"
		case "vcs.time":
			i.CommitTime = s.Value
		case "GOOS":
			goos = s.Value
		case "GOARCH":
			goarch = s.Value
		}
	}
	if goos != "" && goarch != "" {
		i.Platform = goos + "/" + goarch
	}
	return i
}

// ShortCommit is the commit's first 12 hex digits with "+modified" when
// the tree had uncommitted changes; "unknown" without VCS information.
func (i Info) ShortCommit() string {
	if i.Revision == "" {
		return "unknown"
	}
	c := i.Revision
	if len(c) > 12 {
		c = c[:12]
	}
	if i.Modified {
		c += "+modified"
	}
	return c
}
