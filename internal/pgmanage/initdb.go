package pgmanage

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// initCluster runs initdb in the empty directory pgDir as account a.
//
// --locale=C because MongoDB compares strings bytewise; --auth=trust because
// the server only listens on a private socket directory (see makeSocketDir).
func initCluster(ctx context.Context, binDir, pgDir string, a account) error {
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "initdb"),
		"-D", pgDir, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C")
	cmd.Dir = pgDir // tierdb's working directory may be unreadable for a
	cmd.Env = childEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: a.credential(), Setpgid: true}
	// SIGINT lets initdb remove what it created; SIGKILL would leave a
	// half-made cluster that the next start refuses to touch.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("pgmanage: initdb %s failed: %w\n%s", pgDir, err, lastLines(string(out), 20))
	}
	return nil
}

// childEnv is tierdb's environment without libpq/server variables such as
// PGDATA or PGPORT, which could contradict the explicit flags.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") {
			env = append(env, kv)
		}
	}
	return env
}
