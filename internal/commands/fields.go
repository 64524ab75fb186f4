package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// The fields each command implements. A field tierdb does not know is
// refused as MongoDB's own parser refuses it (40415, "BSON field 'find.x'
// is an unknown field"); a field MongoDB knows but tierdb does not
// implement is refused with NotImplemented unless it has its neutral value.
// Nothing is ignored in a way that changes an answer.

// fieldRule says what tierdb does with one field of a command.
type fieldRule int

const (
	// implemented: the handler reads and honours it.
	implemented fieldRule = iota
	// harmless: accepted and ignored because it cannot change a result
	// here (a plan hint, a sharding-only option, a storage hint); each
	// is listed with why.
	harmless
	// unimplemented: refused unless false, 0, null or absent.
	unimplemented
)

// commandFields lists, per command, every top-level field besides the
// command name itself and the generic ones (isGenericField). Commands not
// listed are not checked field by field.
var commandFields = map[string]map[string]fieldRule{
	"find": {
		"filter": implemented, "sort": implemented, "projection": implemented, "skip": implemented,
		"limit": implemented, "batchSize": implemented, "singleBatch": implemented,
		// A plan hint: checked against the indexes (hint.go), then advisory:
		// PostgreSQL plans the query.
		"hint": harmless,
		// Sharding and storage options with no effect on one node's result.
		"allowPartialResults": harmless, "readOnce": harmless, "oplogReplay": harmless,
		// find's in-memory sort never spills; past its memory limit it
		// fails, with ExceededMemoryLimit when the permission was given
		// (findDiskUse), else QueryExceededMemoryLimitNoDiskUseAllowed.
		"allowDiskUse": implemented,
		// An idle cursor still times out (--cursor-timeout) and then
		// answers CursorNotFound: an error, never a wrong result.
		"noCursorTimeout": harmless,
		"returnKey":       unimplemented, "showRecordId": unimplemented, "tailable": implemented,
		"awaitData": implemented, "min": unimplemented, "max": unimplemented, "let": implemented,
	},
	"count":    {"query": implemented, "limit": implemented, "skip": implemented, "hint": harmless, "fields": harmless},
	"distinct": {"key": implemented, "query": implemented, "hint": harmless},
	"aggregate": {
		"pipeline": implemented, "cursor": implemented, "explain": implemented,
		"hint": harmless, "bypassDocumentValidation": harmless,
		"let": implemented, "allowDiskUse": implemented,
	},
	"getMore":     {"batchSize": implemented, "collection": implemented, "maxTimeMS": implemented, "term": harmless, "lastKnownCommittedOpTime": harmless},
	"killCursors": {"cursors": implemented},
	"insert": {
		"documents": implemented, "ordered": implemented,
		// tierdb has no document validation to bypass.
		"bypassDocumentValidation": harmless,
	},
	"update": {"updates": implemented, "ordered": implemented, "bypassDocumentValidation": harmless, "let": implemented},
	"delete": {"deletes": implemented, "ordered": implemented, "let": implemented},
	"findAndModify": {
		"query": implemented, "sort": implemented, "fields": implemented, "remove": implemented,
		"update": implemented, "new": implemented, "upsert": implemented,
		"bypassDocumentValidation": harmless, "hint": harmless,
		"arrayFilters": implemented, "let": implemented,
	},
	"createIndexes": {"indexes": implemented, "commitQuorum": harmless},
	"dropIndexes":   {"index": implemented},
	"collMod": {
		"index":     implemented,
		"validator": unimplemented, "validationLevel": unimplemented, "validationAction": unimplemented,
		"viewOn": implemented, "pipeline": implemented, "cappedSize": unimplemented, "cappedMax": unimplemented,
		"changeStreamPreAndPostImages": unimplemented, "expireAfterSeconds": unimplemented,
		"timeseries": unimplemented, "clusteredIndex": unimplemented, "dryRun": unimplemented,
	},
	"listIndexes": {"cursor": harmless},
	"drop":        {},
	"dbStats":     {"scale": implemented, "freeStorage": harmless},
	"collStats":   {"scale": implemented},
	"validate": {"full": implemented, "repair": implemented, "background": harmless, "metadata": harmless,
		"checkBSONConformance": harmless, "enforceFastCount": harmless, "scandata": harmless},
	"renameCollection": {"to": implemented, "dropTarget": implemented, "stayTemp": harmless},
	"create": {
		"capped": implemented, "size": implemented, "max": implemented, "timeseries": unimplemented,
		"clusteredIndex": unimplemented, "viewOn": implemented, "pipeline": implemented,
		"validator": unimplemented, "validationLevel": unimplemented, "validationAction": unimplemented,
		"changeStreamPreAndPostImages": unimplemented, "expireAfterSeconds": unimplemented,
		"storageEngine": harmless, "indexOptionDefaults": harmless,
	},
}

