package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"tierdb/internal/auth"
	"tierdb/internal/qos"
	"tierdb/internal/server"
	"tierdb/internal/storage"
)

// adminPasswordEnv holds the first administrator's password: the
// environment, unlike argv, is not visible to other users in ps.
const (
	adminPasswordEnv = "TIERDB_ADMIN_PASSWORD"
	adminUserEnv     = "TIERDB_ADMIN_USER"
)

type authFlags struct {
	auth          bool
	adminUser     string
	adminPassword string
	tlsCert       string
	tlsKey        string
	tlsCA         string
	// Authentication throttling (auth.Throttle).
	throttleFailures     int
	throttlePeerFailures int
	throttleWindow       time.Duration
	throttleMaxBackoff   time.Duration
}

func (a *authFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&a.auth, "auth", false, "require every connection to authenticate, even before the first user exists (a loopback client may then create it)")
	fs.StringVar(&a.adminUser, "admin-user", os.Getenv(adminUserEnv), "create this administrator (root, in admin) at start if it does not exist; password from $"+adminPasswordEnv+" (default $"+adminUserEnv+")")
	fs.StringVar(&a.adminPassword, "admin-password", "", "the administrator's password; visible in ps, prefer $"+adminPasswordEnv)
	fs.StringVar(&a.tlsCert, "tls-cert", "", "PEM certificate (chain) to serve TLS with; clients then connect with tls=true")
	fs.StringVar(&a.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	fs.StringVar(&a.tlsCA, "tls-ca", "", "PEM CA certificates; when given, clients must present a certificate signed by one of them")
	fs.IntVar(&a.throttleFailures, "auth-throttle-failures", 5, "failed authentications of one user within --auth-throttle-window after which that user's attempts are refused for a while (0: no throttling at all)")
	fs.IntVar(&a.throttlePeerFailures, "auth-throttle-peer-failures", 20, "failed authentications from one client address (any users) within --auth-throttle-window after which its attempts are refused for a while (0: no per-address throttling)")
	fs.DurationVar(&a.throttleWindow, "auth-throttle-window", time.Minute, "span over which failed authentications are counted, and how long the first throttling lasts; each further one of the same user or address doubles")
	fs.DurationVar(&a.throttleMaxBackoff, "auth-throttle-max-backoff", 15*time.Minute, "the longest a user or an address stays throttled")
}

// throttle builds the authentication throttle; nil when it is off.
func (a *authFlags) throttle() (*auth.Throttle, error) {
	if a.throttleFailures < 0 || a.throttlePeerFailures < 0 {
		return nil, errors.New("--auth-throttle-failures and --auth-throttle-peer-failures must be 0 or more")
	}
	if a.throttleFailures > 0 && (a.throttleWindow <= 0 || a.throttleMaxBackoff < a.throttleWindow) {
		return nil, errors.New("--auth-throttle-window must be positive and --auth-throttle-max-backoff at least as long")
	}
	return auth.NewThrottle(auth.ThrottleOptions{UserFailures: a.throttleFailures, PeerFailures: a.throttlePeerFailures,
		Window: a.throttleWindow, MaxBackoff: a.throttleMaxBackoff}), nil
}

