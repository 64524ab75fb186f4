package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// ErrorCode is storage's small vocabulary of failures.
type ErrorCode int

const (
	// ErrInternal is anything not listed below; details stay in Cause.
	ErrInternal ErrorCode = iota
	ErrNamespaceNotFound
	ErrNamespaceExists
	ErrDuplicateKey
	ErrIndexNotFound
	ErrIndexExists
	// ErrIndexConflict: the same keys exist under another name or options.
	ErrIndexConflict
	// ErrIndexNameConflict: the name exists with other keys.
	ErrIndexNameConflict
	// ErrIllegal: an operation storage refuses (dropping the _id index).
	ErrIllegal
	// ErrUnavailable means PostgreSQL could not be reached or went away
	// (restarting, connection lost). Retrying later may succeed.
	ErrUnavailable
	// ErrCanceled means the request's context ended (client gone, deadline).
	ErrCanceled
	ErrDeadline
	// ErrWriteConflict: a transaction lost a race with a concurrent one (a
	// serialization failure or a deadlock); retrying it from the start may
	// succeed.
	ErrWriteConflict
	// ErrNotInTxn: an operation a transaction may not do (writing to a
	// capped collection).
	ErrNotInTxn
	// ErrTooLarge: a document larger than its capped collection.
	ErrTooLarge
	// ErrCannotIndex: a document holds a value an index cannot hold (an
	// array in a hashed field).
	ErrCannotIndex
	// ErrBadLanguage: a document names a text search language tierdb
	// does not know (MongoDB's "language override unsupported").
	ErrBadLanguage
	// ErrMemoryLimit: a read would hold more than its memory bound.
	ErrMemoryLimit
)

// Error is a storage failure. Msg is safe to show a client; Cause is for logs.
type Error struct {
	Code  ErrorCode
	Msg   string
	Cause error
	// Dup details an ErrDuplicateKey when the violated index is known.
	Dup *DuplicateKey
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("storage: %s: %v", e.Msg, e.Cause)
	}
	return "storage: " + e.Msg
}

func (e *Error) Unwrap() error { return e.Cause }

func newErr(code ErrorCode, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// IsCode reports whether err is a storage error with the given code.
func IsCode(err error, code ErrorCode) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// SQLSTATEs we translate. Everything else becomes ErrInternal.
const (
	sqlUniqueViolation   = "23505"
	sqlUndefinedTable    = "42P01"
	sqlUndefinedColumn   = "42703"
	sqlQueryCanceled     = "57014"
	sqlAdminShutdown     = "57P01"
	sqlCrashShutdown     = "57P02"
	sqlCannotConnectNow  = "57P03"
	sqlTooManyConns      = "53300"
	sqlDuplicateTable    = "42P07"
	sqlConnectionFailure = "08"
	sqlSerialization     = "40001"
	sqlDeadlock          = "40P01"
	sqlDivisionByZero    = "22012"
)

// isRecorded: recordSQL found the statement already recorded: it divides
// by zero on purpose.
func isRecorded(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == sqlDivisionByZero
}

// fromPG translates an error from pgx into a storage error. It is the only
// place that looks at SQLSTATEs.
func fromPG(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var se *Error
	if errors.As(err, &se) {
		return err
	}
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
			return &Error{Code: ErrDeadline, Msg: "operation exceeded time limit", Cause: err}
		}
		return &Error{Code: ErrCanceled, Msg: "operation canceled", Cause: err}
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == sqlUniqueViolation:
			return &Error{Code: ErrDuplicateKey, Msg: "duplicate key", Cause: err}
		case pe.Code == sqlSerialization || pe.Code == sqlDeadlock:
			return &Error{Code: ErrWriteConflict, Msg: "Write conflict during plan execution and yielding is disabled.", Cause: err}
		case pe.Code == sqlUndefinedTable || pe.Code == sqlUndefinedColumn:
			return &Error{Code: ErrNamespaceNotFound, Msg: "collection does not exist", Cause: err}
		case pe.Code == sqlQueryCanceled:
			return &Error{Code: ErrDeadline, Msg: "operation exceeded time limit", Cause: err}
		case pe.Code == sqlAdminShutdown || pe.Code == sqlCrashShutdown || pe.Code == sqlCannotConnectNow ||
			pe.Code == sqlTooManyConns || len(pe.Code) == 5 && pe.Code[:2] == sqlConnectionFailure:
			return &Error{Code: ErrUnavailable, Msg: "database backend unavailable", Cause: err}
		}
		return &Error{Code: ErrInternal, Msg: "internal storage error", Cause: err}
	}
	if pgconn.SafeToRetry(err) || isConnErr(err) {
		return &Error{Code: ErrUnavailable, Msg: "database backend unavailable", Cause: err}
	}
	return &Error{Code: ErrInternal, Msg: "internal storage error", Cause: err}
}

func isConnErr(err error) bool {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	// A backend killed or a server restart surfaces as an unexpected EOF or a
	// closed connection from pgconn; pgconn marks those as not timeouts.
	var netErr interface{ Timeout() bool }
	if errors.As(err, &netErr) {
		return true
	}
	msg := err.Error()
	for _, s := range []string{"unexpected EOF", "connection reset", "broken pipe", "conn closed", "closed pool", "failed to connect", "connection refused"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
