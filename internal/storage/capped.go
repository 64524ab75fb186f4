package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
)

// Capped collections.
//
// A capped collection's table has one more column, seq, an identity that
// numbers the rows in insertion order (its natural order, which finds and
// tailable cursors follow). A row in catalogSchema.capped_state per capped
// table holds its total document bytes and count. Statement-level triggers
// keep it, all in the writing transaction:
//
//   - before any insert, update or delete, the state row is locked, so writes
//     to one capped collection are serialised (as in MongoDB) and seq values
//     are taken, and committed, in order: a reader that has seen seq n will
//     never later see a new row below n, which tailable cursors rely on;
//   - after an insert the new bytes and count are added and, while the
//     collection is over its size or document maximum, the oldest rows are
//     deleted (in the same transaction as the insert);
//   - after an update or a delete the totals are adjusted.
//
// The trigger functions are generic (the table comes from TG_TABLE_NAME, the
// limits from the trigger's arguments), so dropping a collection only has to
// remove its state row.

// Capped are a capped collection's limits.
type Capped struct {
	Size int64 `json:"size"`          // bytes of BSON, at least 4096, a multiple of 256
	Max  int64 `json:"max,omitempty"` // documents; 0 means no limit
}

// CappedSize is the size MongoDB gives a capped collection asked for n
// bytes: at least 4096, else n rounded up to a multiple of 256.
func CappedSize(n int64) int64 {
	if n <= 4096 {
		return 4096
	}
	return (n + 255) / 256 * 256
}

// cappedSQL is appended to the catalog bootstrap.
const cappedSQL = `;
ALTER TABLE ` + catalogSchema + `.collections ADD COLUMN IF NOT EXISTS capped jsonb;
CREATE TABLE IF NOT EXISTS ` + catalogSchema + `.capped_state (
	tbl   text PRIMARY KEY,
	bytes bigint NOT NULL DEFAULT 0,
	docs  bigint NOT NULL DEFAULT 0
);
CREATE OR REPLACE FUNCTION ` + catalogSchema + `.capped_lock() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
	PERFORM 1 FROM ` + catalogSchema + `.capped_state WHERE tbl = TG_TABLE_NAME FOR UPDATE;
	RETURN NULL;
END $f$;
CREATE OR REPLACE FUNCTION ` + catalogSchema + `.capped_inserted() RETURNS trigger LANGUAGE plpgsql AS $f$
DECLARE
	lim_bytes bigint := TG_ARGV[0]::bigint;
	lim_docs  bigint := TG_ARGV[1]::bigint;
	b bigint; n bigint; last bigint; r record;
BEGIN
	UPDATE ` + catalogSchema + `.capped_state
	SET bytes = bytes + (SELECT coalesce(sum(octet_length(doc)), 0) FROM new_rows),
	    docs = docs + (SELECT count(*) FROM new_rows)
	WHERE tbl = TG_TABLE_NAME RETURNING bytes, docs INTO b, n;
	FOR r IN EXECUTE format('SELECT seq, octet_length(doc) AS len FROM %I.%I ORDER BY seq', TG_TABLE_SCHEMA, TG_TABLE_NAME) LOOP
		EXIT WHEN b <= lim_bytes AND (lim_docs <= 0 OR n <= lim_docs);
		b := b - r.len; n := n - 1; last := r.seq;
	END LOOP;
	IF last IS NOT NULL THEN
		EXECUTE format('DELETE FROM %I.%I WHERE seq <= $1', TG_TABLE_SCHEMA, TG_TABLE_NAME) USING last;
	END IF;
	RETURN NULL;
END $f$;
CREATE OR REPLACE FUNCTION ` + catalogSchema + `.capped_deleted() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
	UPDATE ` + catalogSchema + `.capped_state
	SET bytes = bytes - (SELECT coalesce(sum(octet_length(doc)), 0) FROM old_rows),
	    docs = docs - (SELECT count(*) FROM old_rows)
	WHERE tbl = TG_TABLE_NAME;
	RETURN NULL;
END $f$;
CREATE OR REPLACE FUNCTION ` + catalogSchema + `.capped_updated() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
	UPDATE ` + catalogSchema + `.capped_state
	SET bytes = bytes + (SELECT coalesce(sum(octet_length(doc)), 0) FROM new_rows)
	                  - (SELECT coalesce(sum(octet_length(doc)), 0) FROM old_rows)
	WHERE tbl = TG_TABLE_NAME;
	RETURN NULL;
END $f$`

