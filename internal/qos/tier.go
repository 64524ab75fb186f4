package qos

import (
	"context"
	"fmt"
)

// Tier is a performance tier. Lower values are more important.
type Tier uint8

const (
	High Tier = iota
	Normal
	Low
	// NumTiers is the number of tiers; arrays indexed by Tier use it.
	NumTiers
)

var tierNames = [NumTiers]string{"high", "normal", "low"}

func (t Tier) String() string {
	if t < NumTiers {
		return tierNames[t]
	}
	return fmt.Sprintf("Tier(%d)", uint8(t))
}

// ParseTier accepts the names a client may send: "high", "normal", "low".
func ParseTier(s string) (Tier, bool) {
	for i, n := range tierNames {
		if n == s {
			return Tier(i), true
		}
	}
	return Normal, false
}

type tierKey struct{}

// WithTier returns a context that carries the tier a request runs at, so the
// storage layer picks that tier's backends without every call naming it.
func WithTier(ctx context.Context, t Tier) context.Context {
	return context.WithValue(ctx, tierKey{}, t)
}

// TierFrom returns the tier carried by ctx, Normal when none is.
func TierFrom(ctx context.Context) Tier {
	if t, ok := ctx.Value(tierKey{}).(Tier); ok {
		return t
	}
	return Normal
}
