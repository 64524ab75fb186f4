package qos

import "fmt"

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
