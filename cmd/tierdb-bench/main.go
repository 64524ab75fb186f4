// Command tierdb-bench is tierdb's benchmark harness, a binary of its own so
// that the server (cmd/tierdb) links none of its load generators, drivers
// and plotting code:
//
//	tierdb-bench [flags] <scenario>   an experiment of the RT-MongoDB papers,
//	                                  QoS off against on (internal/bench)
//	tierdb-bench baseline [flags]     tierdb against the same operations as
//	                                  SQL straight on its PostgreSQL
//	                                  (internal/bench/baseline)
//
// Both start their own PostgreSQL and tierdb processes (the tierdb next to
// this executable unless --tierdb says otherwise) and never touch servers
// they did not start. See docs/benchmarks.md.
package main

import (
	"fmt"
	"os"

	"tierdb/internal/bench/baseline"
	"tierdb/internal/gctune"
)

func main() {
	// The load generator's own collections would show up as latency of the
	// requests it times; like the server, it collects rarely.
	gctune.Start(gctune.DefaultHeadroom)
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "baseline" {
		os.Exit(baseline.Main(args[1:]))
	}
	if len(args) > 0 && args[0] == "help" {
		args = []string{"-h"}
	}
	if err := runScenario(args); err != nil {
		fmt.Fprintln(os.Stderr, "tierdb-bench:", err)
		os.Exit(1)
	}
}
