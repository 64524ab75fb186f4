package commands

import (
	"context"
	"crypto/rand"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/mongoerr"
	"tierdb/internal/session"
	"tierdb/internal/storage"
)

// The session commands: startSession, refreshSessions, endSessions,
// killSessions, killAllSessions. Sessions themselves are kept by package
// session; their durable records (retryable writes, committed
// transactions) by storage.

func (h *Handlers) startSession(context.Context, *Request) (bson.D, error) {
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return nil, err
	}
	id[6] = id[6]&0x0f | 0x40 // version 4
	id[8] = id[8]&0x3f | 0x80 // RFC 4122 variant
	return bson.D{
		{Key: "id", Value: bson.D{{Key: "id", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: id}}}},
		{Key: "timeoutMinutes", Value: h.sessionTimeoutMinutes()},
	}, nil
}

// sessionTimeoutMinutes is logicalSessionTimeoutMinutes, as hello says it.
func (h *Handlers) sessionTimeoutMinutes() int32 {
	return int32(max(1, h.sessions.Idle().Minutes()))
}

// sessionIDs reads the array of lsids the session commands take, as the
// caller's sessions.
func sessionIDs(req *Request) ([]session.ID, error) {
	items, ok := req.Cmd[0].Value.(bson.A)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.TypeMismatch, "%s takes an array of session ids", req.Name)
	}
	if len(items) > 10000 {
		return nil, mongoerr.Newf(mongoerr.InvalidLength, "%s takes at most 10000 sessions, got %d", req.Name, len(items))
	}
	ids := make([]session.ID, 0, len(items))
	for _, it := range items {
		uuid, err := session.ParseLSID(it)
		if err != nil {
			return nil, err
		}
		ids = append(ids, session.ID{UUID: uuid, User: sessionUser(req.Session)})
	}
	return ids, nil
}

func (h *Handlers) refreshSessions(ctx context.Context, req *Request) (bson.D, error) {
	ids, err := sessionIDs(req)
	if err != nil {
		return nil, err
	}
	h.sessions.Touch(ids)
	return bson.D{}, h.store.TouchRecords(ctx, keysOf(ids))
}

// endSessions and killSessions end the caller's sessions: open
// transactions are aborted and the records of their retryable writes
// deleted (an ended session is never retried).
func (h *Handlers) endSessions(ctx context.Context, req *Request) (bson.D, error) {
	ids, err := sessionIDs(req)
	if err != nil {
		return nil, err
	}
	h.sessions.End(ids)
	return bson.D{}, h.store.DeleteRecords(ctx, keysOf(ids))
}

// killAllSessions ends every session of the users it names ({user, db}),
// or of everyone with an empty array. It needs the killAnySession
// privilege (root, clusterManager).
func (h *Handlers) killAllSessions(_ context.Context, req *Request) (bson.D, error) {
	items, ok := req.Cmd[0].Value.(bson.A)
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "killAllSessions takes an array of {user, db}")
	}
	users := map[string]bool{}
	for _, it := range items {
		d, ok := it.(bson.D)
		if !ok {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "killAllSessions takes an array of {user, db}")
		}
		user, err := getString(d, "user", "")
		if err != nil {
			return nil, err
		}
		db, err := getString(d, "db", "")
		if err != nil {
			return nil, err
		}
		users[db+"."+user] = true
	}
	h.sessions.EndMatching(func(id session.ID) bool { return len(users) == 0 || users[id.User] })
	return bson.D{}, nil
}

func keysOf(ids []session.ID) []storage.SessionKey {
	keys := make([]storage.SessionKey, len(ids))
	for i, id := range ids {
		keys[i] = sessionArgs{id: &id}.key()
	}
	return keys
}
