package storage

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Unique secondary indexes cannot be a UNIQUE btree on the key column: that
// column is NULL for a document with an array on the path (multikey), and
// MongoDB enforces uniqueness per array element. So each unique index keeps
// an entries table with one row per (key, document), whose primary key on
// the key enforces uniqueness. The document row carries all its keys in an
// array column (u_N) and a trigger keeps the entries table in step, inside
// the writing statement: a clash aborts the write with a unique violation on
// "<table>_u<N>_pkey".

func (ix *Index) hasEntries() bool { return ix.Unique && ix.Column != "_id" }

func (ix *Index) entriesColumn() string { return "u" + ix.Column[len("k"):] }

func entriesTable(c *Collection, ix *Index) string { return c.tbl + "_" + ix.entriesColumn() }

func entriesFunc(c *Collection, ix *Index) string { return entriesTable(c, ix) + "_sync" }

// createEntriesTable adds the entries column and an entries table without
// its primary key: an index build fills both, then adds the key (checking
// uniqueness in one pass) and the trigger (createEntriesTrigger).
func createEntriesTable(ctx context.Context, tx pgx.Tx, c *Collection, ix *Index) error {
	_, err := tx.Exec(ctx, `
ALTER TABLE `+c.table+` ADD COLUMN `+quoteIdent(ix.entriesColumn())+` bytea[];
CREATE TABLE `+dataSchema+`.`+quoteIdent(entriesTable(c, ix))+` (k bytea NOT NULL, id bytea NOT NULL);`)
	return err
}

// createEntriesTrigger adds the function and trigger that keep the entries
// table in step with every later write.
func createEntriesTrigger(ctx context.Context, tx pgx.Tx, c *Collection, ix *Index) error {
	col := quoteIdent(ix.entriesColumn())
	table := dataSchema + "." + quoteIdent(entriesTable(c, ix))
	fn := dataSchema + "." + quoteIdent(entriesFunc(c, ix))
	_, err := tx.Exec(ctx, `
CREATE FUNCTION `+fn+`() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
	IF TG_OP <> 'INSERT' THEN
		IF TG_OP = 'UPDATE' AND OLD.`+col+` IS NOT DISTINCT FROM NEW.`+col+` THEN
			RETURN NEW;
		END IF;
		DELETE FROM `+table+` WHERE k = ANY(OLD.`+col+`) AND id = OLD._id;
	END IF;
	IF TG_OP <> 'DELETE' AND NEW.`+col+` IS NOT NULL THEN
		INSERT INTO `+table+` (k, id) SELECT u, NEW._id FROM unnest(NEW.`+col+`) AS u;
	END IF;
	RETURN NULL;
END
$f$;
CREATE TRIGGER `+quoteIdent(entriesTable(c, ix))+` AFTER INSERT OR DELETE OR UPDATE OF `+col+` ON `+c.table+`
	FOR EACH ROW EXECUTE FUNCTION `+fn+`();`)
	return err
}

// dropEntries removes what createEntries made (the trigger goes with the
// column or the table).
func dropEntries(ctx context.Context, tx pgx.Tx, c *Collection, ix *Index) error {
	_, err := tx.Exec(ctx, `
DROP TRIGGER IF EXISTS `+quoteIdent(entriesTable(c, ix))+` ON `+c.table+`;
DROP TABLE IF EXISTS `+dataSchema+`.`+quoteIdent(entriesTable(c, ix))+`;
DROP FUNCTION IF EXISTS `+dataSchema+`.`+quoteIdent(entriesFunc(c, ix))+`();
ALTER TABLE `+c.table+` DROP COLUMN IF EXISTS `+quoteIdent(ix.entriesColumn())+`;`)
	return err
}
