package expr

import (
	"math"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// $dateAdd, $dateSubtract and $dateDiff. Units of a day and more are
// calendar units in the time zone (a day keeps the local time of day
// across a daylight-saving change; a month from the 31st ends on the
// month's last day); hours and less are elapsed time. $dateDiff counts the
// unit's boundaries crossed between the two dates, in the time zone.

func dateArithOps() map[string]parser {
	return map[string]parser{
		"$dateAdd":        parseDateAdd,
		"$dateSubtract":   parseDateAdd,
		"$dateDiff":       parseDateDiff,
		"$dateTrunc":      parseDateTrunc,
		"$dateFromString": parseDateFromString,
		"$dateToParts":    parseDateToParts,
		"$dateFromParts":  parseDateFromParts,
	}
}

// namedArgs parses an operator's {name: expression} argument, every
// name one of allowed.
func namedArgs(name string, arg any, s *Scope, allowed []string, notObject, unknown mongoerr.Code) (map[string]Expr, error) {
	d, ok := arg.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(notObject, "%s expects an object as its argument", name)
	}
	out := map[string]Expr{}
	for _, e := range d {
		known := false
		for _, a := range allowed {
			known = known || a == e.Key
		}
		if !known {
			return nil, mongoerr.Newf(unknown, "Unrecognized argument to %s: %s", name, e.Key)
		}
		x, err := Parse(e.Value, s)
		if err != nil {
			return nil, err
		}
		out[e.Key] = x
	}
	return out, nil
}

var timeUnits = map[string]bool{
	"year": true, "quarter": true, "month": true, "week": true, "day": true,
	"hour": true, "minute": true, "second": true, "millisecond": true,
}

func timeUnit(name string, v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", mongoerr.Newf(mongoerr.Location5439013, "%s requires 'unit' to be a string, but got %s", name, TypeName(v))
	}
	if !timeUnits[s] {
		return "", mongoerr.Newf(mongoerr.FailedToParse, "%s parameter 'unit' value parsing failed :: caused by :: unknown time unit value: %s", name, s)
	}
	return s, nil
}

// evalArgs evaluates the named expressions; ok is false when one of them
// is null or missing (the operator's result is then null).
func evalArgs(c *Ctx, args map[string]Expr, names ...string) (map[string]any, bool, error) {
	vals := map[string]any{}
	for _, n := range names {
		x, ok := args[n]
		if !ok {
			continue
		}
		v, err := x.Eval(c)
		if err != nil {
			return nil, false, err
		}
		if nullish(v) {
			return nil, false, nil
		}
		vals[n] = v
	}
	return vals, true, nil
}

func zoneOf(vals map[string]any) (*time.Location, error) {
	tz, ok := vals["timezone"]
	if !ok {
		return time.UTC, nil
	}
	return location(tz)
}

func parseDateAdd(name string, arg any, s *Scope) (Expr, error) {
	args, err := namedArgs(name, arg, s, []string{"startDate", "unit", "amount", "timezone"}, mongoerr.Location5166400, mongoerr.Location5166401)
	if err != nil {
		return nil, err
	}
	for _, req := range []string{"startDate", "unit", "amount"} {
		if args[req] == nil {
			return nil, mongoerr.Newf(mongoerr.Location5166402, "%s requires startDate, unit, and amount to be present", name)
		}
	}
	return &lazyExpr{fn: func(c *Ctx, _ []Expr) (any, error) {
		vals, ok, err := evalArgs(c, args, "startDate", "unit", "amount", "timezone")
		if err != nil || !ok {
			return nil, err
		}
		unit, err := timeUnit(name, vals["unit"])
		if err != nil {
			return nil, err
		}
		loc, err := zoneOf(vals)
		if err != nil {
			return nil, err
		}
		start, err := toTime(vals["startDate"])
		if err != nil {
			return nil, mongoerr.Newf(mongoerr.Location5166403, "%s requires startDate to be convertible to a date", name)
		}
		amount, whole := int64Of(vals["amount"])
		if !whole {
			return nil, mongoerr.Newf(mongoerr.Location5166405, "%s expects integer amount of time units", name)
		}
		if name == "$dateSubtract" {
			if amount == math.MinInt64 {
				return nil, mongoerr.Newf(mongoerr.Location5166406, "invalid dateSubtract 'amount' parameter value: %d", amount)
			}
			amount = -amount
		}
		t, ok := addUnits(start.In(loc), unit, amount)
		if !ok {
			return nil, mongoerr.Newf(mongoerr.Location5166406, "%s overflowed", strings.TrimPrefix(name, "$"))
		}
		return bson.NewDateTimeFromTime(t), nil
	}}, nil
}

// maxDateMillis keeps results within what a BSON date holds.
const maxDateMillis = int64(1) << 62