// createCappedTable adds what makes tbl capped: its seq column, state row
// and triggers. tbl was just created, empty.
func createCappedTable(ctx context.Context, tx pgx.Tx, tbl string, c *Capped) error {
	t := dataSchema + "." + quoteIdent(tbl)
	args := fmt.Sprintf("(%d, %d)", c.Size, c.Max)
	_, err := tx.Exec(ctx, `
ALTER TABLE `+t+` ADD COLUMN seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE;
INSERT INTO `+catalogSchema+`.capped_state (tbl) VALUES (`+quoteLiteral(tbl)+`);
CREATE TRIGGER capped_lock BEFORE INSERT OR UPDATE OR DELETE ON `+t+` FOR EACH STATEMENT EXECUTE FUNCTION `+catalogSchema+`.capped_lock();
CREATE TRIGGER capped_inserted AFTER INSERT ON `+t+` REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION `+catalogSchema+`.capped_inserted`+args+`;
CREATE TRIGGER capped_deleted AFTER DELETE ON `+t+` REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION `+catalogSchema+`.capped_deleted();
CREATE TRIGGER capped_updated AFTER UPDATE ON `+t+` REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION `+catalogSchema+`.capped_updated()`)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE `+catalogSchema+`.collections SET capped = $2 WHERE tbl = $1`, tbl, raw)
	return err
}

func quoteLiteral(s string) string {
	out := []byte{'\''}
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' {
			out = append(out, '\'')
		}
		out = append(out, s[i])
	}
	return string(append(out, '\''))
}

// parseCapped reads the catalog's capped column (NULL: not capped).
func parseCapped(raw []byte) (*Capped, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var c Capped
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, &Error{Code: ErrInternal, Msg: "corrupt catalog entry", Cause: err}
	}
	return &c, nil
}

// CreateCappedCollection creates an empty capped collection;
// ErrNamespaceExists if the name is taken.
func (s *Store) CreateCappedCollection(ctx context.Context, on On, db, name string, c Capped) error {
	return s.createCollection(ctx, on, db, name, &c)
}

// insertFitting is insertBatch, refusing with ErrTooLarge a batch in which
// a document is larger than its capped collection: MongoDB refuses such a
// document rather than evicting everything, itself included.
func (s *Store) insertFitting(ctx context.Context, on On, c *Collection, docs []Doc) error {
	if c.Capped != nil {
		for _, d := range docs {
			if int64(len(d.Raw)) > c.Capped.Size {
				return newErr(ErrTooLarge, "object to insert exceeds cappedMaxSize")
			}
		}
	}
	return s.insertBatch(ctx, on, c, docs)
}

// TailParams position a tailable read of a capped collection.
type TailParams struct {
	// After is the seq of the last row the cursor saw; 0 starts at the
	// oldest row.
	After int64
	Limit int
}

// Tail returns up to p.Limit rows of a capped collection after position
// p.After, in insertion order, each with its Seq. lost is true when the row
// at p.After is no longer there (it was evicted or deleted): the cursor's
// position is gone, as MongoDB's CappedPositionLost says.
func (s *Store) Tail(ctx context.Context, on On, c *Collection, p TailParams) (rows []Row, lost bool, err error) {
	if c.Capped == nil {
		return nil, false, newErr(ErrIllegal, "not a capped collection")
	}
	limit := max(p.Limit, 1) + 1
	rs, err := s.readQ(ctx, on).Query(ctx, `SELECT _id, doc, seq FROM `+c.table+` WHERE seq >= $1 ORDER BY seq LIMIT `+fmt.Sprint(limit), p.After)
	if err != nil {
		return nil, false, s.readError(ctx, on, c, err)
	}
	rows, err = pgx.CollectRows(rs, func(r pgx.CollectableRow) (Row, error) {
		var row Row
		err := r.Scan(&row.Key, &row.Doc, &row.Seq)
		return row, err
	})
	if err != nil {
		return nil, false, s.readError(ctx, on, c, err)
	}
	if p.After > 0 {
		if len(rows) == 0 || rows[0].Seq != p.After {
			return nil, true, nil
		}
		rows = rows[1:]
	}
	if len(rows) > limit-1 {
		rows = rows[:limit-1]
	}
	return rows, false, nil
}

// appendSignals wakes tailable cursors waiting for new rows of a capped
// collection written through this Store. Writes through another tierdb,
// or committed later by a transaction, are found by the waiters' polling.
type appendSignals struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

// Appended returns a channel closed at the next insert into c through this
// Store.
func (s *Store) Appended(c *Collection) <-chan struct{} {
	a := &s.appends
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = map[string]chan struct{}{}
	}
	ch := a.m[c.tbl]
	if ch == nil {
		ch = make(chan struct{})
		a.m[c.tbl] = ch
	}
	return ch
}

func (s *Store) noteAppend(c *Collection) {
	if c.Capped == nil {
		return
	}
	a := &s.appends
	a.mu.Lock()
	defer a.mu.Unlock()
	if ch := a.m[c.tbl]; ch != nil {
		close(ch)
		delete(a.m, c.tbl)
	}
}

// cappedInTransaction refuses writes to a capped collection inside a transaction,
// as MongoDB does (its writes are serialised by the collection's state
// row, which a transaction would hold until it ends).
func cappedInTransaction(on On, c *Collection) error {
	if c.Capped != nil && on.InTransaction() {
		return newErr(ErrNotInTxn, "Collection '%s' is a capped collection. Writes in transactions are not allowed on capped collections.", c.Namespace())
	}
	return nil
}
