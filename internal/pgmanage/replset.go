package pgmanage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Set is an embedded primary with hot standbys streaming from it. Node 0
// lives in DataDir itself (so a single-node data directory grows into a set
// unchanged); node i > 0 in DataDir/node<i>. Which node is the primary is
// recorded in DataDir/replset.json, so that a restart after a failover
// keeps the promoted node as primary.
type Set struct {
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	nodes   []*Cluster // nil while a node is down
	primary int
}

// NodeInfo describes one member of a Set.
type NodeInfo struct {
	ID      int
	Name    string // "node0", "node1", ...
	Primary bool
	// ConnString reaches the node's "tierdb" database; empty while down.
	ConnString string
}

type setState struct {
	Primary int `json:"primary"`
}

// StartSet starts the primary and replicas standbys, creating what is
// missing: the primary's cluster with initdb, each standby with a base
// backup through its own replication slot. With replicas 0 it is a single
// cluster, exactly as Start.
func StartSet(ctx context.Context, opts Options, replicas int) (*Set, error) {
	opts, err := opts.normalized()
	if err != nil {
		return nil, err
	}
	if replicas < 0 || replicas > 8 {
		return nil, errors.New("pgmanage: replicas must be between 0 and 8")
	}
	s := &Set{opts: opts, log: opts.Logger, nodes: make([]*Cluster, replicas+1)}
	st, err := s.readState()
	if err != nil {
		return nil, err
	}
	if st.Primary > replicas {
		return nil, fmt.Errorf("pgmanage: %s names node%d as primary, but only %d replicas are configured; start with --replicas %d",
			s.statePath(), st.Primary, replicas, st.Primary)
	}
	s.primary = st.Primary
	p, err := Start(ctx, s.nodeOptions(s.primary, nil))
	if err != nil {
		return nil, err
	}
	s.nodes[s.primary] = p
	for i := range s.nodes {
		if i == s.primary {
			continue
		}
		if err := s.rejoin(ctx, i, false); err != nil {
			// Degraded, not down: the set serves without this member and
			// majority writes wait for it (they count configured members).
			s.log.Error("standby cannot join the replica set; running without it", "node", i, "err", err)
		}
	}
	return s, nil
}

// rejoin starts node i as a standby of the current primary. rewind first
// makes a node that may have diverged (a former primary, or a standby that
// received WAL the new primary never had) follow the primary's timeline. A
// node that still cannot follow is rebuilt from a fresh base backup rather
// than left broken.
func (s *Set) rejoin(ctx context.Context, i int, rewindFirst bool) error {
	dir := newLayout(s.nodeOptions(i, nil).DataDir).pgDir
	primary := s.nodes[s.primary]
	if rewindFirst && primary != nil {
		if err := rewind(ctx, primary.BinDir(), dir, primary.acct, primary.AdminConnString()); err != nil {
			s.log.Warn("pg_rewind failed; rebuilding the member from a base backup", "node", i, "err", err)
			return s.rebuild(ctx, i)
		}
	}
	err := s.startStandby(ctx, i)
	if err == nil {
		return nil
	}
	s.log.Warn("standby cannot follow the primary; rebuilding it from a base backup", "node", i, "err", err)
	return s.rebuild(ctx, i)
}

// rebuild replaces node i's data with a fresh base backup of the primary.
func (s *Set) rebuild(ctx context.Context, i int) error {
	dir := newLayout(s.nodeOptions(i, nil).DataDir).pgDir
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("pgmanage: removing node%d's data for a rebuild: %w", i, err)
	}
	if err := s.startStandby(ctx, i); err != nil {
		return fmt.Errorf("pgmanage: rebuilding node%d from a base backup: %w", i, err)
	}
	s.log.Info("standby rebuilt from a base backup", "node", i)
	return nil
}

func (s *Set) statePath() string { return filepath.Join(s.opts.DataDir, "replset.json") }

func (s *Set) readState() (setState, error) {
	var st setState
	b, err := os.ReadFile(s.statePath())
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err == nil {
		err = json.Unmarshal(b, &st)
	}
	if err != nil {
		return st, fmt.Errorf("pgmanage: %s: %w", s.statePath(), err)
	}
	return st, nil
}

func (s *Set) writeState() error {
	b, _ := json.Marshal(setState{Primary: s.primary})
	tmp := s.statePath() + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("pgmanage: %w", err)
	}
	return os.Rename(tmp, s.statePath())
}

// nodeOptions are the Options of node i: its own directory and cluster name,
// and a standby's primary.
func (s *Set) nodeOptions(i int, standby *StandbyOptions) Options {
	o := s.opts
	o.Standby = standby
	if i > 0 {
		o.DataDir = filepath.Join(s.opts.DataDir, "node"+strconv.Itoa(i))
		o.ClusterName = s.opts.ClusterName + "-node" + strconv.Itoa(i)
	}
	return o
}

func slotName(i int) string { return "tierdb_node" + strconv.Itoa(i) }

// startStandby starts node i streaming from the current primary, through a
// slot it creates on the primary if missing.
func (s *Set) startStandby(ctx context.Context, i int) error {
	p := s.nodes[s.primary]
	if err := ensureSlot(ctx, p.AdminConnString(), slotName(i)); err != nil {
		return err
	}
	c, err := Start(ctx, s.nodeOptions(i, &StandbyOptions{PrimaryConnString: p.AdminConnString(), SlotName: slotName(i)}))
	if err != nil {
		return fmt.Errorf("pgmanage: standby node%d: %w", i, err)
	}
	s.nodes[i] = c
	return nil
}

