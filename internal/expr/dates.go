package expr

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // time zones do not depend on the host's zoneinfo

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

func dateOps() map[string]parser {
	return map[string]parser{
		"$year":         dateExtractor(func(t time.Time) int { return t.Year() }),
		"$month":        dateExtractor(func(t time.Time) int { return int(t.Month()) }),
		"$dayOfMonth":   dateExtractor(func(t time.Time) int { return t.Day() }),
		"$hour":         dateExtractor(func(t time.Time) int { return t.Hour() }),
		"$minute":       dateExtractor(func(t time.Time) int { return t.Minute() }),
		"$second":       dateExtractor(func(t time.Time) int { return t.Second() }),
		"$millisecond":  dateExtractor(func(t time.Time) int { return t.Nanosecond() / 1e6 }),
		"$dayOfWeek":    dateExtractor(func(t time.Time) int { return int(t.Weekday()) + 1 }),
		"$dayOfYear":    dateExtractor(func(t time.Time) int { return t.YearDay() }),
		"$week":         dateExtractor(sundayWeek),
		"$isoWeek":      dateExtractor(func(t time.Time) int { _, w := t.ISOWeek(); return w }),
		"$isoWeekYear":  dateExtractor(func(t time.Time) int { y, _ := t.ISOWeek(); return y }),
		"$isoDayOfWeek": dateExtractor(func(t time.Time) int { return (int(t.Weekday())+6)%7 + 1 }),
		"$dateToString": parseDateToString,
	}
}

// sundayWeek is the week of the year with weeks starting on Sunday, the
// days before the year's first Sunday in week 0 (strftime's %U).
func sundayWeek(t time.Time) int {
	return (t.YearDay() - 1 + 7 - int(t.Weekday())) / 7
}

// toTime reads a value as a date: dates, timestamps and ObjectIds.
func toTime(v any) (time.Time, error) {
	switch x := v.(type) {
	case bson.DateTime:
		return x.Time().UTC(), nil
	case bson.Timestamp:
		return time.Unix(int64(x.T), 0).UTC(), nil
	case bson.ObjectID:
		return x.Timestamp().UTC(), nil
	}
	return time.Time{}, mongoerr.Newf(mongoerr.Location16006, "can't convert from BSON type %s to Date", TypeName(v))
}

// location resolves a timezone argument: an Olson name ("Europe/Paris"),
// "UTC"/"GMT", or an offset "+hh", "+hhmm", "+hh:mm".
func location(v any) (*time.Location, error) {
	s, ok := v.(string)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location40517, "timezone must evaluate to a string, found %s", TypeName(v))
	}
	if strings.HasPrefix(s, "+") || strings.HasPrefix(s, "-") {
		digits := strings.ReplaceAll(s[1:], ":", "")
		if n, err := strconv.Atoi(digits); err == nil && (len(digits) == 2 || len(digits) == 4) {
			h, m := n, 0
			if len(digits) == 4 {
				h, m = n/100, n%100
			}
			off := (h*60 + m) * 60
			if s[0] == '-' {
				off = -off
			}
			return time.FixedZone(s, off), nil
		}
	} else if loc, err := time.LoadLocation(s); err == nil && s != "" && s != "Local" {
		return loc, nil
	}
	return nil, mongoerr.Newf(mongoerr.Location40485, "unrecognized time zone identifier: \"%s\"", s)
}

// dateExtractor is $year and its kin: {$op: date}, {$op: [date]} or
// {$op: {date: ..., timezone: ...}}.
func dateExtractor(fn func(time.Time) int) parser {
	return func(name string, arg any, s *Scope) (Expr, error) {
		var dateV, tzV any = arg, nil
		if d, ok := arg.(bson.D); ok && len(d) > 0 && !strings.HasPrefix(d[0].Key, "$") {
			dateV = nil
			hasDate := false
			for _, e := range d {
				switch e.Key {
				case "date":
					dateV, hasDate = e.Value, true
				case "timezone":
					tzV = e.Value
				default:
					return nil, mongoerr.Newf(mongoerr.Location40535, "unrecognized option to %s: \"%s\". Only 'date' and 'timezone' are allowed.", name, e.Key)
				}
			}
			if !hasDate {
				return nil, mongoerr.Newf(mongoerr.Location40539, "missing 'date' argument to %s, provided: %s", name, formatDoc(d))
			}
		} else if a, ok := arg.(bson.A); ok {
			if len(a) != 1 {
				return nil, mongoerr.Newf(mongoerr.Location40536, "%s accepts exactly one argument if given an array, but was given %d", name, len(a))
			}
			dateV = a[0]
		}
		date, err := Parse(dateV, s)
		if err != nil {
			return nil, err
		}
		tz := Expr(constant{"UTC"})
		if tzV != nil {
			if tz, err = Parse(tzV, s); err != nil {
				return nil, err
			}
		}
		return &opExpr{args: []Expr{date, tz}, fn: func(a []any) (any, error) {
			if nullish(a[0]) || nullish(a[1]) {
				return nil, nil
			}
			loc, err := location(a[1])
			if err != nil {
				return nil, err
			}
			t, err := toTime(a[0])
			if err != nil {
				return nil, err
			}
			return int32(fn(t.In(loc))), nil
		}}, nil
	}
}

