package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/qos"
)

// Store persists user and role documents (storage implements it). Documents
// are opaque BSON to the store; this package owns their shape.
type Store interface {
	LoadAuth(ctx context.Context) (users, roles [][]byte, err error)
	PutUser(ctx context.Context, db, name string, doc []byte, create bool) error
	DeleteUser(ctx context.Context, db, name string) (bool, error)
	PutRole(ctx context.Context, db, name string, doc []byte, create bool) error
	DeleteRole(ctx context.Context, db, name string) (bool, error)
}

// UserName names a user: its name and its authentication database.
type UserName struct {
	User string
	DB   string
}

func (u UserName) String() string { return u.DB + "." + u.User }

// User is one user as stored.
type User struct {
	Name        UserName
	Credentials map[Mechanism]Credential
	Roles       []RoleName
	CustomData  bson.Raw
	// DefaultTier is applied to a connection when the user authenticates,
	// and is a tier the user may always use.
	DefaultTier qos.Tier
	// Weight is the user's share within its tier relative to other users
	// (φ of seed 004); 0 means the default, 1.
	Weight float64
	// SLO is the user's p99.9 latency objective (0: none), which the
	// gate's SLO controller steers by how long the user's requests wait in
	// their tier's round before going ahead of it (qos/slo.go), and at the
	// high tier by the channel's anticipation; the weight is not changed.
	SLO time.Duration
	// ID is MongoDB's userId: a random UUID given at creation, so a user
	// dropped and created again under the same name is another user.
	// Users created before tierdb kept one have none.
	ID []byte
}

// Mechanisms lists the user's mechanisms, strongest first.
func (u *User) Mechanisms() []Mechanism {
	var out []Mechanism
	for _, m := range Mechanisms {
		if _, ok := u.Credentials[m]; ok {
			out = append(out, m)
		}
	}
	return out
}

// Principal is an authenticated identity with its resolved grants, valid
// for one generation of the registry.
type Principal struct {
	User   *User
	Grants *Grants
	gen    uint64
}

// Options configure a Registry.
type Options struct {
	Store  Store
	Logger *slog.Logger
	// Force requires authentication even while no user exists (--auth).
	Force bool
	// Secret keys the decoy credentials of unknown users; random when nil.
	Secret []byte
	// Throttle refuses authentications after repeated failures; nil: none.
	Throttle *Throttle
}

type snapshot struct {
	gen    uint64
	users  map[UserName]*Principal
	roles  map[RoleName]*Role
	digest [32]byte
}

// Registry is the in-memory copy of every user and role, the source of
// every check. Readers take an immutable snapshot (one atomic load);
// changes are written through to the Store and then swap in a new snapshot,
// which bumps the generation so sessions re-resolve their principal.
type Registry struct {
	opts  Options
	log   *slog.Logger
	force atomic.Bool
	mu    sync.Mutex // serialises changes and reloads
	snap  atomic.Pointer[snapshot]
}

// New builds an empty registry; call Load to read the store.
func New(opts Options) *Registry {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Secret == nil {
		opts.Secret = make([]byte, 32)
		_, _ = rand.Read(opts.Secret)
	}
	r := &Registry{opts: opts, log: opts.Logger}
	r.force.Store(opts.Force)
	r.snap.Store(&snapshot{users: map[UserName]*Principal{}, roles: map[RoleName]*Role{}})
	return r
}

// Secret is the key for decoy credentials.
func (r *Registry) Secret() []byte { return r.opts.Secret }

// Throttle is the authentication throttle; nil when throttling is off.
func (r *Registry) Throttle() *Throttle { return r.opts.Throttle }

// SetForce requires authentication even with no users (used when tierdb
// listens beyond loopback: dropping the last user must not open it).
func (r *Registry) SetForce() { r.force.Store(true) }

// Required reports whether every connection must authenticate.
func (r *Registry) Required() bool { return r.force.Load() || len(r.snap.Load().users) > 0 }

// Forced reports whether --auth (or a non-loopback listener) forces auth.
func (r *Registry) Forced() bool { return r.force.Load() }

