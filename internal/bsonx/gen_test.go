package bsonx_test

import (
	"math"
	"math/rand/v2"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// gen makes random documents using every BSON type, biased towards edge
// values. A fixed seed keeps failures reproducible.
type gen struct{ r *rand.Rand }

func newGen(seed uint64) *gen { return &gen{rand.New(rand.NewPCG(seed, 0x5eed))} }

var (
	genKeys = []string{"", "_id", "a", "b", "$db", "x.y", "0", "5", "é", "日本語", "\xff\xfe", "k\x7f", "emoji😀"}

	genDoubles = []float64{0, math.Copysign(0, -1), math.NaN(), math.Float64frombits(0x7ff8000000000001),
		math.Inf(1), math.Inf(-1), math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, 1.5, -2.25}

	genInt32s = []int32{0, 1, -1, 255, 256, math.MaxInt32, math.MinInt32}

	genInt64s = []int64{0, 1, -1, 1 << 32, math.MaxInt64, math.MinInt64}

	genSubtypes = []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 0x80, 0xfe, 0xff}
)

func (g *gen) doc(depth int) bson.D {
	n := g.r.IntN(8)
	if depth > 3 {
		n = g.r.IntN(3)
	}
	d := make(bson.D, 0, n)
	for range n {
		d = append(d, bson.E{Key: g.key(), Value: g.value(depth)})
	}
	return d
}

func (g *gen) key() string {
	if g.r.IntN(3) == 0 {
		return g.bytes(12, false)
	}
	return genKeys[g.r.IntN(len(genKeys))]
}

// bytes is a random string of up to max bytes, not necessarily UTF-8;
// nul allows 0x00, which cstrings cannot hold.
func (g *gen) bytes(max int, nul bool) string {
	var sb strings.Builder
	for range g.r.IntN(max + 1) {
		c := byte(g.r.IntN(256))
		if c == 0 && !nul {
			c = 'z'
		}
		sb.WriteByte(c)
	}
	return sb.String()
}

func (g *gen) str() string {
	switch g.r.IntN(4) {
	case 0:
		return g.bytes(40, true)
	case 1:
		return "ünïcødé ✓ 😀"
	}
	return strings.Repeat("s", g.r.IntN(30))
}

func (g *gen) oid() bson.ObjectID {
	var id bson.ObjectID
	for i := range id {
		id[i] = byte(g.r.IntN(256))
	}
	return id
}

func (g *gen) value(depth int) any {
	for {
		switch g.r.IntN(22) {
		case 0:
			if g.r.IntN(2) == 0 {
				return genDoubles[g.r.IntN(len(genDoubles))]
			}
			return g.r.NormFloat64() * 1e6
		case 1:
			return g.str()
		case 2:
			if depth < 6 {
				return g.doc(depth + 1)
			}
		case 3:
			if depth < 6 {
				a := make(bson.A, g.r.IntN(5))
				for i := range a {
					a[i] = g.value(depth + 1)
				}
				return a
			}
		case 4:
			sub := genSubtypes[g.r.IntN(len(genSubtypes))]
			data := []byte(g.bytes(33, true))
			if sub == bson.TypeBinaryBinaryOld && len(data) == 0 {
				// The driver decodes an empty old binary as its four
				// length bytes; that case has its own test.
				data = []byte{1}
			}
			return bson.Binary{Subtype: sub, Data: data}
		case 5:
			return bson.Undefined{}
		case 6:
			return g.oid()
		case 7:
			return g.r.IntN(2) == 1
		case 8:
			return bson.DateTime(g.int64())
		case 9:
			return nil
		case 10:
			opts := ""
			for _, o := range "imsux" {
				if g.r.IntN(2) == 0 {
					opts += string(o)
				}
			}
			return bson.Regex{Pattern: g.bytes(10, false), Options: opts}
		case 11:
			return bson.DBPointer{DB: g.str(), Pointer: g.oid()}
		case 12:
			return bson.JavaScript(g.str())
		case 13:
			return bson.Symbol(g.str())
		case 14:
			if depth < 6 {
				return bson.CodeWithScope{Code: bson.JavaScript(g.str()), Scope: g.doc(depth + 1)}
			}
		case 15:
			if g.r.IntN(2) == 0 {
				return genInt32s[g.r.IntN(len(genInt32s))]
			}
			return g.r.Int32() - math.MaxInt32/2
		case 16:
			return bson.Timestamp{T: g.r.Uint32(), I: g.r.Uint32()}
		case 17:
			return g.int64()
		case 18:
			return g.decimal()
		case 19:
			return bson.MinKey{}
		case 20:
			return bson.MaxKey{}
		case 21:
			return bson.D{}
		}
	}
}

func (g *gen) int64() int64 {
	if g.r.IntN(2) == 0 {
		return genInt64s[g.r.IntN(len(genInt64s))]
	}
	return int64(g.r.Uint64())
}

func (g *gen) decimal() bson.Decimal128 {
	special := []string{"NaN", "-NaN", "Infinity", "-Infinity", "0", "-0", "1E+6144", "-1E-6176",
		"9999999999999999999999999999999999E+6111", "0.1"}
	if g.r.IntN(2) == 0 {
		d, err := bson.ParseDecimal128(special[g.r.IntN(len(special))])
		if err == nil {
			return d
		}
	}
	return bson.NewDecimal128(g.r.Uint64(), g.r.Uint64())
}
