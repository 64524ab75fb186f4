package changes

import (
	"bytes"
	"crypto/sha256"
	"testing"

	"github.com/jackc/pglogrepl"
	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestTransactionEventsCarryLsidAndTxnNumber(t *testing.T) {
	lsid := bytes.Repeat([]byte{7}, 16)
	msg, err := TxnMessage(lsid, "admin.ann", 42)
	if err != nil {
		t.Fatal(err)
	}
	doc := raw(t, bson.D{{Key: "_id", Value: int32(1)}})
	chs := decodeAll(t,
		rel(1, DataSchema, "c1_shop_orders", "_id", "doc"),
		&pglogrepl.BeginMessage{FinalLSN: 0x100},
		&pglogrepl.LogicalDecodingMessage{Transactional: true, Prefix: TxnMessagePrefix, Content: msg},
		&pglogrepl.InsertMessage{RelationID: 1, Tuple: tuple([]byte("k1"), doc)},
		&pglogrepl.CommitMessage{},
		// The next transaction is a plain write: no session.
		&pglogrepl.BeginMessage{FinalLSN: 0x200},
		&pglogrepl.DeleteMessage{RelationID: 1, OldTupleType: 'O', OldTuple: tuple([]byte("k1"), doc)},
		&pglogrepl.CommitMessage{},
	)
	if len(chs) != 2 {
		t.Fatalf("changes: %+v", chs)
	}
	ev, err := chs[0].Event(Options{FullDocument: "default"})
	if err != nil {
		t.Fatal(err)
	}
	uid := sha256.Sum256([]byte("ann@admin"))
	wantLsid := bson.D{
		{Key: "id", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: lsid}},
		{Key: "uid", Value: bson.Binary{Data: uid[:]}},
	}
	if v, _ := lookupField(ev, "lsid"); !sameValue(v, wantLsid) {
		t.Errorf("lsid %v, want %v", v, wantLsid)
	}
	if v, _ := lookupField(ev, "txnNumber"); v != int64(42) {
		t.Errorf("txnNumber %v (%T)", v, v)
	}
	ev, err = chs[1].Event(Options{FullDocument: "default"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"lsid", "txnNumber"} {
		if _, ok := lookupField(ev, f); ok {
			t.Errorf("an event outside a transaction has %s", f)
		}
	}
}

func TestTxnMessageWithoutAuthentication(t *testing.T) {
	msg, err := TxnMessage(make([]byte, 16), "", 1)
	if err != nil {
		t.Fatal(err)
	}
	f := txnFields(msg)
	lsid, _ := f[0].Value.(bson.D)
	uid, _ := lsid[1].Value.(bson.Binary)
	none := sha256.Sum256(nil)
	if !bytes.Equal(uid.Data, none[:]) {
		t.Errorf("uid %x, want the digest of nothing", uid.Data)
	}
	if txnFields([]byte("junk")) != nil {
		t.Error("a message that does not decode gave fields")
	}
}
