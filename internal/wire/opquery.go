package wire

import (
	"bytes"
	"encoding/binary"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// OpQuery is a parsed legacy OP_QUERY. Drivers use it only for the first
// hello/isMaster on "admin.$cmd"; the command layer decides what else, if
// anything, to accept. Documents alias the message buffer and are validated.
type OpQuery struct {
	Flags                uint32
	FullCollectionName   string
	NumberToSkip         int32
	NumberToReturn       int32
	Query                bson.Raw
	ReturnFieldsSelector bson.Raw // nil when absent
}

func parseOpQuery(h *Header, data []byte) (*OpQuery, error) {
	if len(data) < 4 {
		return nil, badf(h, mongoerr.ProtocolError, "OP_QUERY of %d bytes has no room for flags", headerLen+len(data))
	}
	q := &OpQuery{Flags: binary.LittleEndian.Uint32(data)}
	off := 4
	i := bytes.IndexByte(data[off:], 0)
	if i < 0 {
		return nil, badf(h, mongoerr.ProtocolError, "OP_QUERY collection name not terminated")
	}
	q.FullCollectionName = string(data[off : off+i])
	off += i + 1
	if len(data)-off < 8 {
		return nil, badf(h, mongoerr.ProtocolError, "OP_QUERY truncated before numberToSkip/numberToReturn")
	}
	q.NumberToSkip = int32(binary.LittleEndian.Uint32(data[off:]))
	q.NumberToReturn = int32(binary.LittleEndian.Uint32(data[off+4:]))
	off += 8
	doc, err := checkDocument(data[off:])
	if err != nil {
		return nil, docError(h, "OP_QUERY query", err)
	}
	q.Query = doc
	off += len(doc)
	if off < len(data) {
		doc, err := checkDocument(data[off:])
		if err != nil {
			return nil, docError(h, "OP_QUERY returnFieldsSelector", err)
		}
		q.ReturnFieldsSelector = doc
		off += len(doc)
	}
	if off != len(data) {
		return nil, badf(h, mongoerr.ProtocolError, "OP_QUERY has %d trailing bytes", len(data)-off)
	}
	return q, nil
}
