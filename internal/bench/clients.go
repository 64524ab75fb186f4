package bench

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// serverCPUsName is the one variable a client count may use: the paper's
// Fig. 7 has as many time-sensitive clients as the server has CPUs, and
// keeps the total constant.
const serverCPUsName = "serverCPUs"

// ClientCount is a group's number of clients: a number, or a sum of terms
// in serverCPUs such as "serverCPUs", "2*serverCPUs" or "32-serverCPUs".
type ClientCount struct {
	Expr string
	// constant and perCPU are the parsed expression: constant + perCPU×CPUs.
	constant, perCPU int
}

// UnmarshalYAML accepts an integer or an expression string.
func (c *ClientCount) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: clients must be a number or an expression such as \"32-serverCPUs\"", n.Line)
	}
	parsed, err := parseClientCount(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*c = parsed
	return nil
}

// MarshalYAML writes the expression back.
func (c ClientCount) MarshalYAML() (any, error) { return c.Expr, nil }

// MarshalText is used by encoding/json.
func (c ClientCount) MarshalText() ([]byte, error) { return []byte(c.Expr), nil }

// UnmarshalText is used by encoding/json.
func (c *ClientCount) UnmarshalText(b []byte) error {
	parsed, err := parseClientCount(string(b))
	if err != nil {
		return err
	}
	*c = parsed
	return nil
}

func parseClientCount(s string) (ClientCount, error) {
	c := ClientCount{Expr: strings.TrimSpace(s)}
	expr := strings.ReplaceAll(c.Expr, " ", "")
	bad := fmt.Errorf("clients %q: want a number or terms like \"serverCPUs\", \"2*serverCPUs\", \"32-serverCPUs\"", s)
	if expr == "" {
		return c, bad
	}
	// Split before every sign so each term keeps its own.
	expr = strings.ReplaceAll(expr, "-", "+-")
	for term := range strings.SplitSeq(expr, "+") {
		if term == "" {
			continue
		}
		sign := 1
		if rest, ok := strings.CutPrefix(term, "-"); ok {
			sign, term = -1, rest
		}
		coef, name, isVar := strings.Cut(term, "*")
		switch {
		case term == serverCPUsName:
			c.perCPU += sign
		case isVar && name == serverCPUsName:
			k, err := strconv.Atoi(coef)
			if err != nil {
				return c, bad
			}
			c.perCPU += sign * k
		default:
			k, err := strconv.Atoi(term)
			if err != nil {
				return c, bad
			}
			c.constant += sign * k
		}
	}
	return c, nil
}

// Resolve evaluates the count for a server with serverCPUs CPUs.
func (c ClientCount) Resolve(serverCPUs int) int {
	return c.constant + c.perCPU*serverCPUs
}

// dependsOnCPUs reports whether the count changes with the server's CPUs.
func (c ClientCount) dependsOnCPUs() bool { return c.perCPU != 0 }