// HasUsers reports whether any user exists.
func (r *Registry) HasUsers() bool { return len(r.snap.Load().users) > 0 }

// Load (re)reads every user and role from the store. A load that finds
// what the registry already holds changes nothing (no new generation).
func (r *Registry) Load(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.loadLocked(ctx)
}

func (r *Registry) loadLocked(ctx context.Context) error {
	if r.opts.Store == nil {
		return nil
	}
	users, roles, err := r.opts.Store.LoadAuth(ctx)
	if err != nil {
		return err
	}
	h := sha256.New()
	for _, set := range [][][]byte{users, roles} {
		for _, d := range set {
			h.Write(d)
		}
		h.Write([]byte{0})
	}
	var digest [32]byte
	h.Sum(digest[:0])
	cur := r.snap.Load()
	if cur.gen > 0 && digest == cur.digest {
		return nil
	}
	next := &snapshot{gen: cur.gen + 1, users: map[UserName]*Principal{}, roles: map[RoleName]*Role{}, digest: digest}
	for _, d := range roles {
		role, err := decodeRole(d)
		if err != nil {
			r.log.Error("skipping an unreadable role document", "err", err)
			continue
		}
		next.roles[role.Name] = role
	}
	for _, d := range users {
		u, err := decodeUser(d)
		if err != nil {
			r.log.Error("skipping an unreadable user document", "err", err)
			continue
		}
		next.users[u.Name] = &Principal{User: u, Grants: resolve(u.Roles, next.roles, u.DefaultTier), gen: next.gen}
	}
	r.snap.Store(next)
	return nil
}

// Lookup returns the current principal of a user, nil if there is none.
func (r *Registry) Lookup(n UserName) *Principal { return r.snap.Load().users[n] }

// Fresh returns p as of the current generation: p itself when nothing
// changed (the per-request cost: one atomic load and a compare), the
// re-resolved principal after a change, nil if the user was dropped.
func (r *Registry) Fresh(p *Principal) *Principal {
	s := r.snap.Load()
	if p.gen == s.gen {
		return p
	}
	return s.users[p.User.Name]
}

// Credential returns a user's credential for a mechanism.
func (r *Registry) Credential(n UserName, m Mechanism) (Credential, bool) {
	p := r.Lookup(n)
	if p == nil {
		return Credential{}, false
	}
	c, ok := p.User.Credentials[m]
	return c, ok
}

// Users lists the users of db ("" for every database), sorted.
func (r *Registry) Users(db string) []*Principal {
	s := r.snap.Load()
	var out []*Principal
	for n, p := range s.users {
		if db == "" || n.DB == db {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].User.Name.String() < out[j].User.Name.String() })
	return out
}

// Role returns a custom role.
func (r *Registry) Role(n RoleName) (*Role, bool) {
	role, ok := r.snap.Load().roles[n]
	return role, ok
}

// Roles lists the custom roles of db, sorted.
func (r *Registry) Roles(db string) []*Role {
	s := r.snap.Load()
	var out []*Role
	for n, role := range s.roles {
		if db == "" || n.DB == db {
			out = append(out, role)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name.String() < out[j].Name.String() })
	return out
}

// RoleExists reports whether n is a built-in or custom role.
func (r *Registry) RoleExists(n RoleName) bool {
	if IsBuiltin(n) {
		return true
	}
	_, ok := r.Role(n)
	return ok
}

// Inherited lists the roles reachable from roles, themselves included.
func (r *Registry) Inherited(roles []RoleName) []RoleName {
	return inherited(roles, r.snap.Load().roles)
}

// Privileges lists the privileges roles grant (flattened, custom and
// built-in), for usersInfo/rolesInfo with showPrivileges.
func (r *Registry) Privileges(roles []RoleName) []Privilege {
	s := r.snap.Load()
	var out []Privilege
	for _, n := range inherited(roles, s.roles) {
		if IsBuiltin(n) {
			out = append(out, BuiltinPrivileges(n)...)
		} else if cr, ok := s.roles[n]; ok {
			out = append(out, cr.Privileges...)
		}
	}
	return out
}

