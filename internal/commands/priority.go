package commands

import (
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/qos"
	"tierdb/internal/query"
)

// priorityField is the per-request tier override any command may carry.
const priorityField = "priority"

func parseTier(v any, field string) (qos.Tier, error) {
	s, ok := v.(string)
	if ok {
		if t, ok := qos.ParseTier(s); ok {
			return t, nil
		}
	}
	return qos.Normal, mongoerr.Newf(mongoerr.BadValue, "%s must be one of \"high\", \"normal\", \"low\"; got %s", field, renderArg(v))
}

func renderArg(v any) string {
	if s, ok := v.(string); ok {
		return "\"" + s + "\""
	}
	return query.TypeName(v)
}

// requestTier is the tier a request runs at: its own priority field if any,
// else the session's. Both are checked against the session's rights.
func (h *Handlers) requestTier(req *Request) (qos.Tier, error) {
	t := qos.Normal
	if req.Session != nil {
		t = req.Session.Tier
	}
	if v, ok := lookup(req.Cmd[1:], priorityField); ok {
		var err error
		if t, err = parseTier(v, priorityField); err != nil {
			return t, err
		}
		if err := h.authorizeTier(req.Session, t); err != nil {
			return t, err
		}
	}
	return t, nil
}

// authorizeTier is the tier privilege check: a user may use the tiers its
// roles grant (useTierHigh, useTierNormal, useTierLow; each includes the
// less important ones) and its default tier. While access control is off
// (no user yet, loopback only) every tier is open.
func (h *Handlers) authorizeTier(s *Session, t qos.Tier) error {
	reg := h.opts.Auth
	if reg == nil {
		return nil
	}
	if s == nil || s.User == nil {
		if !reg.Required() {
			return nil
		}
		return mongoerr.Newf(mongoerr.Unauthorized, "using the %s tier requires authentication", t)
	}
	if s.User.Grants.MayUseTier(t) {
		return nil
	}
	return mongoerr.Newf(mongoerr.Unauthorized, "not authorized to use the %s tier: user %s may use %s and less important tiers",
		t, s.User.User.Name.User, s.User.Grants.BestTier)
}

// setClientPriority sets the tier of the session until changed or closed.
func (h *Handlers) setClientPriority(_ context.Context, req *Request) (bson.D, error) {
	t, err := parseTier(req.Cmd[0].Value, "setClientPriority")
	if err != nil {
		return nil, err
	}
	if req.Session == nil {
		return nil, mongoerr.New(mongoerr.IllegalOperation, "setClientPriority needs a client session")
	}
	if err := h.authorizeTier(req.Session, t); err != nil {
		return nil, err
	}
	was := req.Session.Tier
	req.Session.Tier = t
	return bson.D{{Key: "was", Value: was.String()}, {Key: "priority", Value: t.String()}}, nil
}

// tierNames lists the tiers for help texts.
func tierNames() string {
	names := make([]string, qos.NumTiers)
	for t := qos.Tier(0); t < qos.NumTiers; t++ {
		names[t] = t.String()
	}
	return strings.Join(names, ", ")
}
