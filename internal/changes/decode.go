package changes

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/jackc/pglogrepl"
)

// Where tierdb keeps its catalog and collection tables (see storage).
const (
	CatalogSchema = "tierdb"
	CatalogTable  = "collections"
	DataSchema    = "tierdb_data"
)

// Namespace is a collection's database and name.
type Namespace struct{ DB, Coll string }

// Decoder turns pgoutput messages into Changes, each as its row is decoded:
// a slot's reads carry committed transactions only (the commit's position
// and time come with its Begin), so nothing of a large transaction is held
// until its commit.
type Decoder struct {
	// Resolve names the collection of a data table that the decoder has
	// not seen created; ok false for tables that hold no documents
	// (unique index entries).
	Resolve    func(tbl string) (ns Namespace, ok bool, err error)
	known      map[string]Namespace
	rels       map[uint32]*relation
	inTxn      bool
	pos        Position
	commitTime time.Time
	done       []Change
	// replacing are the _id keys of documents whose next update in the
	// transaction is a replacement (storage's logical messages).
	replacing map[string]bool
	// txn is the transaction's session message (TxnMessage), nil outside
	// a MongoDB transaction.
	txn []byte
}

// ReplaceMessagePrefix is the prefix of storage's logical messages that
// mark a replacement (see storage.Replacing).
const ReplaceMessagePrefix = "tierdb.replace"

// DropDatabaseMessagePrefix is the prefix of storage's logical message that
// ends a dropDatabase's transaction; its content is the database's name.
const DropDatabaseMessagePrefix = "tierdb.dropDatabase"

type relation struct {
	catalog bool
	tbl     string
	cols    map[string]int // column name → index in a tuple
}

// NewDecoder returns a decoder that resolves unknown tables with resolve.
func NewDecoder(resolve func(tbl string) (Namespace, bool, error)) *Decoder {
	return &Decoder{Resolve: resolve, known: map[string]Namespace{}, rels: map[uint32]*relation{}}
}

// Take returns the changes decoded since the last Take.
func (d *Decoder) Take() []Change {
	out := d.done
	d.done = nil
	return out
}

// Apply decodes one message.
func (d *Decoder) Apply(m pglogrepl.Message) error {
	switch m := m.(type) {
	case *pglogrepl.RelationMessage:
		r := &relation{tbl: m.RelationName, cols: map[string]int{}}
		switch {
		case m.Namespace == CatalogSchema && m.RelationName == CatalogTable:
			r.catalog = true
		case m.Namespace != DataSchema:
			r = nil
		}
		if r != nil {
			for i, c := range m.Columns {
				r.cols[c.Name] = i
			}
			if _, docs := r.cols["doc"]; !docs && !r.catalog {
				r = nil // unique index entries: no documents, no question to the catalog
			}
		}
		d.rels[m.RelationID] = r
	case *pglogrepl.BeginMessage:
		d.inTxn = true
		d.pos = Position{LSN: uint64(m.FinalLSN)}
		d.replacing, d.txn = nil, nil
		d.begin(m)
	case *pglogrepl.LogicalDecodingMessage:
		if m.Prefix == DropDatabaseMessagePrefix && d.inTxn {
			d.emit(Change{Kind: DropDatabase, DB: string(m.Content)})
		}
		if m.Prefix == TxnMessagePrefix && d.inTxn {
			d.txn = append([]byte(nil), m.Content...)
		}
		if m.Prefix == ReplaceMessagePrefix {
			if d.replacing == nil {
				d.replacing = map[string]bool{}
			}
			d.replacing[string(m.Content)] = true
		}
	case *pglogrepl.CommitMessage:
		d.inTxn = false
	case *pglogrepl.InsertMessage:
		return d.row(m.RelationID, 'I', 0, nil, m.Tuple)
	case *pglogrepl.UpdateMessage:
		return d.row(m.RelationID, 'U', m.OldTupleType, m.OldTuple, m.NewTuple)
	case *pglogrepl.DeleteMessage:
		return d.row(m.RelationID, 'D', m.OldTupleType, m.OldTuple, nil)
	}
	return nil
}

func (d *Decoder) begin(m *pglogrepl.BeginMessage) {
	d.pos.Index = 0
	d.commitTime = m.CommitTime
}

func (d *Decoder) emit(c Change) {
	c.Pos = d.pos
	c.Time = d.commitTime
	c.Txn = d.txn
	d.pos.Index++
	d.done = append(d.done, c)
}