func (r *Registry) checkRoles(s *snapshot, roles []RoleName) error {
	for _, n := range roles {
		if IsBuiltin(n) {
			continue
		}
		if _, ok := s.roles[n]; !ok {
			return errorf(KindRoleNotFound, "Could not find role: %s", n)
		}
	}
	return nil
}

// CreateUser adds a user; its roles must exist.
func (r *Registry) CreateUser(ctx context.Context, u *User) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.snap.Load()
	if _, ok := s.users[u.Name]; ok {
		return errorf(KindUserExists, "User \"%s@%s\" already exists", u.Name.User, u.Name.DB)
	}
	if err := r.checkRoles(s, u.Roles); err != nil {
		return err
	}
	if u.ID == nil {
		u.ID = make([]byte, 16)
		if _, err := rand.Read(u.ID); err != nil {
			return err
		}
		u.ID[6] = u.ID[6]&0x0f | 0x40 // version 4
		u.ID[8] = u.ID[8]&0x3f | 0x80 // RFC 4122 variant
	}
	if err := r.opts.Store.PutUser(ctx, u.Name.DB, u.Name.User, encodeUser(u), true); err != nil {
		return err
	}
	return r.loadLocked(ctx)
}

// UpdateUser changes a user with fn (which edits a copy).
func (r *Registry) UpdateUser(ctx context.Context, n UserName, fn func(u *User) error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.snap.Load()
	p, ok := s.users[n]
	if !ok {
		return errorf(KindUserNotFound, "Could not find user \"%s\" for db \"%s\"", n.User, n.DB)
	}
	u := *p.User
	u.Credentials = make(map[Mechanism]Credential, len(p.User.Credentials))
	for m, c := range p.User.Credentials {
		u.Credentials[m] = c
	}
	u.Roles = append([]RoleName(nil), p.User.Roles...)
	if err := fn(&u); err != nil {
		return err
	}
	if err := r.checkRoles(s, u.Roles); err != nil {
		return err
	}
	if err := r.opts.Store.PutUser(ctx, n.DB, n.User, encodeUser(&u), false); err != nil {
		return err
	}
	return r.loadLocked(ctx)
}

// DropUser removes a user.
func (r *Registry) DropUser(ctx context.Context, n UserName) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	ok, err := r.opts.Store.DeleteUser(ctx, n.DB, n.User)
	if err != nil {
		return err
	}
	if !ok {
		return errorf(KindUserNotFound, "Could not find user \"%s\" for db \"%s\"", n.User, n.DB)
	}
	return r.loadLocked(ctx)
}

// validateRole checks what MongoDB checks: the roles it inherits exist and
// do not lead back to it, its privileges stay in its own database (unless
// it is defined in admin), and actions fit their resource.
func (r *Registry) validateRole(s *snapshot, role *Role) error {
	if IsBuiltin(role.Name) {
		return errorf(KindBadValue, "Cannot create or change the built-in role %s", role.Name)
	}
	if err := r.checkRoles(s, role.Roles); err != nil {
		return err
	}
	roles := make(map[RoleName]*Role, len(s.roles)+1)
	for k, v := range s.roles {
		roles[k] = v
	}
	roles[role.Name] = role
	for _, sub := range role.Roles {
		if sub == role.Name {
			return errorf(KindBadValue, "Role %s cannot inherit from itself", role.Name)
		}
		for _, n := range inherited([]RoleName{sub}, roles) {
			if n == role.Name {
				return errorf(KindBadValue, "Granting %s to %s would introduce a cycle", sub, role.Name)
			}
		}
	}
	for _, p := range role.Privileges {
		res := p.Resource
		if role.Name.DB != "admin" && (res.Cluster || res.AnyResource || res.DB != role.Name.DB) {
			return errorf(KindBadValue, "Roles on the '%s' database cannot be granted privileges that target other databases or the cluster", role.Name.DB)
		}
		if !res.Cluster && !res.AnyResource && p.Actions&clusterActions != 0 {
			return errorf(KindBadValue, "actions %v apply to the cluster resource only ({cluster: true})", (p.Actions & clusterActions).Names())
		}
		if res.Cluster && p.Actions&^clusterActions != 0 {
			return errorf(KindBadValue, "actions %v do not apply to the cluster resource", (p.Actions &^ clusterActions).Names())
		}
	}
	return nil
}

