package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/exec"
	"tierdb/internal/mongoerr"
)

// serverParameter is one parameter getParameter reports: its value and
// whether it can be changed at run time (setParameter: never, here) or at
// startup (a flag).
type serverParameter struct {
	name      string
	value     any
	atStartup bool
}

// parameters are the server parameters tierdb has, with their values.
func (h *Handlers) parameters() []serverParameter {
	return []serverParameter{
		{"authenticationMechanisms", bson.A{"SCRAM-SHA-1", "SCRAM-SHA-256"}, false},
		{"cursorTimeoutMillis", h.opts.CursorTimeout.Milliseconds(), true},
		{"featureCompatibilityVersion", bson.D{{Key: "version", Value: "6.0"}}, false},
		// The memory limit of sorts and blocking stages (never spilled).
		{"internalQueryMaxBlockingSortMemoryUsageBytes", int64(exec.MaxMemoryBytes), false},
		{"localLogicalSessionTimeoutMinutes", h.sessionTimeoutMinutes(), true},
		{"maxBSONDepth", int32(100), false},
		{"transactionLifetimeLimitSeconds", int64(h.opts.TxnLifetime.Seconds()), true},
	}
}

// getParameter answers MongoDB's forms: {getParameter: "*"} or
// {getParameter: {allParameters: true, showDetails}} for every parameter,
// else {getParameter: 1, <name>: 1, ...} for the named ones. Names tierdb
// does not have are skipped, and when none of the names exists the
// answer is InvalidOptions ("no option found to get"), as MongoDB's.
func (h *Handlers) getParameter(_ context.Context, req *Request) (bson.D, error) {
	if req.DB != "admin" {
		return nil, mongoerr.New(mongoerr.Unauthorized, "getParameter may only be run against the admin database.")
	}
	all, details := req.Cmd[0].Value == "*", false
	if d, ok := req.Cmd[0].Value.(bson.D); ok {
		for _, e := range d {
			var err error
			switch e.Key {
			case "allParameters":
				all, err = getBool(d, e.Key, false)
			case "showDetails":
				details, err = getBool(d, e.Key, false)
			default:
				err = mongoerr.Newf(mongoerr.UnknownField, "BSON field 'getParameter.%s' is an unknown field.", e.Key)
			}
			if err != nil {
				return nil, err
			}
		}
	}
	var out bson.D
	for _, p := range h.parameters() {
		if _, asked := lookup(req.Cmd[1:], p.name); !all && !asked {
			continue
		}
		v := p.value
		if details {
			v = bson.D{{Key: "value", Value: p.value}, {Key: "settableAtRuntime", Value: false}, {Key: "settableAtStartup", Value: p.atStartup}}
		}
		out = append(out, bson.E{Key: p.name, Value: v})
	}
	if len(out) == 0 {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "no option found to get")
	}
	return out, nil
}