// tlsConfig builds the listener's TLS configuration; nil without --tls-cert.
func (a *authFlags) tlsConfig() (*tls.Config, error) {
	if a.tlsCert == "" && a.tlsKey == "" {
		if a.tlsCA != "" {
			return nil, errors.New("--tls-ca needs --tls-cert and --tls-key")
		}
		return nil, nil
	}
	if a.tlsCert == "" || a.tlsKey == "" {
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	cert, err := tls.LoadX509KeyPair(a.tlsCert, a.tlsKey)
	if err != nil {
		return nil, fmt.Errorf("loading --tls-cert/--tls-key: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if a.tlsCA != "" {
		pem, err := os.ReadFile(a.tlsCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca: no PEM certificate in %s", a.tlsCA)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// setupAuth loads users and roles, creates the first administrator if
// asked, and applies the secure default: without a user (and without
// --auth) tierdb serves loopback only, and refuses any other address.
func setupAuth(ctx context.Context, log *slog.Logger, store *storage.Store, listen string, f authFlags) (*auth.Registry, error) {
	throttle, err := f.throttle()
	if err != nil {
		return nil, err
	}
	reg := auth.New(auth.Options{Store: store, Logger: log, Force: f.auth, Throttle: throttle})
	if throttle != nil {
		o := throttle.Options()
		log.Info("authentication throttling on", "user_failures", o.UserFailures, "peer_failures", o.PeerFailures,
			"window", o.Window.String(), "max_backoff", o.MaxBackoff.String())
	}
	if err := reg.Load(ctx); err != nil {
		return nil, fmt.Errorf("reading users: %w", err)
	}
	if f.adminUser != "" {
		if err := createAdmin(ctx, log, reg, f); err != nil {
			return nil, err
		}
	}
	if !server.IsLoopbackListen(listen) {
		if !reg.HasUsers() && !f.auth {
			return nil, fmt.Errorf(`refusing to listen on %s: no user exists, so anyone who can reach that address would have full access.
Configure authentication first, in one of these ways:
  - create an administrator at start: %s=<password> tierdb serve --admin-user admin --listen %s
  - or start with --auth (a client on 127.0.0.1 may then create the first user in the admin database)
  - or create a user while listening on 127.0.0.1 (the default), then restart with --listen %s
Or listen on 127.0.0.1 only`, listen, adminPasswordEnv, listen, listen)
		}
		// Dropping the last user must not open a server that listens
		// beyond loopback.
		reg.SetForce()
	}
	switch {
	case !reg.Required():
		log.Warn("access control is off: no user exists, so every client of " + listen + " has full access; " +
			"this is allowed on loopback only. Create a user (--admin-user, or createUser) to turn it on")
	case !reg.HasUsers():
		log.Warn("access control is on and no user exists: a client on 127.0.0.1 may create the first user in the admin database")
	default:
		log.Info("access control is on", "users", len(reg.Users("")))
	}
	return reg, nil
}

func createAdmin(ctx context.Context, log *slog.Logger, reg *auth.Registry, f authFlags) error {
	name := auth.UserName{User: f.adminUser, DB: "admin"}
	pw := os.Getenv(adminPasswordEnv)
	if f.adminPassword != "" {
		log.Warn("--admin-password is visible to every user of this machine (ps, /proc); prefer $" + adminPasswordEnv)
		if pw == "" {
			pw = f.adminPassword
		}
	}
	if reg.Lookup(name) != nil {
		log.Info("administrator exists; left unchanged", "user", f.adminUser)
		return nil
	}
	if pw == "" {
		return fmt.Errorf("--admin-user %s needs a password: set %s in the environment", f.adminUser, adminPasswordEnv)
	}
	u := &auth.User{Name: name, Roles: []auth.RoleName{{Role: "root", DB: "admin"}}, DefaultTier: qos.Normal, Credentials: map[auth.Mechanism]auth.Credential{}}
	for _, m := range auth.Mechanisms {
		c, err := auth.NewCredential(m, name.User, pw, 0, nil)
		if err != nil {
			return fmt.Errorf("administrator password: %w", err)
		}
		u.Credentials[m] = c
	}
	if err := reg.CreateUser(ctx, u); err != nil {
		return fmt.Errorf("creating the administrator: %w", err)
	}
	log.Info("administrator created", "user", f.adminUser, "db", "admin", "role", "root")
	return nil
}

// redactArgv hides the value of --admin-password in the command line that
// getCmdLineOpts reports to clients.
func redactArgv(argv []string) []string {
	out := make([]string, len(argv))
	copy(out, argv)
	for i, a := range out {
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "admin-password" {
			continue
		}
		if hasValue {
			out[i] = a[:strings.Index(a, "=")+1] + "<redacted>"
		} else if i+1 < len(out) {
			out[i+1] = "<redacted>"
		}
	}
	return out
}
