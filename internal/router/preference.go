package router

import (
	"fmt"
	"strings"
	"time"
)

// Mode is a read preference mode, MongoDB's five plus Adaptive.
type Mode int

const (
	Primary Mode = iota
	PrimaryPreferred
	Secondary
	SecondaryPreferred
	Nearest
	// Adaptive sends the Balancer's fraction of reads to standbys within
	// the bound, the rest to the primary.
	Adaptive
)

var modeNames = [...]string{"primary", "primaryPreferred", "secondary", "secondaryPreferred", "nearest", "adaptive"}

func (m Mode) String() string { return modeNames[m] }

// ParseMode reads a mode name as drivers spell it.
func ParseMode(s string) (Mode, error) {
	for i, n := range modeNames {
		if s == n {
			return Mode(i), nil
		}
	}
	return 0, fmt.Errorf("unknown read preference mode %q; allowed: %s", s, strings.Join(modeNames[:], ", "))
}

// Preference is how one read may be routed.
type Preference struct {
	Mode Mode
	// MaxStaleness bounds how old the served view may be; 0 means no bound
	// (except for Adaptive, where 0 means "no stale data": primary only).
	MaxStaleness time.Duration
	// Tags, when not empty, restrict standbys to those matching one of the
	// tag sets (an empty set matches every node), as MongoDB's tag sets do.
	Tags []map[string]string
}

// tagSets are the preference's tag sets in order, or one empty set, which
// matches every node.
func (p Preference) tagSets() []map[string]string {
	if len(p.Tags) == 0 {
		return []map[string]string{nil}
	}
	return p.Tags
}

// matchesSet says whether a node with these tags matches one tag set.
func matchesSet(set, tags map[string]string) bool {
	for k, v := range set {
		if tags[k] != v {
			return false
		}
	}
	return true
}
