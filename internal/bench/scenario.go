package bench

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"

	"gopkg.in/yaml.v3"
)

// Scenario is one experiment: the data set, the client groups, the server
// variants to compare and the acceptance targets. See the built-in
// scenarios (scenarios/*.yaml) for examples.
type Scenario struct {
	Name        string `yaml:"name" json:"name"`
	Description string `yaml:"description,omitempty" json:"description,omitempty"`

	// Records are loaded once, before the first run: _id 0…records-1 and
	// fieldCount string fields of fieldLength bytes each (YCSB's usertable).
	Records     int `yaml:"records" json:"records"`
	FieldCount  int `yaml:"fieldCount" json:"fieldCount"`
	FieldLength int `yaml:"fieldLength" json:"fieldLength"`
	// Distribution of the keys that reads, updates and scans pick:
	// zipfian (YCSB's default, constant 0.99) or uniform.
	Distribution string `yaml:"distribution" json:"distribution"`
	// ScanLength is the longest scan; each scan reads 1…scanLength records.
	ScanLength int `yaml:"scanLength,omitempty" json:"scanLength,omitempty"`

	// Warmup is cut from the start of the noise groups' "before" window.
	Warmup Duration `yaml:"warmup,omitempty" json:"warmup,omitempty"`
	// MeasureFrom leaves each group's first operations out of its
	// throughput: only operations answered this long after the group's
	// start count (seed 001 excludes a warm-up in which its balancer
	// settles). Latency figures still cover every operation.
	MeasureFrom Duration `yaml:"measureFrom,omitempty" json:"measureFrom,omitempty"`
	// MaxRunTime cuts a run that has not finished by then (default 10m).
	MaxRunTime Duration `yaml:"maxRunTime,omitempty" json:"maxRunTime,omitempty"`
	Repeat     int      `yaml:"repeat,omitempty" json:"repeat,omitempty"`
	// Baseline runs the time-sensitive groups alone on an idle QoS-off
	// server once per repetition. Default: on when there are time-sensitive
	// groups and other groups.
	Baseline *bool `yaml:"baseline,omitempty" json:"baseline,omitempty"`
	// Postgres are extra PostgreSQL settings (name: value).
	Postgres map[string]string `yaml:"postgres,omitempty" json:"postgres,omitempty"`

	// Replicas, when > 0, makes the shared PostgreSQL a primary with that
	// many hot standbys (pgmanage.StartSet); every tierdb the harness starts
	// gets --postgres-url (the primary) and --standby-urls (the standbys),
	// and the run polls replSetGetStatus for the reads each node served.
	Replicas int `yaml:"replicas,omitempty" json:"replicas,omitempty"`
	// PGCPUQuota is the scenario's default for --pg-cpu-quota (which
	// overrides it): with replicas each node gets its own cgroup with this
	// quota, emulating equal-capacity nodes on one machine.
	PGCPUQuota float64 `yaml:"pgCPUQuota,omitempty" json:"pgCPUQuota,omitempty"`
	// ServerCgroup is the scenario's default for --server-cgroup:
	// PostgreSQL and tierdb run in one cpu cgroup of their own, as under
	// systemd with CPU accounting or in a container.
	ServerCgroup bool `yaml:"serverCgroup,omitempty" json:"serverCgroup,omitempty"`
	// Layout is the scenario's default for --layout (which overrides it):
	// split (the default) or shared, for experiments that need every CPU
	// of the machine on the server side (e.g. more than one server CPU on a
	// two-CPU machine).
	Layout string `yaml:"layout,omitempty" json:"layout,omitempty"`
	// Period is the length of the per-period series of a replicated run
	// (read throughput, p80 read latency, share of reads on standbys,
	// balance fraction); default 10s as in seed 001.
	Period Duration `yaml:"period,omitempty" json:"period,omitempty"`

	Groups   []Group   `yaml:"groups" json:"groups"`
	Variants []Variant `yaml:"variants" json:"variants"`
	// Reference is the variant ratios are taken against; default the first
	// variant with QoS off.
	Reference string   `yaml:"reference,omitempty" json:"reference,omitempty"`
	Targets   []Target `yaml:"targets,omitempty" json:"targets,omitempty"`
}

// Roles of a group.
const (
	RoleTimeSensitive = "timeSensitive"
	RoleNoise         = "noise"
)

