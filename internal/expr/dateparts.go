package expr

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// $dateToParts and $dateFromParts. $dateFromParts carries parts past
// their range into the next larger unit (month 14 is February of the next
// year, as MongoDB does) within [-32768, 32767].

func parseDateToParts(name string, arg any, s *Scope) (Expr, error) {
	args, err := namedArgs(name, arg, s, []string{"date", "timezone", "iso8601"}, mongoerr.Location40524, mongoerr.Location40520)
	if err != nil {
		return nil, err
	}
	if args["date"] == nil {
		return nil, mongoerr.New(mongoerr.Location40522, "Missing 'date' parameter to $dateToParts")
	}
	return &lazyExpr{fn: func(c *Ctx, _ []Expr) (any, error) {
		vals, ok, err := evalArgs(c, args, "date", "timezone", "iso8601")
		if err != nil || !ok {
			return nil, err
		}
		loc, err := zoneOf(vals)
		if err != nil {
			return nil, err
		}
		iso := false
		if v, given := vals["iso8601"]; given {
			b, isBool := v.(bool)
			if !isBool {
				return nil, mongoerr.Newf(mongoerr.Location40521, "iso8601 must evaluate to a bool, found %s", TypeName(v))
			}
			iso = b
		}
		t, err := toTime(vals["date"])
		if err != nil {
			return nil, err
		}
		t = t.In(loc)
		var out bson.D
		if iso {
			y, w := t.ISOWeek()
			out = bson.D{{Key: "isoWeekYear", Value: int32(y)}, {Key: "isoWeek", Value: int32(w)}, {Key: "isoDayOfWeek", Value: int32((int(t.Weekday())+6)%7 + 1)}}
		} else {
			out = bson.D{{Key: "year", Value: int32(t.Year())}, {Key: "month", Value: int32(t.Month())}, {Key: "day", Value: int32(t.Day())}}
		}
		return append(out, bson.D{
			{Key: "hour", Value: int32(t.Hour())}, {Key: "minute", Value: int32(t.Minute())},
			{Key: "second", Value: int32(t.Second())}, {Key: "millisecond", Value: int32(t.Nanosecond() / 1e6)},
		}...), nil
	}}, nil
}

var (
	calendarParts = []string{"year", "month", "day"}
	isoParts      = []string{"isoWeekYear", "isoWeek", "isoDayOfWeek"}
	clockParts    = []string{"hour", "minute", "second", "millisecond"}
)

func parseDateFromParts(name string, arg any, s *Scope) (Expr, error) {
	all := append(append(append([]string{"timezone"}, calendarParts...), isoParts...), clockParts...)
	args, err := namedArgs(name, arg, s, all, mongoerr.Location40519, mongoerr.Location40518)
	if err != nil {
		return nil, err
	}
	_, hasYear := args["year"]
	_, hasISOYear := args["isoWeekYear"]
	switch {
	case !hasYear && !hasISOYear:
		return nil, mongoerr.New(mongoerr.Location40516, "$dateFromParts requires either 'year' or 'isoWeekYear' to be present")
	case hasYear && (args["isoWeekYear"] != nil || args["isoWeek"] != nil || args["isoDayOfWeek"] != nil):
		return nil, mongoerr.New(mongoerr.Location40489, "$dateFromParts does not allow mixing natural dates with ISO dates")
	case hasISOYear && (args["month"] != nil || args["day"] != nil):
		return nil, mongoerr.New(mongoerr.Location40525, "$dateFromParts does not allow mixing ISO dates with natural dates")
	}
	return &lazyExpr{fn: func(c *Ctx, _ []Expr) (any, error) {
		vals, ok, err := evalArgs(c, args, all...)
		if err != nil || !ok {
			return nil, err
		}
		loc, err := zoneOf(vals)
		if err != nil {
			return nil, err
		}
		part := func(key string, def int64) (int, error) {
			v, given := vals[key]
			if !given {
				return int(def), nil
			}
			n, whole := int64Of(v)
			if !whole {
				return 0, mongoerr.Newf(mongoerr.Location40515, "'%s' must evaluate to an integer, found %s with value %v", key, TypeName(v), v)
			}
			if (key == "year" || key == "isoWeekYear") && (n < 1 || n > 9999) {
				return 0, mongoerr.Newf(mongoerr.Location40523, "'%s' must evaluate to an integer in the range 1 to 9999, found %d", key, n)
			}
			if n < -32768 || n > 32767 {
				return 0, mongoerr.Newf(mongoerr.Location31034, "'%s' must evaluate to a value in the range [-32768, 32767]; value %d is not in range", key, n)
			}
			return int(n), nil
		}
		var p [7]int
		keys := append(append([]string{}, calendarParts...), clockParts...)
		defs := []int64{0, 1, 1, 0, 0, 0, 0}
		if hasISOYear {
			keys[0], keys[1], keys[2] = isoParts[0], isoParts[1], isoParts[2]
		}
		for i, k := range keys {
			if p[i], err = part(k, defs[i]); err != nil {
				return nil, err
			}
		}
		clock := time.Duration(p[3])*time.Hour + time.Duration(p[4])*time.Minute + time.Duration(p[5])*time.Second + time.Duration(p[6])*time.Millisecond
		var day time.Time
		if hasISOYear {
			jan4 := time.Date(p[0], 1, 4, 0, 0, 0, 0, loc)
			monday := jan4.AddDate(0, 0, -((int(jan4.Weekday()) + 6) % 7))
			day = monday.AddDate(0, 0, (p[1]-1)*7+(p[2]-1))
		} else {
			day = time.Date(p[0], time.Month(1), 1, 0, 0, 0, 0, loc).AddDate(0, p[1]-1, p[2]-1)
		}
		// Clock parts are wall-clock time of that local day.
		y, m, d := day.Date()
		return bson.NewDateTimeFromTime(time.Date(y, m, d, 0, 0, 0, 0, loc).Add(clock)), nil
	}}, nil
}