const isoFormat = "%Y-%m-%dT%H:%M:%S.%LZ"

func formatISO(d bson.DateTime) string {
	s, _ := formatDate(isoFormat, d.Time().UTC())
	return s
}

func parseDateToString(name string, arg any, s *Scope) (Expr, error) {
	d, ok := arg.(bson.D)
	if !ok {
		return nil, mongoerr.New(mongoerr.Location18629, "$dateToString only supports an object as its argument")
	}
	var date, format, tz, onNull Expr = nil, constant{nil}, constant{"UTC"}, nil
	hasFormat := false
	for _, e := range d {
		x, err := Parse(e.Value, s)
		if err != nil {
			return nil, err
		}
		switch e.Key {
		case "date":
			date = x
		case "format":
			format, hasFormat = x, true
		case "timezone":
			tz = x
		case "onNull":
			onNull = x
		default:
			return nil, mongoerr.Newf(mongoerr.Location18534, "Unrecognized argument to $dateToString: %s", e.Key)
		}
	}
	if date == nil {
		return nil, mongoerr.New(mongoerr.Location18628, "Missing 'date' parameter to $dateToString")
	}
	return &lazyExpr{fn: func(c *Ctx, _ []Expr) (any, error) {
		dv, err := date.Eval(c)
		if err != nil {
			return nil, err
		}
		f := isoFormat
		if hasFormat {
			fv, err := format.Eval(c)
			if err != nil {
				return nil, err
			}
			if !nullish(fv) {
				fs, ok := fv.(string)
				if !ok {
					return nil, mongoerr.Newf(mongoerr.Location18533, "$dateToString requires that 'format' be a string, found: %s with value %s", TypeName(fv), FormatValue(fv))
				}
				if _, err := formatDate(fs, time.Time{}); err != nil {
					return nil, err
				}
				f = fs
			} else {
				f = ""
			}
		}
		tzv, err := tz.Eval(c)
		if err != nil {
			return nil, err
		}
		var loc *time.Location
		if !nullish(tzv) {
			if loc, err = location(tzv); err != nil {
				return nil, err
			}
		}
		if nullish(dv) {
			if onNull != nil {
				return onNull.Eval(c)
			}
			return nil, nil
		}
		if loc == nil || (hasFormat && f == "") {
			return nil, nil
		}
		t, err := toTime(dv)
		if err != nil {
			return nil, err
		}
		return formatDate(f, t.In(loc))
	}}, nil
}

// formatDate formats t with $dateToString's specifiers.
func formatDate(format string, t time.Time) (string, error) {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+1 >= len(format) {
			return "", mongoerr.New(mongoerr.Location18535, "Unmatched '%' at end of format string")
		}
		i++
		isoYear, isoWeek := t.ISOWeek()
		_, off := t.Zone()
		switch format[i] {
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'G':
			fmt.Fprintf(&b, "%04d", isoYear)
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case 'L':
			fmt.Fprintf(&b, "%03d", t.Nanosecond()/1e6)
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case 'w':
			fmt.Fprintf(&b, "%d", int(t.Weekday())+1)
		case 'u':
			wd := int(t.Weekday())
			if wd == 0 {
				wd = 7
			}
			fmt.Fprintf(&b, "%d", wd)
		case 'U':
			fmt.Fprintf(&b, "%02d", sundayWeek(t))
		case 'V':
			fmt.Fprintf(&b, "%02d", isoWeek)
		case 'Y':
			fmt.Fprintf(&b, "%04d", t.Year())
		case 'z':
			sign := '+'
			if off < 0 {
				sign, off = '-', -off
			}
			fmt.Fprintf(&b, "%c%02d%02d", sign, off/3600, off%3600/60)
		case 'Z':
			fmt.Fprintf(&b, "%d", off/60)
		case '%':
			b.WriteByte('%')
		default:
			return "", mongoerr.Newf(mongoerr.Location18536, "Invalid format character '%%%c' in format string", format[i])
		}
	}
	return b.String(), nil
}