func (d *Decoder) row(relID uint32, op byte, oldType uint8, old, new *pglogrepl.TupleData) error {
	r, ok := d.rels[relID]
	if !ok {
		return fmt.Errorf("changes: row of relation %d before its description", relID)
	}
	if r == nil {
		return nil // not a table of tierdb's
	}
	if r.catalog {
		return d.catalogRow(r, op, old, new)
	}
	if op == 'U' && unchangedDoc(r, oldType, old, new) {
		// Only key columns were written (an index build filling its
		// column): no document changed, as MongoDB would report it.
		return nil
	}
	ns, ok, err := d.namespace(r.tbl)
	if err != nil || !ok {
		return err
	}
	var newDoc, oldDoc []byte
	if new != nil {
		if newDoc, err = column(r, new, "doc"); err != nil {
			return err
		}
	}
	if oldType == 'O' {
		if oldDoc, err = column(r, old, "doc"); err != nil {
			return err
		}
	}
	c := Change{DB: ns.DB, Coll: ns.Coll, Old: oldDoc, New: newDoc}
	switch op {
	case 'I':
		c.Kind = Insert
	case 'U':
		c.Kind = Update
		if len(d.replacing) > 0 {
			key, err := column(r, new, "_id")
			if err != nil {
				return err
			}
			if d.replacing[string(key)] {
				c.Kind = Replace
				delete(d.replacing, string(key))
			}
		}
	default:
		c.Kind = Delete
		if oldDoc == nil {
			// Without the old row (REPLICA IDENTITY not FULL) the
			// document's _id is unknown: say so rather than guess.
			return fmt.Errorf("changes: delete in %s without its old row", r.tbl)
		}
	}
	d.emit(c)
	return nil
}

// catalogRow follows the catalog: a new row names a table, a deleted one is
// a drop, a row whose db or name changed is a rename.
func (d *Decoder) catalogRow(r *relation, op byte, old, new *pglogrepl.TupleData) error {
	get := func(t *pglogrepl.TupleData) (Namespace, string, error) {
		var vals [3]string
		for i, name := range []string{"db", "name", "tbl"} {
			b, err := column(r, t, name)
			if err != nil {
				return Namespace{}, "", err
			}
			vals[i] = string(b)
		}
		return Namespace{vals[0], vals[1]}, vals[2], nil
	}
	switch op {
	case 'I':
		ns, tbl, err := get(new)
		if err != nil {
			return err
		}
		d.known[tbl] = ns
	case 'D':
		if old == nil {
			return fmt.Errorf("changes: catalog delete without its old row")
		}
		ns, tbl, err := get(old)
		if err != nil {
			return err
		}
		delete(d.known, tbl)
		d.emit(Change{Kind: Drop, DB: ns.DB, Coll: ns.Coll})
	case 'U':
		to, tbl, err := get(new)
		if err != nil {
			return err
		}
		d.known[tbl] = to
		if old == nil {
			return nil
		}
		from, _, err := get(old)
		if err != nil {
			return err
		}
		if from != to {
			d.emit(Change{Kind: Rename, DB: from.DB, Coll: from.Coll, ToDB: to.DB, ToColl: to.Coll})
		}
	}
	return nil
}

func (d *Decoder) namespace(tbl string) (Namespace, bool, error) {
	if ns, ok := d.known[tbl]; ok {
		return ns, true, nil
	}
	if d.Resolve == nil {
		return Namespace{}, false, nil
	}
	ns, ok, err := d.Resolve(tbl)
	if ok {
		d.known[tbl] = ns
	}
	return ns, ok, err
}

// unchangedDoc reports whether an update left the document as it was: its
// doc column not sent (an unchanged TOAST value) or sent with the old
// bytes.
func unchangedDoc(r *relation, oldType uint8, old, new *pglogrepl.TupleData) bool {
	i, ok := r.cols["doc"]
	if !ok || new == nil || i >= len(new.Columns) {
		return false
	}
	if new.Columns[i].DataType == 'u' {
		return true
	}
	if oldType != 'O' {
		return false
	}
	o, err1 := column(r, old, "doc")
	n, err2 := column(r, new, "doc")
	return err1 == nil && err2 == nil && o != nil && bytes.Equal(o, n)
}

// column returns a column's value in a tuple: binary as sent, or decoded
// from text (bytea's \x hex form). nil for NULL.
func column(r *relation, t *pglogrepl.TupleData, name string) ([]byte, error) {
	i, ok := r.cols[name]
	if !ok || t == nil || i >= len(t.Columns) {
		return nil, fmt.Errorf("changes: column %s missing in %s", name, r.tbl)
	}
	c := t.Columns[i]
	switch c.DataType {
	case 'n':
		return nil, nil
	case 'b':
		return c.Data, nil
	case 't':
		if name != "doc" {
			return c.Data, nil
		}
		if len(c.Data) < 2 || c.Data[0] != '\\' || c.Data[1] != 'x' {
			return nil, fmt.Errorf("changes: bytea column %s not in hex form", name)
		}
		out := make([]byte, hex.DecodedLen(len(c.Data)-2))
		_, err := hex.Decode(out, c.Data[2:])
		return out, err
	}
	return nil, fmt.Errorf("changes: column %s of %s not sent (unchanged TOAST value)", name, r.tbl)
}
