package update

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// formatElem renders "{name: value}" the way MongoDB quotes a document
// element inside error messages.
func formatElem(name string, v any) string {
	return "{" + name + ": " + formatValue(v) + "}"
}

// formatValue renders v roughly as MongoDB's BSONElement::toString does.
// It is only used in error messages, so fidelity matters more than speed.
func formatValue(v any) string {
	var b strings.Builder
	writeValue(&b, v)
	return b.String()
}

func writeValue(b *strings.Builder, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case int32:
		b.WriteString(strconv.FormatInt(int64(x), 10))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		b.WriteString(formatDouble(x))
	case string:
		b.WriteString(strconv.Quote(x))
	case bson.D:
		if len(x) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteString("{ ")
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(e.Key)
			b.WriteString(": ")
			writeValue(b, e.Value)
		}
		b.WriteString(" }")
	case bson.A:
		if len(x) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteString("[ ")
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writeValue(b, e)
		}
		b.WriteString(" ]")
	case bson.ObjectID:
		b.WriteString("ObjectId('" + x.Hex() + "')")
	case bson.DateTime:
		b.WriteString("new Date(" + strconv.FormatInt(int64(x), 10) + ")")
	case bson.Decimal128:
		b.WriteString("NumberDecimal(\"" + x.String() + "\")")
	case bson.Timestamp:
		fmt.Fprintf(b, "Timestamp(%d, %d)", x.T, x.I)
	case bson.Regex:
		b.WriteString("/" + x.Pattern + "/" + x.Options)
	case bson.MinKey:
		b.WriteString("MinKey")
	case bson.MaxKey:
		b.WriteString("MaxKey")
	case bson.Undefined:
		b.WriteString("undefined")
	case bson.Binary:
		fmt.Fprintf(b, "BinData(%d, %X)", x.Subtype, x.Data)
	case bson.JavaScript:
		b.WriteString(string(x))
	case bson.Symbol:
		b.WriteString(strconv.Quote(string(x)))
	default:
		fmt.Fprintf(b, "%v", x)
	}
}

// formatDouble keeps a ".0" on integral values so that a double is never
// mistaken for an integer in a message.
func formatDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}
