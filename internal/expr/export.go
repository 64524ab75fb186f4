package expr

import "go.mongodb.org/mongo-driver/v2/bson"

// Arithmetic as the $add, $subtract, $multiply and $divide operators
// compute it (numeric promotion, dates), for stages that step or
// interpolate values ($densify, $linearFill).

// Add is $add of two values.
func Add(a, b any) (any, error) { return add([]any{a, b}) }

// Subtract is $subtract of two values.
func Subtract(a, b any) (any, error) { return subtract([]any{a, b}) }

// Multiply is $multiply of two values.
func Multiply(a, b any) (any, error) { return multiply([]any{a, b}) }

// Divide is $divide of two values.
func Divide(a, b any) (any, error) { return divide([]any{a, b}) }

// NewScopeWith is NewScope where, besides the user variables of vars,
// the system variables named by system (upper case, such as $redact's
// DESCEND, PRUNE and KEEP) may be read; their values come from vars.
func NewScopeWith(vars map[string]any, system ...string) *Scope {
	s := NewScope(vars)
	s.system = map[string]bool{}
	for _, n := range system {
		s.system[n] = true
	}
	return s
}

// SetCurrent points $$CURRENT at v, leaving $$ROOT: $redact evaluates its
// expression at each embedded document of the one it redacts.
func (c *Ctx) SetCurrent(v any) { c.current = v }

// nowVar is where WithNow keeps $$NOW among the variables: an upper-case
// name, which no user variable can have, and which resolves to $$NOW
// before any variable is looked up.
const nowVar = "NOW"

// WithNow is vars plus now as the $$NOW that a filter's $expr compiled
// with them reads, so that one command has one $$NOW everywhere.
func WithNow(vars map[string]any, now bson.DateTime) map[string]any {
	out := make(map[string]any, len(vars)+1)
	for k, v := range vars {
		out[k] = v
	}
	out[nowVar] = now
	return out
}

// nowOf is the $$NOW WithNow put in vars, or the time now.
func nowOf(vars map[string]any) bson.DateTime {
	if n, ok := vars[nowVar].(bson.DateTime); ok {
		return n
	}
	return Now()
}