func addUnits(t time.Time, unit string, n int64) (time.Time, bool) {
	var ms int64
	switch unit {
	case "millisecond":
		ms = 1
	case "second":
		ms = 1000
	case "minute":
		ms = 60_000
	case "hour":
		ms = 3_600_000
	}
	if ms > 0 {
		if n > maxDateMillis/ms || n < -maxDateMillis/ms {
			return t, false
		}
		end := t.UnixMilli() + n*ms
		if end > maxDateMillis || end < -maxDateMillis {
			return t, false
		}
		// Milliseconds, not a time.Duration of nanoseconds, which holds
		// only 292 years.
		return time.UnixMilli(end).In(t.Location()), true
	}
	const maxYears = 1_000_000
	if n > maxYears*366 || n < -maxYears*366 {
		return t, false
	}
	switch unit {
	case "day", "week":
		if unit == "week" {
			n *= 7
		}
		return t.AddDate(0, 0, int(n)), true
	}
	months := n
	switch unit {
	case "quarter":
		months = n * 3
	case "year":
		months = n * 12
	}
	if months > maxYears*12 || months < -maxYears*12 {
		return t, false
	}
	// The same day of the month, or the month's last day when it has fewer.
	y, m, d := t.Date()
	total := int64(y)*12 + int64(m-1) + months
	ny, nm := int(total/12), time.Month(total%12+1)
	if total%12 < 0 {
		ny, nm = int(total/12)-1, time.Month(total%12+13)
	}
	last := time.Date(ny, nm+1, 0, 0, 0, 0, 0, t.Location()).Day()
	if d > last {
		d = last
	}
	h, mi, sec := t.Clock()
	return time.Date(ny, nm, d, h, mi, sec, t.Nanosecond(), t.Location()), true
}

var weekdays = map[string]time.Weekday{
	"sunday": time.Sunday, "monday": time.Monday, "tuesday": time.Tuesday, "wednesday": time.Wednesday,
	"thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday,
	"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday,
}

func parseDateDiff(name string, arg any, s *Scope) (Expr, error) {
	args, err := namedArgs(name, arg, s, []string{"startDate", "endDate", "unit", "timezone", "startOfWeek"}, mongoerr.Location5166301, mongoerr.Location5166302)
	if err != nil {
		return nil, err
	}
	for _, req := range []struct {
		name string
		code mongoerr.Code
	}{{"startDate", mongoerr.Location5166303}, {"endDate", mongoerr.Location5166304}, {"unit", mongoerr.Location5166305}} {
		if args[req.name] == nil {
			return nil, mongoerr.Newf(req.code, "Missing '%s' parameter to $dateDiff", req.name)
		}
	}
	return &lazyExpr{fn: func(c *Ctx, _ []Expr) (any, error) {
		vals, ok, err := evalArgs(c, args, "startDate", "endDate", "unit", "timezone", "startOfWeek")
		if err != nil || !ok {
			return nil, err
		}
		var ends [2]time.Time
		for i, which := range []string{"startDate", "endDate"} {
			t, err := toTime(vals[which])
			if err != nil {
				return nil, mongoerr.Newf(mongoerr.Location5166307, "$dateDiff requires '%s' to be a date, but got %s", which, TypeName(vals[which]))
			}
			ends[i] = t
		}
		unit, err := timeUnit(name, vals["unit"])
		if err != nil {
			return nil, err
		}
		loc, err := zoneOf(vals)
		if err != nil {
			return nil, err
		}
		weekStart := time.Sunday
		if v, ok := vals["startOfWeek"]; ok && unit == "week" {
			s, isStr := v.(string)
			if !isStr {
				return nil, mongoerr.Newf(mongoerr.Location5439015, "$dateDiff requires 'startOfWeek' to be a string, but got %s", TypeName(v))
			}
			d, known := weekdays[strings.ToLower(s)]
			if !known {
				return nil, mongoerr.Newf(mongoerr.Location5439016, "$dateDiff parameter 'startOfWeek' value cannot be recognized as a day of a week: %s", s)
			}
			weekStart = d
		}
		return dateDiff(ends[0].In(loc), ends[1].In(loc), unit, weekStart), nil
	}}, nil
}

// dateDiff counts unit boundaries from a to b (negative when b is
// earlier), both in the time zone they carry.
func dateDiff(a, b time.Time, unit string, weekStart time.Weekday) int64 {
	localMillis := func(t time.Time) int64 {
		_, off := t.Zone()
		return t.UnixMilli() + int64(off)*1000
	}
	// days since the epoch of the local calendar date
	localDay := func(t time.Time) int64 {
		y, m, d := t.Date()
		return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400
	}
	switch unit {
	case "millisecond":
		return b.UnixMilli() - a.UnixMilli()
	case "second", "minute", "hour":
		size := map[string]int64{"second": 1000, "minute": 60_000, "hour": 3_600_000}[unit]
		return floorDiv(localMillis(b), size) - floorDiv(localMillis(a), size)
	case "day":
		return localDay(b) - localDay(a)
	case "week":
		startOf := func(t time.Time) int64 {
			back := (int64(t.Weekday()) - int64(weekStart) + 7) % 7
			return localDay(t) - back
		}
		return (startOf(b) - startOf(a)) / 7
	}
	ya, ma, _ := a.Date()
	yb, mb, _ := b.Date()
	switch unit {
	case "month":
		return int64(yb-ya)*12 + int64(mb-ma)
	case "quarter":
		return int64(yb-ya)*4 + int64((int(mb)-1)/3-(int(ma)-1)/3)
	}
	return int64(yb - ya)
}