// Kinds of a group.
const (
	KindYCSB      = "ycsb"      // YCSB operations with the group's mix
	KindStaleness = "staleness" // seed 001's S workload: one writer, readers
)

// Modes of a group.
const (
	ModeClosed = "closed" // back to back
	ModeRate   = "rate"   // a fixed number of operations per second per client
)

// Group is a set of identical clients, each with its own connection.
type Group struct {
	Name string `yaml:"name" json:"name"`
	// Kind: ycsb (default) or staleness, seed 001's S workload: one writer
	// stamps a counter and the time into one document (back to back, or
	// writeRate per second) while the group's clients read it with the
	// group's read preference; the harness reports each read's
	// client-observed staleness and the violations of the bound.
	Kind    string      `yaml:"kind,omitempty" json:"kind,omitempty"`
	Clients ClientCount `yaml:"clients" json:"clients"`
	Tier    string      `yaml:"tier" json:"tier"`
	// Role: timeSensitive (default for tier high) or noise (default else).
	// The baseline runs the time-sensitive groups; the noise groups'
	// throughput is compared before, during and after them.
	Role string `yaml:"role,omitempty" json:"role,omitempty"`
	Mix  Mix    `yaml:"mix,omitempty" json:"mix,omitempty"`
	// ReadPreference routes the group's reads (needs replicas); default
	// the variant's, else the driver's (primary).
	ReadPreference *ReadPreference `yaml:"readPreference,omitempty" json:"readPreference,omitempty"`
	// WriteRate is the staleness writer's writes per second; 0: back to
	// back.
	WriteRate float64 `yaml:"writeRate,omitempty" json:"writeRate,omitempty"`
	// Distribution overrides the scenario's key distribution for this group.
	Distribution string `yaml:"distribution,omitempty" json:"distribution,omitempty"`
	Mode         string `yaml:"mode,omitempty" json:"mode,omitempty"`
	// Rate is operations per second per client in mode rate.
	Rate float64 `yaml:"rate,omitempty" json:"rate,omitempty"`
	// StartAfter delays the group's first operation from the run's start.
	StartAfter Duration `yaml:"startAfter,omitempty" json:"startAfter,omitempty"`
	// Exactly one of Duration, Ops and AfterOthers says when it stops:
	// after that long, after that many operations per client, or that long
	// after every group not ending this way has finished.
	Duration    Duration `yaml:"duration,omitempty" json:"duration,omitempty"`
	Ops         int      `yaml:"ops,omitempty" json:"ops,omitempty"`
	AfterOthers Duration `yaml:"afterOthers,omitempty" json:"afterOthers,omitempty"`
	// WriteConcern of the group's writes; default the driver's.
	WriteConcern *WriteConcern `yaml:"writeConcern,omitempty" json:"writeConcern,omitempty"`
	// Samples keeps (time, latency) of operations for the timeline plot;
	// default on for time-sensitive groups.
	Samples *bool `yaml:"samples,omitempty" json:"samples,omitempty"`

	// ConnectionsPerUser, when > 0, makes the group's clients database
	// users of their own (seed 004's users): clients 0…k−1 log in as the
	// group's first user, k…2k−1 as its second, and so on. The harness
	// creates the users at each run's start (readWrite on the bench
	// database and the group's tier role) and reports per-user throughput,
	// U_f and latency CV (fairness.go). Every variant then runs with
	// access control on.
	ConnectionsPerUser int `yaml:"connectionsPerUser,omitempty" json:"connectionsPerUser,omitempty"`
	// Weight is each of the group's users' weight φ (createUser weight;
	// default tierdb's, 1).
	Weight float64 `yaml:"weight,omitempty" json:"weight,omitempty"`
	// SLO is each of the group's users' latency objective (createUser slo).
	SLO *SLO `yaml:"slo,omitempty" json:"slo,omitempty"`
}

// SLO is a user's latency objective: p99.9 at most P999Ms milliseconds.
type SLO struct {
	P999Ms float64 `yaml:"p999Ms" json:"p999Ms"`
}

// users is how many database users the group's clients form (0: they all
// log in as the harness's administrator, or not at all).
func (g Group) users(clients int) int {
	if g.ConnectionsPerUser <= 0 {
		return 0
	}
	return (clients + g.ConnectionsPerUser - 1) / g.ConnectionsPerUser
}