func ensureSlot(ctx context.Context, connString, name string) error {
	conn, err := pgx.Connect(ctx, connString)
	if err != nil {
		return fmt.Errorf("pgmanage: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, `SELECT pg_create_physical_replication_slot($1, true)
		WHERE NOT EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = $1)`, name)
	if err != nil {
		return fmt.Errorf("pgmanage: replication slot %s: %w", name, err)
	}
	return nil
}

// Nodes describes every member, primary first.
func (s *Set) Nodes() []NodeInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]NodeInfo, 0, len(s.nodes))
	for _, i := range s.order() {
		n := NodeInfo{ID: i, Name: "node" + strconv.Itoa(i), Primary: i == s.primary}
		if c := s.nodes[i]; c != nil {
			n.ConnString = c.ConnString()
		}
		out = append(out, n)
	}
	return out
}

// order is the node IDs, primary first.
func (s *Set) order() []int {
	ids := []int{s.primary}
	for i := range s.nodes {
		if i != s.primary {
			ids = append(ids, i)
		}
	}
	return ids
}

// Primary is the current primary.
func (s *Set) Primary() *Cluster {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nodes[s.primary]
}

// BackgroundProcesses lists the helper processes of every running node.
func (s *Set) BackgroundProcesses() ([]BackgroundProcess, error) {
	s.mu.Lock()
	nodes := append([]*Cluster(nil), s.nodes...)
	s.mu.Unlock()
	var all []BackgroundProcess
	var errs []error
	for _, c := range nodes {
		if c == nil {
			continue
		}
		procs, err := c.BackgroundProcesses()
		all = append(all, procs...)
		errs = append(errs, err)
	}
	return all, errors.Join(errs...)
}

// Failover makes standby id the primary. The caller must have stopped
// writes: Failover waits up to catchUp for the standby to replay everything
// the old primary wrote, so no acknowledged write is lost, then stops the
// old primary, promotes the standby, points the other standbys at it, and
// rewinds the old primary into a standby of the new one (if that fails the
// old primary stays down and the error says why; the set works without it).
func (s *Set) Failover(ctx context.Context, id int, catchUp time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id < 0 || id >= len(s.nodes) || id == s.primary || s.nodes[id] == nil {
		return fmt.Errorf("pgmanage: node%d is not a running standby", id)
	}
	old, target := s.nodes[s.primary], s.nodes[id]
	if err := waitCaughtUp(ctx, old.AdminConnString(), target.AdminConnString(), catchUp); err != nil {
		return err
	}
	if err := old.Stop(ctx); err != nil {
		s.log.Warn("stopping the old primary", "err", err)
	}
	oldID := s.primary
	s.nodes[oldID] = nil
	if err := target.Promote(ctx); err != nil {
		return err
	}
	s.primary = id
	if err := s.writeState(); err != nil {
		return err
	}
	// pg_rewind reads the new timeline from the primary's control file,
	// which only a checkpoint after the promotion updates; rewinding
	// against a just-promoted server without one leaves a member that
	// cannot follow ("timeline does not contain minimum recovery point").
	if err := checkpoint(ctx, target.AdminConnString()); err != nil {
		s.log.Warn("checkpoint on the new primary failed", "err", err)
	}
	var errs []error
	for i := range s.nodes {
		if i == s.primary {
			continue
		}
		if c := s.nodes[i]; c != nil {
			if err := c.Stop(ctx); err != nil {
				s.log.Warn("stopping a standby to follow the new primary", "node", i, "err", err)
			}
			s.nodes[i] = nil
		}
		// Every other member, the old primary included, may hold WAL the
		// new primary never had (the old primary's last records reach
		// connected standbys as it shuts down): rewind them all.
		if err := s.rejoin(ctx, i, true); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func checkpoint(ctx context.Context, connString string) error {
	c, err := pgx.Connect(ctx, connString)
	if err != nil {
		return err
	}
	defer c.Close(context.WithoutCancel(ctx))
	_, err = c.Exec(ctx, "CHECKPOINT")
	return err
}

// waitCaughtUp waits until the standby has replayed all WAL the primary has
// written so far.
func waitCaughtUp(ctx context.Context, primary, standby string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	pc, err := pgx.Connect(ctx, primary)
	if err != nil {
		return fmt.Errorf("pgmanage: failover: %w", err)
	}
	defer pc.Close(context.WithoutCancel(ctx))
	// The target is an empty logical-decoding message committed now: its
	// commit flushes all WAL before it, so the standby receives every
	// earlier record whole. pg_current_wal_lsn() could end inside a record
	// the WAL writer has written only up to a page boundary, which the
	// standby cannot replay until the rest is flushed (up to two
	// wal_writer_delay rounds).
	var target string
	if _, err := pc.Exec(ctx, "SET synchronous_commit = on"); err != nil {
		return fmt.Errorf("pgmanage: failover: %w", err)
	}
	if err := pc.QueryRow(ctx, "SELECT pg_logical_emit_message(true, 'tierdb', 'failover')::text").Scan(&target); err != nil {
		return fmt.Errorf("pgmanage: failover: %w", err)
	}
	sc, err := pgx.Connect(ctx, standby)
	if err != nil {
		return fmt.Errorf("pgmanage: failover: %w", err)
	}
	defer sc.Close(context.WithoutCancel(ctx))
	for {
		var done bool
		err := sc.QueryRow(ctx, "SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn", target).Scan(&done)
		if err != nil {
			return fmt.Errorf("pgmanage: failover: the standby did not catch up with the primary: %w", err)
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pgmanage: failover: the standby did not catch up with the primary within %s", limit)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Stop stops the standbys, then the primary.
func (s *Set) Stop(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	ids := s.order()
	slices.Reverse(ids)
	for _, i := range ids {
		if c := s.nodes[i]; c != nil {
			errs = append(errs, c.Stop(ctx))
		}
	}
	return errors.Join(errs...)
}