// statementFields are the fields of one update or delete statement.
var statementFields = map[string]map[string]fieldRule{
	"update": {"q": implemented, "u": implemented, "multi": implemented, "upsert": implemented,
		"hint": harmless, "arrayFilters": implemented, "c": implemented, "sort": unimplemented},
	"delete": {"q": implemented, "limit": implemented, "hint": harmless},
}

// checkFields refuses fields of the command that tierdb does not know or
// does not implement.
func checkFields(req *Request) error {
	rules, ok := commandFields[req.cmd.name]
	if !ok {
		return nil
	}
	for _, e := range req.Cmd[1:] {
		if isGenericField(e.Key) || e.Key == "collation" || e.Key == "stmtId" || e.Key == "startTransaction" {
			continue
		}
		if err := checkField(req.cmd.name, "", rules, e); err != nil {
			return err
		}
	}
	return nil
}

// checkStatement is checkFields for one statement of an update or delete.
func checkStatement(command string, stmt bson.D) error {
	rules := statementFields[command]
	for _, e := range stmt {
		if e.Key == "collation" {
			continue
		}
		if err := checkField(command, "."+command+"s", rules, e); err != nil {
			return err
		}
	}
	return nil
}

func checkField(command, within string, rules map[string]fieldRule, e bson.E) error {
	rule, known := rules[e.Key]
	switch {
	case !known:
		return mongoerr.Newf(mongoerr.UnknownField, "BSON field '%s%s.%s' is an unknown field.", command, within, e.Key)
	case rule == unimplemented && !neutral(e.Value):
		return mongoerr.Newf(mongoerr.NotImplemented, "%s option '%s' is not supported by tierdb", command, e.Key)
	}
	return nil
}

// neutral is a value that asks for nothing: false, 0, null, an empty
// document or array.
func neutral(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case bson.D:
		return len(x) == 0
	case bson.A:
		return len(x) == 0
	}
	n, isNum := asNumber(v)
	return isNum && n == 0
}

// checkReadConcern refuses read concerns tierdb cannot honour outside a
// transaction (a transaction's are checked by checkTxnReadConcern).
// local and available are what every read is. majority is served like
// local: an acknowledged write is durable on the primary, and a failover
// promotes a standby only once it has replayed everything the primary
// wrote, so a read never sees a write that a failover later takes back;
// what it does not promise is MongoDB's majority snapshot of a lagging
// set. linearizable and snapshot need machinery tierdb does not have.
func checkReadConcern(cmd bson.D) error {
	rc, err := getDoc(cmd, "readConcern")
	if err != nil || rc == nil {
		return err
	}
	for _, e := range rc {
		switch e.Key {
		case "level":
			switch e.Value {
			case "local", "available", "majority":
			case "snapshot", "linearizable":
				return mongoerr.Newf(mongoerr.NotImplemented, "read concern %q is not supported by tierdb outside a transaction", e.Value)
			default:
				return mongoerr.Newf(mongoerr.BadValue, "unknown read concern level %v", e.Value)
			}
		case "afterClusterTime", "afterOpTime", "provenance":
			// tierdb reports no cluster time, so drivers send none; a
			// primary read sees every acknowledged write anyway.
		default:
			return mongoerr.Newf(mongoerr.UnknownField, "BSON field 'readConcern.%s' is an unknown field.", e.Key)
		}
	}
	return nil
}
