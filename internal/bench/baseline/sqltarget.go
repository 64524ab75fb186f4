package baseline

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The SQL a MongoDB client's three operations amount to on a table keyed by
// the document's _id, as the issue spells them out.
const (
	sqlCreate = `CREATE TABLE bench_direct (id bigint PRIMARY KEY, doc jsonb)`
	sqlFind   = `SELECT doc FROM bench_direct WHERE id = $1`
	sqlInsert = `INSERT INTO bench_direct VALUES ($1, $2)`
	sqlUpdate = `UPDATE bench_direct SET doc = jsonb_set(doc, '{field0}', to_jsonb($2::text)) WHERE id = $1`
)

// sqlTarget runs the workload as SQL straight on PostgreSQL with pgx, using
// pgx's defaults (prepared statements cached per connection), which is how
// a Go program would talk to PostgreSQL.
type sqlTarget struct {
	pool  *pgxpool.Pool
	names [fieldCount]string
}

func newSQLTarget(ctx context.Context, connString string, clients int) (*sqlTarget, error) {
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = int32(clients)
	cfg.ConnConfig.RuntimeParams["application_name"] = "tierdb-bench-direct"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("ping PostgreSQL: %w", err)
	}
	return &sqlTarget{pool: pool, names: fieldNames()}, nil
}

func (s *sqlTarget) name() string { return "direct" }

func (s *sqlTarget) doc(f *fields) ([]byte, error) {
	m := make(map[string]string, fieldCount)
	for i, v := range f {
		m[s.names[i]] = v
	}
	return json.Marshal(m)
}

func (s *sqlTarget) preload(ctx context.Context, n int, rng *rand.Rand) error {
	if _, err := s.pool.Exec(ctx, `DROP TABLE IF EXISTS bench_direct`); err != nil {
		return err
	}
	if _, err := s.pool.Exec(ctx, sqlCreate); err != nil {
		return err
	}
	rows := make([][]any, n)
	for id := range rows {
		f := randomFields(rng)
		doc, err := s.doc(&f)
		if err != nil {
			return err
		}
		rows[id] = []any{int64(id), doc}
	}
	copied, err := s.pool.CopyFrom(ctx, pgx.Identifier{"bench_direct"}, []string{"id", "doc"}, pgx.CopyFromRows(rows))
	if err != nil {
		return fmt.Errorf("copy into bench_direct: %w", err)
	}
	if copied != int64(n) {
		return fmt.Errorf("copied %d rows into bench_direct, want %d", copied, n)
	}
	return nil
}

func (s *sqlTarget) find(ctx context.Context, id int64) error {
	var doc []byte
	return s.pool.QueryRow(ctx, sqlFind, id).Scan(&doc)
}

func (s *sqlTarget) insert(ctx context.Context, id int64, f *fields) error {
	doc, err := s.doc(f)
	if err != nil {
		return err
	}
	// []byte goes to pgx as ready-made JSON.
	_, err = s.pool.Exec(ctx, sqlInsert, id, doc)
	return err
}

func (s *sqlTarget) update(ctx context.Context, id int64, field0 string) error {
	tag, err := s.pool.Exec(ctx, sqlUpdate, id, field0)
	if err != nil {
		return err
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("update id %d: %d rows affected", id, tag.RowsAffected())
	}
	return nil
}

func (s *sqlTarget) close(context.Context) { s.pool.Close() }
