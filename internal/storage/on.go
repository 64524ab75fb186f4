package storage

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"tierdb/internal/qos"
)

// On says where the document reads and writes of a call run: on which
// tier's backends, on which node (reads), in which transaction, and
// whether their commit waits for the WAL flush. Every Store method that
// reads or writes documents or the catalog takes one right after its
// context; the command layer builds it once per request from the request's
// state (the tier admission decided, the node the router chose, the
// session's transaction, the write concern's j:false).
//
// The zero On runs at the Normal tier, on the primary, outside any
// transaction, committing synchronously.
type On struct {
	// Node is the node reads are routed to; nil means the primary. Writes,
	// catalog work and everything inside a transaction run on the primary
	// whatever Node says.
	Node *Node
	// Txn, when set, is the transaction the document reads and writes run
	// in (catalog lookups and implicit collection creation stay outside
	// it, see catalogPool); its tier is the one it began at.
	Txn *Txn
	// Async makes a write outside a transaction commit without waiting for
	// its WAL to reach disk (PostgreSQL's synchronous_commit off, for that
	// transaction only). A crash of PostgreSQL or of the machine may then
	// lose it, up to three wal_writer_delay rounds' worth: what MongoDB's
	// j:false allows. A transaction's commit mode is Txn.Commit's.
	Async bool
	// tier is the tier plus one, so that the zero On means Normal (High
	// is qos.Tier's zero value). Set it with At.
	tier qos.Tier
}

// At returns the On of work at tier t: on the primary, outside any
// transaction, committing synchronously.
func At(t qos.Tier) On { return On{tier: t + 1} }

// Tier is the tier whose backends run the work.
func (o On) Tier() qos.Tier {
	if o.tier == 0 {
		return qos.Normal
	}
	return o.tier - 1
}

// InTransaction reports whether o runs in a multi-document transaction
// (not a retryable write's own transaction).
func (o On) InTransaction() bool { return o.Txn != nil && o.Txn.snapshot }

// pool returns the primary's pool of o's tier.
func (s *Store) pool(ctx context.Context, o On) *pgxpool.Pool {
	return s.current(ctx).nodes[0].pools[o.Tier()]
}

// readPool returns the pool of o's tier on the node o routes reads to, or
// the primary's. A node that left the topology meanwhile is replaced by
// the primary.
func (s *Store) readPool(ctx context.Context, o On) *pgxpool.Pool {
	t := s.current(ctx)
	if o.Node != nil {
		for _, n := range t.nodes {
			if n == o.Node {
				return n.pools[o.Tier()]
			}
		}
	}
	return t.nodes[0].pools[o.Tier()]
}

// q is where the document operations of o run: the transaction's backend,
// else the tier's pool on the primary.
func (s *Store) q(ctx context.Context, o On) querier {
	if o.Txn != nil {
		return o.Txn
	}
	return s.pool(ctx, o)
}

// readQ is q for reads: inside a transaction its backend (transactions
// read only on the primary), else the pool of the node the read was
// routed to.
func (s *Store) readQ(ctx context.Context, o On) querier {
	if o.Txn != nil {
		return o.Txn
	}
	return s.readPool(ctx, o)
}

// catalogPool is where catalog lookups and DDL run. Inside a transaction
// they take the primary's small monitor pool: the transaction may hold
// the last backend of its tier's pool (the low tier has one), and the
// catalog must see collections created after the transaction's snapshot.
// A collection a transaction creates implicitly therefore stays when the
// transaction aborts (empty).
func (s *Store) catalogPool(ctx context.Context, o On) *pgxpool.Pool {
	if o.Txn != nil {
		return s.current(ctx).nodes[0].probe
	}
	return s.pool(ctx, o)
}
