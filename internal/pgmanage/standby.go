package pgmanage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// baseBackup fills the empty directory pgDir with a copy of the primary,
// taken as account a through the slot that then keeps the WAL the new
// standby needs.
func baseBackup(ctx context.Context, binDir, pgDir string, a account, sb StandbyOptions) error {
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "pg_basebackup"),
		"-D", pgDir, "-d", sb.PrimaryConnString, "-X", "stream", "-S", sb.SlotName, "-c", "fast", "--no-password")
	cmd.Dir = pgDir
	cmd.Env = childEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: a.credential(), Setpgid: true}
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgmanage: pg_basebackup into %s failed: %w\n%s", pgDir, err, lastLines(string(out), 20))
	}
	return nil
}

// rewind makes the stopped former primary in pgDir follow the timeline of
// the server at source (the standby promoted in its place), discarding what
// it wrote after the promotion point. Those writes were never acknowledged
// beyond w:1 while no standby had applied them.
func rewind(ctx context.Context, binDir, pgDir string, a account, source string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "pg_rewind"),
		"-D", pgDir, "--source-server", source)
	cmd.Dir = pgDir
	cmd.Env = childEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: a.credential(), Setpgid: true}
	cmd.WaitDelay = 10 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgmanage: pg_rewind of %s failed: %w\n%s", pgDir, err, lastLines(string(out), 20))
	}
	return nil
}

// writeStandbySignal creates standby.signal, which starts the server in
// recovery as a standby.
func writeStandbySignal(pgDir string, a account) error {
	path := filepath.Join(pgDir, "standby.signal")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("pgmanage: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("pgmanage: %w", err)
	}
	if a.switchUser {
		if err := os.Chown(path, a.UID, a.GID); err != nil {
			return fmt.Errorf("pgmanage: %w", err)
		}
	}
	return nil
}

// Promote ends recovery on a standby and makes it a primary; it returns once
// the server accepts writes or ctx ends.
func (c *Cluster) Promote(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, c.AdminConnString())
	if err != nil {
		return fmt.Errorf("pgmanage: promote: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var ok bool
	if err := conn.QueryRow(ctx, "SELECT pg_promote(true, 60)").Scan(&ok); err != nil {
		return fmt.Errorf("pgmanage: promote: %w", err)
	}
	if !ok {
		return errors.New("pgmanage: promote: the server did not leave recovery within 60s")
	}
	return nil
}
