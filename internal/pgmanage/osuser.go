package pgmanage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// OSUser is the operating-system account the PostgreSQL processes run as,
// for code that renices, pins or signals them.
type OSUser struct {
	Name string
	UID  int
	GID  int
}

// createdUserName is the system user made for PostgreSQL when tierdb runs as
// root and neither Options.OSUser nor a "postgres" user is available.
const createdUserName = "tierdb"

// account is the OSUser plus how to become it.
type account struct {
	OSUser
	groups []uint32
	// switchUser is set when tierdb is root and children must drop to OSUser.
	switchUser bool
}

// credential is what child processes run with; nil means "as tierdb".
func (a account) credential() *syscall.Credential {
	if !a.switchUser {
		return nil
	}
	return &syscall.Credential{Uid: uint32(a.UID), Gid: uint32(a.GID), Groups: a.groups}
}

// resolveAccount picks the account PostgreSQL runs as (see Options.OSUser).
func resolveAccount(ctx context.Context, opts Options, pgDir string, logger *slog.Logger) (account, error) {
	if os.Geteuid() != 0 {
		return currentAccount(), nil
	}
	name := opts.OSUser
	if name == "" {
		// An existing cluster keeps running as whoever created it, even if a
		// "postgres" user appeared since.
		if a, ok := clusterOwner(pgDir); ok {
			return a, nil
		}
		if _, err := user.Lookup("postgres"); err == nil {
			name = "postgres"
		}
	}
	if name == "" {
		name = createdUserName
		if err := ensureSystemUser(ctx, name, logger); err != nil {
			return account{}, err
		}
	}
	u, err := user.Lookup(name)
	if err != nil {
		return account{}, fmt.Errorf("pgmanage: PostgreSQL OS user: %w", err)
	}
	a, err := accountFromUser(u)
	if err != nil {
		return account{}, err
	}
	if a.UID == 0 {
		return account{}, fmt.Errorf("pgmanage: PostgreSQL refuses to run as root, and OS user %q has uid 0; choose an unprivileged user", name)
	}
	return a, nil
}

func currentAccount() account {
	a := account{OSUser: OSUser{UID: os.Geteuid(), GID: os.Getegid()}}
	a.Name = strconv.Itoa(a.UID)
	if u, err := user.LookupId(a.Name); err == nil {
		a.Name = u.Username
	}
	return a
}

func accountFromUser(u *user.User) (account, error) {
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err := errors.Join(err1, err2); err != nil {
		return account{}, fmt.Errorf("pgmanage: OS user %q: %w", u.Username, err)
	}
	a := account{OSUser: OSUser{Name: u.Username, UID: uid, GID: gid}, switchUser: true}
	// Supplementary groups are a nicety (e.g. ssl-cert); failing to list
	// them is not a reason to refuse to start.
	if ids, err := u.GroupIds(); err == nil {
		for _, s := range ids {
			if g, err := strconv.ParseUint(s, 10, 32); err == nil {
				a.groups = append(a.groups, uint32(g))
			}
		}
	}
	return a, nil
}

// clusterOwner returns the non-root owner of an initialized cluster.
func clusterOwner(pgDir string) (account, bool) {
	fi, err := os.Stat(filepath.Join(pgDir, "PG_VERSION"))
	if err != nil {
		return account{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Uid == 0 {
		return account{}, false
	}
	if u, err := user.LookupId(strconv.FormatUint(uint64(st.Uid), 10)); err == nil {
		if a, err := accountFromUser(u); err == nil {
			return a, true
		}
	}
	// A uid without a passwd entry (e.g. a volume from another container)
	// still works for running the server.
	return account{
		OSUser:     OSUser{Name: strconv.FormatUint(uint64(st.Uid), 10), UID: int(st.Uid), GID: int(st.Gid)},
		switchUser: true,
	}, true
}

func ensureSystemUser(ctx context.Context, name string, logger *slog.Logger) error {
	if _, err := user.Lookup(name); err == nil {
		return nil
	}
	logger.Info("creating system user for PostgreSQL (it refuses to run as root)", "user", name)
	out, err := exec.CommandContext(ctx, "useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name).CombinedOutput()
	if err != nil {
		if _, lerr := user.Lookup(name); lerr == nil {
			return nil // created concurrently
		}
		return fmt.Errorf("pgmanage: tierdb runs as root, PostgreSQL cannot, and creating system user %q failed: %w: %s; "+
			"create an unprivileged user for PostgreSQL (or a \"postgres\" user), or run tierdb as a non-root user",
			name, err, strings.TrimSpace(string(out)))
	}
	return nil
}
