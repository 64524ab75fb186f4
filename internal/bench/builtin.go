package bench

import (
	"bytes"
	"embed"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
)

// builtins are the scenarios shipped in the binary.
//
//go:embed scenarios/*.yaml
var builtins embed.FS

// BuiltinScenarios lists the names of the scenarios shipped in the binary.
func BuiltinScenarios() []string {
	entries, _ := builtins.ReadDir("scenarios")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	slices.Sort(names)
	return names
}

// LoadScenario returns a built-in scenario by name, or reads a YAML file.
// A name that is neither says which built-in ones exist.
func LoadScenario(nameOrPath string) (*Scenario, error) {
	if slices.Contains(BuiltinScenarios(), nameOrPath) {
		b, err := builtins.ReadFile(path.Join("scenarios", nameOrPath+".yaml"))
		if err != nil {
			return nil, err
		}
		return ParseScenario(bytes.NewReader(b))
	}
	f, err := os.Open(nameOrPath)
	if err != nil {
		if os.IsNotExist(err) && !strings.ContainsAny(nameOrPath, "/.") {
			return nil, fmt.Errorf("no built-in scenario %q (built-in: %s) and no such file", nameOrPath, strings.Join(BuiltinScenarios(), ", "))
		}
		return nil, err
	}
	defer f.Close()
	s, err := ParseScenario(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", nameOrPath, err)
	}
	return s, nil
}
