package commands

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
)

// A handler's panic becomes an InternalError reply for that request; the
// next request on the same Handlers is served.
func TestDispatchRecoversFromHandlerPanic(t *testing.T) {
	h := New(Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer h.Close()
	h.table["boom"] = &command{name: "boom", internal: true, access: open,
		handler: func(context.Context, *Request) (bson.D, error) { panic("handler bug") }}
	reply := h.Dispatch(context.Background(), &Request{DB: "admin", Cmd: bson.D{{Key: "boom", Value: 1}}})
	if code, _ := lookup(reply, "code"); code != int32(mongoerr.InternalError) {
		t.Fatalf("reply %v, want code %d", reply, mongoerr.InternalError)
	}
	reply = h.Dispatch(context.Background(), &Request{DB: "admin", Cmd: bson.D{{Key: "ping", Value: 1}}})
	if ok, _ := lookup(reply, "ok"); ok != 1.0 {
		t.Fatalf("ping after a panic: %v", reply)
	}
}

// Error labels reach the reply.
func TestErrorReplyCarriesLabels(t *testing.T) {
	e := mongoerr.New(mongoerr.WriteConflict, "conflict").WithLabel(mongoerr.LabelTransientTxn)
	reply := errorReply(e)
	labels, _ := lookup(reply, "errorLabels")
	if a, ok := labels.(bson.A); !ok || len(a) != 1 || a[0] != mongoerr.LabelTransientTxn {
		t.Fatalf("errorLabels = %v", labels)
	}
	if plain := errorReply(mongoerr.New(mongoerr.BadValue, "x")); len(plain) != 4 {
		t.Fatalf("a label-less error gets no errorLabels: %v", plain)
	}
}
