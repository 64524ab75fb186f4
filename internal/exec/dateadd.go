package exec

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// dateAdd adds n units to d in UTC as MongoDB's $dateAdd does: fixed
// durations up to a week; months, quarters and years on the calendar,
// a day past the end of the month becoming its last day (Jan 31 + 1
// month = Feb 28 or 29).
func dateAdd(d bson.DateTime, unit string, n int64) bson.DateTime {
	ms := map[string]int64{
		"millisecond": 1, "second": 1000, "minute": 60 * 1000, "hour": 3600 * 1000,
		"day": 24 * 3600 * 1000, "week": 7 * 24 * 3600 * 1000,
	}
	if m, ok := ms[unit]; ok {
		return d + bson.DateTime(n*m)
	}
	months := n
	switch unit {
	case "quarter":
		months = 3 * n
	case "year":
		months = 12 * n
	}
	t := d.Time().UTC()
	total := int64(t.Year())*12 + int64(t.Month()-1) + months
	year, month := int(total/12), time.Month(total%12+1)
	if total < 0 && total%12 != 0 {
		year, month = int(total/12)-1, time.Month(total%12+13)
	}
	day := t.Day()
	if last := time.Date(year, month+1, 0, 0, 0, 0, 0, time.UTC).Day(); day > last {
		day = last
	}
	out := time.Date(year, month, day, t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
	return bson.NewDateTimeFromTime(out)
}
