package expr

import (
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// $dateFromString: ISO 8601 dates (as $toDate reads them) or a format of
// %Y %m %d %H %M %S %L %j %z %Z %%. A string without a zone is local time
// in the timezone argument (UTC by default); one with a zone together
// with a timezone argument, and any string that does not parse, are
// ConversionFailure, which onError replaces.

func parseDateFromString(name string, arg any, s *Scope) (Expr, error) {
	args, err := namedArgs(name, arg, s, []string{"dateString", "format", "timezone", "onError", "onNull"}, mongoerr.Location40540, mongoerr.Location40541)
	if err != nil {
		return nil, err
	}
	if args["dateString"] == nil {
		return nil, mongoerr.New(mongoerr.Location40542, "Missing 'dateString' parameter to $dateFromString")
	}
	eval := func(c *Ctx, key string) (any, bool, error) {
		x, ok := args[key]
		if !ok {
			return nil, false, nil
		}
		v, err := x.Eval(c)
		return v, true, err
	}
	return &lazyExpr{fn: func(c *Ctx, _ []Expr) (any, error) {
		format, hasFormat, err := eval(c, "format")
		if err != nil {
			return nil, err
		}
		if hasFormat && !nullish(format) {
			f, ok := format.(string)
			if !ok {
				return nil, mongoerr.Newf(mongoerr.Location40684, "$dateFromString requires that 'format' be a string, found: %s", TypeName(format))
			}
			if err := checkParseFormat(f); err != nil {
				return nil, err
			}
		}
		loc := time.UTC
		tz, hasTZ, err := eval(c, "timezone")
		if err != nil {
			return nil, err
		}
		if hasTZ && !nullish(tz) {
			if loc, err = location(tz); err != nil {
				return nil, err
			}
		}
		str, _, err := eval(c, "dateString")
		if err != nil {
			return nil, err
		}
		if nullish(str) {
			v, given, err := eval(c, "onNull")
			if !given || err != nil {
				return nil, err
			}
			return v, nil
		}
		if (hasTZ && nullish(tz)) || (hasFormat && nullish(format)) {
			return nil, nil
		}
		t, perr := dateFromString(str, format, loc, hasTZ)
		if perr == nil {
			return bson.NewDateTimeFromTime(t), nil
		}
		if v, given, err := eval(c, "onError"); given || err != nil {
			return v, err
		}
		return nil, perr
	}}, nil
}

func dateFromString(str, format any, loc *time.Location, hasTZ bool) (time.Time, error) {
	s, ok := str.(string)
	if !ok {
		return time.Time{}, conversionFailure("$dateFromString requires that 'dateString' be a string, found: %s", TypeName(str))
	}
	if f, ok := format.(string); ok {
		return parseWithFormat(s, f, loc, hasTZ)
	}
	for _, layout := range []string{"2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999", "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999Z0700", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02T15:04Z07:00"} {
		if t, err := time.Parse(layout, s); err == nil {
			if hasTZ {
				return time.Time{}, conversionFailure("you cannot pass in a date/time string with time zone information ('%s') together with a timezone argument", s)
			}
			return t, nil
		}
	}
	return time.Time{}, conversionFailure("Error parsing date string '%s'", s)
}

func checkParseFormat(f string) error {
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		if i+1 == len(f) {
			return mongoerr.New(mongoerr.Location18535, "Unmatched '%' at end of format string")
		}
		i++
		if !strings.ContainsRune("YmdHMSLjzZ%", rune(f[i])) {
			return mongoerr.Newf(mongoerr.Location18536, "Invalid format character '%%%c' in format string", f[i])
		}
	}
	return nil
}

// parseWithFormat reads s by format: each specifier takes up to its
// width of digits (%z an offset ±hhmm or ±hh:mm, %Z minutes), every other
// character must match.
func parseWithFormat(s, f string, loc *time.Location, hasTZ bool) (time.Time, error) {
	fail := func() (time.Time, error) {
		return time.Time{}, conversionFailure("Error parsing date string '%s' with format '%s'", s, f)
	}
	year, month, day, yday := 1970, 1, 1, 0
	hour, minute, sec, ms := 0, 0, 0, 0
	offset, hasOffset := 0, false
	digits := func(max int) (int, bool) {
		n, i := 0, 0
		for ; i < max && len(s) > 0 && s[0] >= '0' && s[0] <= '9'; i++ {
			n = n*10 + int(s[0]-'0')
			s = s[1:]
		}
		return n, i > 0
	}
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || f[i+1] == '%' {
			if f[i] == '%' {
				i++
			}
			if len(s) == 0 || s[0] != f[i] {
				return fail()
			}
			s = s[1:]
			continue
		}
		i++
		ok := true
		switch f[i] {
		case 'Y':
			year, ok = digits(4)
		case 'm':
			month, ok = digits(2)
		case 'd':
			day, ok = digits(2)
		case 'j':
			yday, ok = digits(3)
		case 'H':
			hour, ok = digits(2)
		case 'M':
			minute, ok = digits(2)
		case 'S':
			sec, ok = digits(2)
		case 'L':
			ms, ok = digits(3)
		case 'z', 'Z':
			if len(s) == 0 || (s[0] != '+' && s[0] != '-') {
				return fail()
			}
			sign := 1
			if s[0] == '-' {
				sign = -1
			}
			s = s[1:]
			if f[i] == 'Z' {
				var m int
				m, ok = digits(4)
				offset = sign * m * 60
			} else {
				var h, m int
				h, ok = digits(2)
				if len(s) > 0 && s[0] == ':' {
					s = s[1:]
				}
				m, _ = digits(2)
				offset = sign * (h*3600 + m*60)
			}
			hasOffset = true
		}
		if !ok {
			return fail()
		}
	}
	if len(s) > 0 || month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || sec > 59 {
		return fail()
	}
	if hasOffset {
		if hasTZ {
			return time.Time{}, conversionFailure("you cannot pass in a date/time string with GMT offset together with a timezone argument")
		}
		loc = time.FixedZone("", offset)
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, ms*1e6, loc)
	if yday > 0 {
		t = time.Date(year, 1, yday, hour, minute, sec, ms*1e6, loc)
	}
	if t.Day() != day && yday == 0 {
		return fail() // the 31st of a shorter month
	}
	return t, nil
}
