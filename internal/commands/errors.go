package commands

import (
	"context"
	"errors"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"tierdb/internal/auth"
	"tierdb/internal/mongoerr"
	"tierdb/internal/storage"
)

// Map turns any error into the MongoDB error a client sees. It is the only
// place that knows both storage's codes and MongoDB's. internal reports
// whether the error was unexpected, so the caller logs its full text.
func Map(err error) (e *mongoerr.Error, internal bool) {
	if me, ok := mongoerr.As(err); ok {
		return me, false
	}
	var ae *auth.Error
	if errors.As(err, &ae) {
		return mapAuth(ae, err), false
	}
	var se *storage.Error
	if errors.As(err, &se) {
		switch se.Code {
		case storage.ErrNamespaceNotFound:
			return &mongoerr.Error{Code: mongoerr.NamespaceNotFound, Msg: se.Msg, Cause: err}, false
		case storage.ErrNamespaceExists:
			return &mongoerr.Error{Code: mongoerr.NamespaceExists, Msg: se.Msg, Cause: err}, false
		case storage.ErrDuplicateKey:
			return &mongoerr.Error{Code: mongoerr.DuplicateKey, Msg: se.Msg, Cause: err}, false
		case storage.ErrIndexNotFound:
			return &mongoerr.Error{Code: mongoerr.IndexNotFound, Msg: se.Msg, Cause: err}, false
		case storage.ErrIndexConflict:
			return &mongoerr.Error{Code: mongoerr.IndexOptionsConflict, Msg: se.Msg, Cause: err}, false
		case storage.ErrIndexNameConflict:
			return &mongoerr.Error{Code: mongoerr.IndexKeySpecsConflict, Msg: se.Msg, Cause: err}, false
		case storage.ErrBadLanguage:
			return &mongoerr.Error{Code: mongoerr.Code(17262), Msg: se.Msg, Cause: err}, false
		case storage.ErrMemoryLimit:
			return &mongoerr.Error{Code: mongoerr.QueryExceededMemoryLimit, Msg: se.Msg, Cause: err}, false
		case storage.ErrCannotIndex:
			return &mongoerr.Error{Code: mongoerr.Code(16766), Msg: se.Msg, Cause: err}, false
		case storage.ErrIllegal:
			return &mongoerr.Error{Code: mongoerr.InvalidOptions, Msg: se.Msg, Cause: err}, false
		case storage.ErrUnavailable:
			return &mongoerr.Error{Code: mongoerr.HostUnreachable, Msg: "storage backend unavailable, retry later", Cause: err}, true
		case storage.ErrDeadline:
			return &mongoerr.Error{Code: mongoerr.MaxTimeMSExpired, Msg: "operation exceeded time limit", Cause: err}, false
		case storage.ErrWriteConflict:
			return &mongoerr.Error{Code: mongoerr.WriteConflict, Msg: se.Msg, Cause: err}, false
		case storage.ErrTooLarge:
			return &mongoerr.Error{Code: mongoerr.BSONObjectTooLarge, Msg: se.Msg, Cause: err}, false
		case storage.ErrNotInTxn:
			return &mongoerr.Error{Code: mongoerr.OperationNotSupportedInTxn, Msg: se.Msg, Cause: err}, false
		case storage.ErrCanceled:
			return &mongoerr.Error{Code: mongoerr.ClientDisconnect, Msg: "operation was interrupted", Cause: err}, false
		}
		return &mongoerr.Error{Code: mongoerr.InternalError, Msg: "internal error", Cause: err}, true
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &mongoerr.Error{Code: mongoerr.MaxTimeMSExpired, Msg: "operation exceeded time limit", Cause: err}, false
	}
	if errors.Is(err, context.Canceled) {
		return &mongoerr.Error{Code: mongoerr.ClientDisconnect, Msg: "operation was interrupted", Cause: err}, false
	}
	return &mongoerr.Error{Code: mongoerr.InternalError, Msg: "internal error", Cause: err}, true
}

// mapAuth gives each kind of auth failure its MongoDB code. A failed
// authentication always gets the same message, whatever the reason (which
// stays in the log).
func mapAuth(ae *auth.Error, err error) *mongoerr.Error {
	code := mongoerr.BadValue
	switch ae.Kind {
	case auth.KindFailed:
		return &mongoerr.Error{Code: mongoerr.AuthenticationFailed, Msg: auth.FailedMsg, Cause: err}
	case auth.KindUnauthorized:
		code = mongoerr.Unauthorized
	case auth.KindMechanism:
		code = mongoerr.MechanismUnavailable
	case auth.KindNoConversation:
		code = mongoerr.ProtocolError
	case auth.KindUserNotFound:
		code = mongoerr.UserNotFound
	case auth.KindRoleNotFound:
		code = mongoerr.RoleNotFound
	case auth.KindUserExists:
		code = mongoerr.UserAlreadyExists
	case auth.KindRoleExists:
		code = mongoerr.RoleAlreadyExists
	}
	return &mongoerr.Error{Code: code, Msg: ae.Msg}
}

// ErrorReply is the reply to a request that failed before reaching the
// command table (a malformed frame, an undecodable body, a reply too large
// to send): err mapped as Dispatch maps a handler's.
func ErrorReply(err error) bson.D {
	e, _ := Map(err)
	return errorReply(e)
}

// errorReply is the {ok: 0, errmsg, code, codeName[, errorLabels]} document.
func errorReply(e *mongoerr.Error) bson.D {
	reply := bson.D{
		{Key: "ok", Value: 0.0},
		// A message may quote what the client sent; BSON strings must be
		// UTF-8, or the driver cannot even read the error.
		{Key: "errmsg", Value: strings.ToValidUTF8(e.Msg, "\uFFFD")},
		{Key: "code", Value: int32(e.Code)},
		{Key: "codeName", Value: e.Code.Name()},
	}
	if len(e.Labels) > 0 {
		labels := make(bson.A, len(e.Labels))
		for i, l := range e.Labels {
			labels[i] = l
		}
		reply = append(reply, bson.E{Key: "errorLabels", Value: labels})
	}
	return reply
}

// writeError is one entry of a writeErrors array.
func writeError(index int, err error) bson.D {
	e, _ := Map(err)
	we := bson.D{{Key: "index", Value: int32(index)}, {Key: "code", Value: int32(e.Code)}, {Key: "errmsg", Value: strings.ToValidUTF8(e.Msg, "\uFFFD")}}
	var se *storage.Error
	if errors.As(err, &se) && se.Dup != nil {
		we = append(we, bson.E{Key: "keyPattern", Value: se.Dup.KeyPattern}, bson.E{Key: "keyValue", Value: se.Dup.KeyValue})
	}
	return we
}
