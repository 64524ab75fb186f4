package bench

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
)

// keyChooser picks record keys in [0, n).
type keyChooser interface {
	next(rng *rand.Rand) int64
}

type uniformKeys struct{ n int64 }

func (u uniformKeys) next(rng *rand.Rand) int64 { return rng.Int64N(u.n) }

// zipfTheta is YCSB's default zipfian constant.
const zipfTheta = 0.99

// zipfianKeys draws ranks from a zipfian distribution with the closed-form
// method of Gray et al. ("Quickly generating billion-record synthetic
// databases", SIGMOD 1994), then hashes the rank so the popular keys are
// spread over the key space instead of being the smallest ones (as YCSB's
// scrambled zipfian does). Immutable after construction, so clients share
// one.
type zipfianKeys struct {
	n                 int64
	alpha, zetan, eta float64
	half              float64 // 1 + 0.5^theta
}

func newZipfianKeys(n int64) *zipfianKeys {
	zeta := func(n int64) float64 {
		var s float64
		for i := int64(1); i <= n; i++ {
			s += 1 / math.Pow(float64(i), zipfTheta)
		}
		return s
	}
	z := &zipfianKeys{n: n, alpha: 1 / (1 - zipfTheta), zetan: zeta(n), half: 1 + math.Pow(0.5, zipfTheta)}
	z.eta = (1 - math.Pow(2/float64(n), 1-zipfTheta)) / (1 - zeta(min(n, 2))/z.zetan)
	return z
}

// rank returns a zipfian rank in [0, n): 0 is the most popular.
func (z *zipfianKeys) rank(u float64) int64 {
	uz := u * z.zetan
	switch {
	case uz < 1 || z.n == 1:
		return 0
	case uz < z.half:
		return 1
	}
	r := int64(float64(z.n) * math.Pow(z.eta*u-z.eta+1, z.alpha))
	return min(max(r, 0), z.n-1)
}

func (z *zipfianKeys) next(rng *rand.Rand) int64 {
	r := z.rank(rng.Float64())
	h := fnv.New64a()
	var b [8]byte
	for i := range b {
		b[i] = byte(r >> (8 * i))
	}
	h.Write(b[:])
	return int64(h.Sum64() % uint64(z.n))
}

func newKeyChooser(distribution string, n int64) keyChooser {
	if distribution == "uniform" {
		return uniformKeys{n: n}
	}
	return newZipfianKeys(n)
}
