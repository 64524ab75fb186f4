package commands

import (
	"context"
	"math"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/query"
)

// The argument checks MongoDB's own parsers make, with its codes, for the
// arguments every client sends: maxTimeMS, skip, limit, batchSize.

// getCount reads a count argument as MongoDB's IDL reads a safeInt64 with
// a ">= 0" validator: any number type (a fraction is truncated), never a
// negative one (51024); the wrong type is TypeMismatch.
func getCount(cmd bson.D, command, key string, def int64) (int64, error) {
	v, ok := lookup(cmd, key)
	if !ok || v == nil {
		return def, nil
	}
	var n int64
	switch x := v.(type) {
	case int32:
		n = int64(x)
	case int64:
		n = x
	default:
		f, isNum := asNumber(v)
		if !isNum {
			return 0, mongoerr.Newf(mongoerr.TypeMismatch, "BSON field '%s.%s' is the wrong type '%s', expected types '[long, int, decimal, double]'", command, key, query.TypeName(v))
		}
		if math.IsNaN(f) {
			f = 0
		}
		n = int64(max(min(math.Trunc(f), math.MaxInt64), math.MinInt64))
	}
	if n < 0 {
		return 0, mongoerr.Newf(mongoerr.ValueNegative, "BSON field '%s' value must be >= 0, actual value '%d'", key, n)
	}
	return n, nil
}

// maxTimeMSLimit is the largest maxTimeMS MongoDB takes (INT_MAX).
const maxTimeMSLimit = math.MaxInt32

// parseMaxTimeMS reads maxTimeMS as MongoDB does: a number (BadValue
// otherwise), integral, from 0 to 2^31-1; 0 means no limit.
func parseMaxTimeMS(cmd bson.D) (time.Duration, error) {
	v, ok := lookup(cmd, "maxTimeMS")
	if !ok || v == nil {
		return 0, nil
	}
	f, isNum := asNumber(v)
	if !isNum {
		return 0, mongoerr.New(mongoerr.BadValue, "maxTimeMS must be a number")
	}
	if math.IsNaN(f) || f < 0 || f > maxTimeMSLimit {
		return 0, mongoerr.New(mongoerr.BadValue, "maxTimeMS is out of range")
	}
	if f != math.Trunc(f) {
		return 0, mongoerr.New(mongoerr.BadValue, "maxTimeMS has non-integral value")
	}
	return time.Duration(f) * time.Millisecond, nil
}

// withMaxTime applies maxTimeMS to the request context: past it, the
// request (waiting for admission or running in PostgreSQL) is canceled and
// answers MaxTimeMSExpired (50).
func withMaxTime(ctx context.Context, cmd bson.D) (context.Context, context.CancelFunc, error) {
	if len(cmd) > 0 && cmd[0].Key == "getMore" {
		// getMore's maxTimeMS is an await time for tailable cursors:
		// getMore reads it itself (getMoreContext, tailable.go).
		return ctx, func() {}, nil
	}
	d, err := parseMaxTimeMS(cmd)
	if err != nil || d == 0 {
		return ctx, func() {}, err
	}
	c, cancel := context.WithTimeout(ctx, d)
	return c, cancel, nil
}

// isInterruption reports whether err is the request's interruption
// (maxTimeMS, killOp, client gone) rather than the statement's own
// failure.
func isInterruption(err error) bool {
	e, _ := Map(err)
	switch e.Code {
	case mongoerr.MaxTimeMSExpired, mongoerr.Interrupted, mongoerr.ClientDisconnect:
		return true
	}
	return false
}

// keepTimeLimit gives a new cursor what remains of its command's
// maxTimeMS, for its getMores.
func (c *cursor) keepTimeLimit(ctx context.Context, cmd bson.D) {
	if d, _ := parseMaxTimeMS(cmd); d == 0 {
		return
	}
	if a, ok := c.src.(interface{ AwaitData() bool }); ok && a.AwaitData() {
		return // an awaitData cursor waits by design; getMore's maxTimeMS bounds each wait
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		return
	}
	c.mu.Lock()
	c.timeLeft = max(time.Until(deadline), time.Nanosecond)
	c.mu.Unlock()
}

// timeLimit bounds a getMore by what remains of the cursor's maxTimeMS
// (the time between getMores does not count, as in MongoDB); spent, called
// after the batch, charges the time it took. A cursor with no time left
// answers MaxTimeMSExpired. The caller holds c.mu.
func (c *cursor) timeLimit(ctx context.Context) (_ context.Context, spent func(), err error) {
	if c.timeLeft == 0 {
		return ctx, func() {}, nil
	}
	if c.timeLeft < 0 {
		return ctx, nil, mongoerr.New(mongoerr.MaxTimeMSExpired, "operation exceeded time limit")
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, c.timeLeft)
	return ctx, func() {
		cancel()
		if c.timeLeft -= time.Since(start); c.timeLeft <= 0 {
			c.timeLeft = -1
		}
	}, nil
}
