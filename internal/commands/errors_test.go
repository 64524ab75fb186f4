package commands

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"tierdb/internal/mongoerr"
	"tierdb/internal/storage"
)

func TestMapGivesEveryErrorAMongoCodeAndHidesInternals(t *testing.T) {
	secret := errors.New(`ERROR: relation "tierdb_data.c1_x" does not exist (SQLSTATE 42P01) SELECT _id, doc FROM`)
	cases := []struct {
		err      error
		code     mongoerr.Code
		internal bool
	}{
		{mongoerr.New(mongoerr.BadValue, "bad"), mongoerr.BadValue, false},
		{fmt.Errorf("wrapped: %w", mongoerr.New(mongoerr.TypeMismatch, "x")), mongoerr.TypeMismatch, false},
		{&storage.Error{Code: storage.ErrNamespaceNotFound, Msg: "ns not found", Cause: secret}, mongoerr.NamespaceNotFound, false},
		{&storage.Error{Code: storage.ErrNamespaceExists, Msg: "exists"}, mongoerr.NamespaceExists, false},
		{&storage.Error{Code: storage.ErrDuplicateKey, Msg: "E11000 duplicate key"}, mongoerr.DuplicateKey, false},
		{&storage.Error{Code: storage.ErrIndexNotFound, Msg: "no index"}, mongoerr.IndexNotFound, false},
		{&storage.Error{Code: storage.ErrIndexConflict, Msg: "conflict"}, mongoerr.IndexOptionsConflict, false},
		{&storage.Error{Code: storage.ErrIndexNameConflict, Msg: "conflict"}, mongoerr.IndexKeySpecsConflict, false},
		{&storage.Error{Code: storage.ErrUnavailable, Msg: "down", Cause: secret}, mongoerr.HostUnreachable, true},
		{&storage.Error{Code: storage.ErrDeadline, Msg: "late"}, mongoerr.MaxTimeMSExpired, false},
		{&storage.Error{Code: storage.ErrCanceled, Msg: "gone"}, mongoerr.ClientDisconnect, false},
		{&storage.Error{Code: storage.ErrWriteConflict, Msg: "conflict", Cause: secret}, mongoerr.WriteConflict, false},
		{&storage.Error{Code: storage.ErrInternal, Msg: "internal storage error", Cause: secret}, mongoerr.InternalError, true},
		{context.DeadlineExceeded, mongoerr.MaxTimeMSExpired, false},
		{fmt.Errorf("admit: %w", context.Canceled), mongoerr.ClientDisconnect, false},
		{secret, mongoerr.InternalError, true},
	}
	for _, c := range cases {
		e, internal := Map(c.err)
		if e.Code != c.code || internal != c.internal {
			t.Errorf("Map(%v) = %d internal=%v, want %d internal=%v", c.err, e.Code, internal, c.code, c.internal)
		}
		reply := errorReply(e)
		text := fmt.Sprint(reply)
		if strings.Contains(text, "SQLSTATE") || strings.Contains(text, "tierdb_data") || strings.Contains(text, "SELECT") {
			t.Errorf("reply for %v leaks internals: %s", c.err, text)
		}
		if name, _ := lookup(reply, "codeName"); name != c.code.Name() {
			t.Errorf("codeName %v, want %s", name, c.code.Name())
		}
	}
}
