package bench

import (
	"os"
	"testing"
)

// TestMain lets the test binary be the client process of the runs the
// tests start (TestSmokeEndToEnd), as tierdb-bench is for its own.
func TestMain(m *testing.M) {
	RunIfClientProcess(os.Args)
	os.Exit(m.Run())
}