// CreateRole adds a custom role.
func (r *Registry) CreateRole(ctx context.Context, role *Role) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.snap.Load()
	if _, ok := s.roles[role.Name]; ok || IsBuiltin(role.Name) {
		return errorf(KindRoleExists, "Role \"%s\" already exists", role.Name)
	}
	if err := r.validateRole(s, role); err != nil {
		return err
	}
	if err := r.opts.Store.PutRole(ctx, role.Name.DB, role.Name.Role, encodeRole(role), true); err != nil {
		return err
	}
	return r.loadLocked(ctx)
}

// UpdateRole changes a custom role with fn (which edits a copy).
func (r *Registry) UpdateRole(ctx context.Context, n RoleName, fn func(role *Role) error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.snap.Load()
	cur, ok := s.roles[n]
	if !ok {
		if IsBuiltin(n) {
			return errorf(KindBadValue, "Cannot change the built-in role %s", n)
		}
		return errorf(KindRoleNotFound, "Could not find role: %s", n)
	}
	role := &Role{Name: n, Privileges: append([]Privilege(nil), cur.Privileges...), Roles: append([]RoleName(nil), cur.Roles...)}
	if err := fn(role); err != nil {
		return err
	}
	if err := r.validateRole(s, role); err != nil {
		return err
	}
	if err := r.opts.Store.PutRole(ctx, n.DB, n.Role, encodeRole(role), false); err != nil {
		return err
	}
	return r.loadLocked(ctx)
}

// DropRole removes a custom role and every grant of it, to users and to
// other roles (as MongoDB does), so no dangling name is left.
func (r *Registry) DropRole(ctx context.Context, n RoleName) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.snap.Load()
	if _, ok := s.roles[n]; !ok {
		if IsBuiltin(n) {
			return errorf(KindBadValue, "Cannot drop the built-in role %s", n)
		}
		return errorf(KindRoleNotFound, "Could not find role: %s", n)
	}
	for _, p := range s.users {
		if kept, changed := without(p.User.Roles, n); changed {
			u := *p.User
			u.Roles = kept
			if err := r.opts.Store.PutUser(ctx, u.Name.DB, u.Name.User, encodeUser(&u), false); err != nil {
				return err
			}
		}
	}
	for _, other := range s.roles {
		if kept, changed := without(other.Roles, n); changed && other.Name != n {
			o := *other
			o.Roles = kept
			if err := r.opts.Store.PutRole(ctx, o.Name.DB, o.Name.Role, encodeRole(&o), false); err != nil {
				return err
			}
		}
	}
	if _, err := r.opts.Store.DeleteRole(ctx, n.DB, n.Role); err != nil {
		return err
	}
	return r.loadLocked(ctx)
}

func without(roles []RoleName, n RoleName) ([]RoleName, bool) {
	var out []RoleName
	changed := false
	for _, r := range roles {
		if r == n {
			changed = true
			continue
		}
		out = append(out, r)
	}
	return out, changed
}

// Stored document shapes.

type userDoc struct {
	ID          string                `bson:"_id"`
	User        string                `bson:"user"`
	DB          string                `bson:"db"`
	Credentials map[string]Credential `bson:"credentials"`
	Roles       []RoleName            `bson:"roles"`
	CustomData  bson.Raw              `bson:"customData,omitempty"`
	DefaultTier string                `bson:"defaultTier"`
	Weight      float64               `bson:"weight,omitempty"`
	SLOMicros   int64                 `bson:"sloP999Micros,omitempty"`
	UserID      *bson.Binary          `bson:"userId,omitempty"`
}

type resourceDoc struct {
	Cluster     bool    `bson:"cluster,omitempty"`
	AnyResource bool    `bson:"anyResource,omitempty"`
	DB          *string `bson:"db,omitempty"`
	Collection  *string `bson:"collection,omitempty"`
}