// usesUsers reports whether any group has users of its own.
func (s *Scenario) usesUsers() bool {
	for _, g := range s.Groups {
		if g.ConnectionsPerUser > 0 {
			return true
		}
	}
	return false
}

// ReadPreference is a read's routing: mode primary, primaryPreferred,
// secondary, secondaryPreferred, nearest or tierdb's adaptive, and a
// staleness bound in milliseconds (not with primary). The driver sends it as
// $readPreference, the bound and adaptive as the tag set tierdb reads
// ({tierdb: route|adaptive, maxStalenessMS: N}).
type ReadPreference struct {
	Mode           string `yaml:"mode" json:"mode"`
	MaxStalenessMS int    `yaml:"maxStalenessMS,omitempty" json:"maxStalenessMS,omitempty"`
}

// Read preference modes.
var readModes = []string{"primary", "primaryPreferred", "secondary", "secondaryPreferred", "nearest", "adaptive"}

func (rp *ReadPreference) String() string {
	if rp == nil {
		return "primary (driver default)"
	}
	if rp.MaxStalenessMS > 0 {
		return fmt.Sprintf("%s ≤%d ms", rp.Mode, rp.MaxStalenessMS)
	}
	return rp.Mode
}

// Mix holds the proportions of YCSB operations; they need not sum to 1.
type Mix struct {
	Read   float64 `yaml:"read,omitempty" json:"read,omitempty"`
	Update float64 `yaml:"update,omitempty" json:"update,omitempty"`
	Insert float64 `yaml:"insert,omitempty" json:"insert,omitempty"`
	Scan   float64 `yaml:"scan,omitempty" json:"scan,omitempty"`
}

func (m Mix) total() float64 { return m.Read + m.Update + m.Insert + m.Scan }

// WriteConcern is passed to the driver: w is a number or "majority".
type WriteConcern struct {
	W       any   `yaml:"w,omitempty" json:"w,omitempty"`
	Journal *bool `yaml:"j,omitempty" json:"j,omitempty"`
}

// Variant is one server configuration.
type Variant struct {
	Name string `yaml:"name" json:"name"`
	QoS  string `yaml:"qos" json:"qos"` // on or off
	// Threshold is the priority channel's activation threshold (QoS on;
	// default 1).
	Threshold int `yaml:"threshold,omitempty" json:"threshold,omitempty"`
	// CPUPools is tierdb's --cpu-pools, e.g. "priority=0-1;standard=0-1;restricted=1".
	CPUPools string `yaml:"cpuPools,omitempty" json:"cpuPools,omitempty"`
	// Nice is tierdb's --nice, e.g. "high=-19,normal=10,low=19".
	Nice string `yaml:"nice,omitempty" json:"nice,omitempty"`
	// BackendsPerTier is tierdb's --backends-per-tier (default tierdb's).
	BackendsPerTier int `yaml:"backendsPerTier,omitempty" json:"backendsPerTier,omitempty"`
	// Args are further `tierdb serve` flags.
	Args []string `yaml:"args,omitempty" json:"args,omitempty"`
	// Env are extra NAME=value environment variables for the tierdb
	// process, e.g. GOMAXPROCS=4.
	Env []string `yaml:"env,omitempty" json:"env,omitempty"`
	// Auth turns access control on: tierdb starts with --auth and an
	// administrator (password from the environment, random per run), and
	// every client authenticates with SCRAM-SHA-256 as that user.
	Auth bool `yaml:"auth,omitempty" json:"auth,omitempty"`
	// ReadPreference is the read routing of the groups that set none.
	ReadPreference *ReadPreference `yaml:"readPreference,omitempty" json:"readPreference,omitempty"`
	// Clients overrides group client counts in this variant (group name:
	// count), e.g. to measure one routing at several loads.
	Clients map[string]int `yaml:"clients,omitempty" json:"clients,omitempty"`
	// WithoutSLOs creates the per-user groups' users without their
	// latency objectives (a fixed-weight configuration to compare with).
	WithoutSLOs bool `yaml:"withoutSLOs,omitempty" json:"withoutSLOs,omitempty"`
	// BusyLoop runs another program on each server CPU for the whole run:
	// a busy loop at nice 0 in a session of its own, as a batch job
	// sharing the machine would (busyloop.go).
	BusyLoop bool `yaml:"busyLoop,omitempty" json:"busyLoop,omitempty"`
}

