package expr

import (
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// $dateTrunc: the start of the binSize-unit period holding date, in the
// time zone. Periods are counted from 2000-01-01T00:00 local time (for
// weeks, from the first startOfWeek day on or after it).

func parseDateTrunc(name string, arg any, s *Scope) (Expr, error) {
	args, err := namedArgs(name, arg, s, []string{"date", "unit", "binSize", "timezone", "startOfWeek"}, mongoerr.Location5439007, mongoerr.Location5439008)
	if err != nil {
		return nil, err
	}
	if args["date"] == nil {
		return nil, mongoerr.New(mongoerr.Location5439009, "Missing 'date' parameter to $dateTrunc")
	}
	if args["unit"] == nil {
		return nil, mongoerr.New(mongoerr.Location5439010, "Missing 'unit' parameter to $dateTrunc")
	}
	return &lazyExpr{fn: func(c *Ctx, _ []Expr) (any, error) {
		vals, ok, err := evalArgs(c, args, "date", "unit", "binSize", "timezone")
		if err != nil || !ok {
			return nil, err
		}
		t, err := toTime(vals["date"])
		if err != nil {
			return nil, mongoerr.Newf(mongoerr.Location5439012, "$dateTrunc requires 'date' to be a date, but got %s", TypeName(vals["date"]))
		}
		unit, err := timeUnit(name, vals["unit"])
		if err != nil {
			return nil, err
		}
		bin := int64(1)
		if v, ok := vals["binSize"]; ok {
			n, whole := int64Of(v)
			if !whole {
				return nil, mongoerr.Newf(mongoerr.Location5439017, "$dateTrunc requires 'binSize' to be a 64-bit integer, but got value '%v' of type %s", v, TypeName(v))
			}
			if n <= 0 {
				return nil, mongoerr.Newf(mongoerr.Location5439018, "$dateTrunc requires 'binSize' to be greater than 0, but got value %d", n)
			}
			bin = n
		}
		loc, err := zoneOf(vals)
		if err != nil {
			return nil, err
		}
		weekStart := time.Sunday
		if unit == "week" {
			if x, given := args["startOfWeek"]; given {
				v, err := x.Eval(c)
				if err != nil {
					return nil, err
				}
				if nullish(v) {
					return nil, nil
				}
				s, isStr := v.(string)
				if !isStr {
					return nil, mongoerr.Newf(mongoerr.Location5439015, "$dateTrunc requires 'startOfWeek' to be a string, but got %s", TypeName(v))
				}
				d, known := weekdays[strings.ToLower(s)]
				if !known {
					return nil, mongoerr.Newf(mongoerr.Location5439016, "$dateTrunc parameter 'startOfWeek' value cannot be recognized as a day of a week: %s", s)
				}
				weekStart = d
			}
		}
		return bson.NewDateTimeFromTime(truncDate(t.In(loc), unit, bin, weekStart)), nil
	}}, nil
}

func floorDiv(x, y int64) int64 {
	q := x / y
	if x%y != 0 && (x < 0) != (y < 0) {
		q--
	}
	return q
}

// truncDate is the start of t's period, in t's time zone.
func truncDate(t time.Time, unit string, bin int64, weekStart time.Weekday) time.Time {
	loc := t.Location()
	const refDay = 10957 // 2000-01-01, in days since 1970-01-01
	y, m, d := t.Date()
	day := time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400
	fromDay := func(n int64) time.Time {
		u := time.Unix(n*86400, 0).UTC()
		return time.Date(u.Year(), u.Month(), u.Day(), 0, 0, 0, 0, loc)
	}
	switch unit {
	case "millisecond", "second", "minute", "hour":
		size := map[string]int64{"millisecond": 1, "second": 1000, "minute": 60_000, "hour": 3_600_000}[unit] * bin
		_, off := t.Zone()
		wall := t.UnixMilli() + int64(off)*1000
		const ref = int64(refDay) * 86_400_000
		start := time.UnixMilli(floorDiv(wall-ref, size)*size + ref).UTC()
		return time.Date(start.Year(), start.Month(), start.Day(), start.Hour(), start.Minute(), start.Second(), start.Nanosecond(), loc)
	case "day":
		return fromDay(floorDiv(day-refDay, bin)*bin + refDay)
	case "week":
		ref := int64(refDay) + (int64(weekStart)-int64(time.Saturday)+7)%7 // 2000-01-01 was a Saturday
		return fromDay(floorDiv(day-ref, 7*bin)*7*bin + ref)
	}
	months := map[string]int64{"month": 1, "quarter": 3, "year": 12}[unit] * bin
	n := floorDiv(int64(y-2000)*12+int64(m-1), months) * months
	return time.Date(2000+int(floorDiv(n, 12)), time.Month(n-floorDiv(n, 12)*12+1), 1, 0, 0, 0, 0, loc)
}