type privilegeDoc struct {
	Resource resourceDoc `bson:"resource"`
	Actions  []string    `bson:"actions"`
}

type roleDoc struct {
	ID         string         `bson:"_id"`
	Role       string         `bson:"role"`
	DB         string         `bson:"db"`
	Privileges []privilegeDoc `bson:"privileges"`
	Roles      []RoleName     `bson:"roles"`
}

func encodeUser(u *User) []byte {
	d := userDoc{ID: u.Name.String(), User: u.Name.User, DB: u.Name.DB, Credentials: map[string]Credential{},
		Roles: u.Roles, CustomData: u.CustomData, DefaultTier: u.DefaultTier.String(), Weight: u.Weight, SLOMicros: u.SLO.Microseconds()}
	if d.Roles == nil {
		d.Roles = []RoleName{}
	}
	if len(u.ID) == 16 {
		d.UserID = &bson.Binary{Subtype: bson.TypeBinaryUUID, Data: u.ID}
	}
	for m, c := range u.Credentials {
		d.Credentials[m.String()] = c
	}
	b, err := bson.Marshal(d)
	if err != nil {
		panic(fmt.Sprintf("auth: encoding a user document: %v", err)) // only plain types: cannot fail
	}
	return b
}

func decodeUser(b []byte) (*User, error) {
	var d userDoc
	if err := bson.Unmarshal(b, &d); err != nil {
		return nil, err
	}
	u := &User{Name: UserName{d.User, d.DB}, Credentials: map[Mechanism]Credential{}, Roles: d.Roles, CustomData: d.CustomData, DefaultTier: qos.Normal, Weight: d.Weight, SLO: time.Duration(d.SLOMicros) * time.Microsecond}
	if t, ok := qos.ParseTier(d.DefaultTier); ok {
		u.DefaultTier = t
	}
	if d.UserID != nil {
		u.ID = d.UserID.Data
	}
	for name, c := range d.Credentials {
		if m, ok := ParseMechanism(name); ok {
			u.Credentials[m] = c
		}
	}
	return u, nil
}

func encodeRole(r *Role) []byte {
	d := roleDoc{ID: r.Name.DB + "." + r.Name.Role, Role: r.Name.Role, DB: r.Name.DB, Privileges: []privilegeDoc{}, Roles: r.Roles}
	if d.Roles == nil {
		d.Roles = []RoleName{}
	}
	for _, p := range r.Privileges {
		d.Privileges = append(d.Privileges, privilegeDoc{Resource: resourceToDoc(p.Resource), Actions: p.Actions.Names()})
	}
	b, err := bson.Marshal(d)
	if err != nil {
		panic(fmt.Sprintf("auth: encoding a role document: %v", err))
	}
	return b
}

func resourceToDoc(r Resource) resourceDoc {
	switch {
	case r.Cluster:
		return resourceDoc{Cluster: true}
	case r.AnyResource:
		return resourceDoc{AnyResource: true}
	}
	db, coll := r.DB, r.Collection
	return resourceDoc{DB: &db, Collection: &coll}
}

func decodeRole(b []byte) (*Role, error) {
	var d roleDoc
	if err := bson.Unmarshal(b, &d); err != nil {
		return nil, err
	}
	r := &Role{Name: RoleName{d.Role, d.DB}, Roles: d.Roles}
	for _, p := range d.Privileges {
		priv := Privilege{}
		switch {
		case p.Resource.Cluster:
			priv.Resource.Cluster = true
		case p.Resource.AnyResource:
			priv.Resource.AnyResource = true
		default:
			if p.Resource.DB != nil {
				priv.Resource.DB = *p.Resource.DB
			}
			if p.Resource.Collection != nil {
				priv.Resource.Collection = *p.Resource.Collection
			}
		}
		for _, a := range p.Actions {
			if act, ok := ParseAction(a); ok {
				priv.Actions |= Actions(act)
			}
		}
		r.Privileges = append(r.Privileges, priv)
	}
	return r, nil
}