// ServeArgs are the `tierdb serve` flags for the variant.
func (v Variant) ServeArgs() []string {
	args := []string{"--qos", v.QoS}
	if v.QoS == "on" {
		args = append(args, "--threshold", fmt.Sprint(max(v.Threshold, 1)))
		if v.CPUPools != "" {
			args = append(args, "--cpu-pools", v.CPUPools)
		}
		if v.Nice != "" {
			args = append(args, "--nice", v.Nice)
		}
	}
	if v.BackendsPerTier > 0 {
		args = append(args, "--backends-per-tier", fmt.Sprint(v.BackendsPerTier))
	}
	if v.Auth {
		args = append(args, "--auth", "--admin-user", benchUser)
	}
	return append(args, v.Args...)
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// ParseScenario reads and validates a scenario. Unknown keys are errors,
// so a typo does not silently fall back to a default.
func ParseScenario(r io.Reader) (*Scenario, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var s Scenario
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("scenario is empty")
		}
		return nil, fmt.Errorf("scenario: %w", err)
	}
	s.applyDefaults()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

func (s *Scenario) applyDefaults() {
	if s.FieldCount == 0 {
		s.FieldCount = 10
	}
	if s.FieldLength == 0 {
		s.FieldLength = 100
	}
	if s.Distribution == "" {
		s.Distribution = "zipfian"
	}
	if s.ScanLength == 0 {
		s.ScanLength = 100
	}
	if s.MaxRunTime == 0 {
		s.MaxRunTime = Duration(10 * 60e9)
	}
	if s.Repeat == 0 {
		s.Repeat = 1
	}
	if s.Period == 0 {
		s.Period = Duration(10e9)
	}
	for i := range s.Groups {
		g := &s.Groups[i]
		if g.Role == "" {
			g.Role = RoleNoise
			if g.Tier == "high" {
				g.Role = RoleTimeSensitive
			}
		}
		if g.Mode == "" {
			g.Mode = ModeClosed
		}
		if g.Kind == "" {
			g.Kind = KindYCSB
		}
		if g.Samples == nil {
			on := g.Role == RoleTimeSensitive
			g.Samples = &on
		}
	}
	for i := range s.Variants {
		if v := &s.Variants[i]; v.QoS == "on" && v.Threshold == 0 {
			v.Threshold = 1
		}
		if s.usesUsers() {
			s.Variants[i].Auth = true // per-user groups log in as their users
		}
	}
	if s.Baseline == nil {
		on := len(s.groupsWithRole(RoleTimeSensitive)) > 0 && len(s.groupsWithRole(RoleNoise)) > 0
		s.Baseline = &on
	}
	if s.Reference == "" {
		for _, v := range s.Variants {
			if v.QoS == "off" {
				s.Reference = v.Name
				break
			}
		}
	}
}

func (s *Scenario) groupsWithRole(role string) []Group {
	var out []Group
	for _, g := range s.Groups {
		if g.Role == role {
			out = append(out, g)
		}
	}
	return out
}

// BaselineOn reports whether the scenario measures the idle baseline.
func (s *Scenario) BaselineOn() bool { return s.Baseline != nil && *s.Baseline }

// Group returns the group called name.
func (s *Scenario) Group(name string) (Group, bool) {
	for _, g := range s.Groups {
		if g.Name == name {
			return g, true
		}
	}
	return Group{}, false
}

// Variant returns the variant called name.
func (s *Scenario) Variant(name string) (Variant, bool) {
	for _, v := range s.Variants {
		if v.Name == name {
			return v, true
		}
	}
	return Variant{}, false
}

// readPreference is the routing of group g's reads under variant v.
func (g Group) readPreference(v Variant) *ReadPreference {
	if g.ReadPreference != nil {
		return g.ReadPreference
	}
	return v.ReadPreference
}

// clientsIn is group g's client count under variant v, given the count
// resolved from the group.
func (g Group) clientsIn(v Variant, resolved int) int {
	if n, ok := v.Clients[g.Name]; ok {
		return n
	}
	return resolved
}
