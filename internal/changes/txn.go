package changes

import (
	"crypto/sha256"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/bsonx"
)

// TxnMessagePrefix is the prefix of storage's logical message that opens a
// MongoDB multi-document transaction's PostgreSQL transaction (while
// change streams are on): its content (TxnMessage) is the session and
// transaction number the transaction's change events carry, as MongoDB's
// events of a transaction carry lsid and txnNumber. Retryable writes
// outside a transaction leave none: MongoDB's events of those have
// neither field.
const TxnMessagePrefix = "tierdb.txn"

// TxnMessage is the content of a transaction's message: the BSON document
// {lsid: {id, uid}, txnNumber} its events carry. lsid is the 16 bytes of
// the session's UUID, user its owner as "db.name" ("" without
// authentication); uid is, as MongoDB's, the SHA-256 digest of the user's
// "name@db" (of nothing without authentication).
func TxnMessage(lsid []byte, user string, txnNumber int64) ([]byte, error) {
	full := ""
	if db, name, ok := strings.Cut(user, "."); ok {
		full = name + "@" + db
	}
	uid := sha256.Sum256([]byte(full))
	return bsonx.Marshal(bson.D{
		{Key: "lsid", Value: bson.D{
			{Key: "id", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: lsid}},
			{Key: "uid", Value: bson.Binary{Subtype: bson.TypeBinaryGeneric, Data: uid[:]}},
		}},
		{Key: "txnNumber", Value: txnNumber},
	})
}

// txnFields are the fields of a transaction's message, appended to its
// document events; none when the content does not decode.
func txnFields(content []byte) bson.D {
	d, err := bsonx.Decode(content)
	if err != nil || len(d) != 2 || d[0].Key != "lsid" || d[1].Key != "txnNumber" {
		return nil
	}
	if _, ok := d[1].Value.(int64); !ok {
		return nil
	}
	return d
}
