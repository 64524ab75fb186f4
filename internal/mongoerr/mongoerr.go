package mongoerr

import (
	"errors"
	"fmt"
	"slices"
)

// Code is a MongoDB server error code.
type Code int32

// The MongoDB error codes tierdb uses. Numbers and names are MongoDB's
// (src/mongo/base/error_codes.yml).
const (
	InternalError                Code = 1
	BadValue                     Code = 2
	NoSuchKey                    Code = 4
	HostUnreachable              Code = 6
	FailedToParse                Code = 9
	Unauthorized                 Code = 13
	TypeMismatch                 Code = 14
	AuthenticationFailed         Code = 18
	IllegalOperation             Code = 20
	InvalidBSON                  Code = 22
	NamespaceNotFound            Code = 26
	IndexNotFound                Code = 27
	PathNotViable                Code = 28
	ConflictingUpdateOperators   Code = 40
	CursorNotFound               Code = 43
	NamespaceExists              Code = 48
	MaxTimeMSExpired             Code = 50
	DollarPrefixedFieldName      Code = 52
	InvalidIDField               Code = 53
	NotSingleValueField          Code = 54
	EmptyFieldName               Code = 56
	CommandNotFound              Code = 59
	WriteConcernFailed           Code = 64
	ImmutableField               Code = 66
	CannotCreateIndex            Code = 67
	IndexAlreadyExists           Code = 68
	InvalidOptions               Code = 72
	InvalidNamespace             Code = 73
	IndexOptionsConflict         Code = 85
	IndexKeySpecsConflict        Code = 86
	NetworkTimeout               Code = 89
	OperationFailed              Code = 96
	ExceededTimeLimit            Code = 262
	QueryExceededMemoryLimit     Code = 292
	ExceededMemoryLimit          Code = 146
	NotWritablePrimary           Code = 10107
	BSONObjectTooLarge           Code = 10334
	DuplicateKey                 Code = 11000
	InterruptedAtShutdown        Code = 11600
	ClientDisconnect             Code = 279
	InvalidLength                Code = 16
	ProtocolError                Code = 17
	CommandNotSupported          Code = 115
	NotImplemented               Code = 238
	InvalidIndexSpecificationOpt Code = 197
	AmbiguousIndexKeyPattern     Code = 181
	CannotIndexParallelArrays    Code = 171
	ShutdownInProgress           Code = 91
	PrimarySteppedDown           Code = 189
	NoReplicationEnabled         Code = 76
	UnknownReplWriteConcern      Code = 79
	UnsatisfiableWriteConcern    Code = 100
	FailedToSatisfyReadPref      Code = 133
	InterruptedDueToReplChange   Code = 11602
	UnknownError                 Code = 8
	InvalidPipelineOperator      Code = 168
	Location15952                Code = 15952
	Location15955                Code = 15955
	Location40234                Code = 40234
	Location40323                Code = 40323
	UserNotFound                 Code = 11
	WriteConflict                Code = 112
	ConflictingOperationInProg   Code = 117
	NoSuchSession                Code = 206
	TransactionTooOld            Code = 225
	NoSuchTransaction            Code = 251
	TransactionCommitted         Code = 256
	OperationNotSupportedInTxn   Code = 263
	TxnExceededLifetimeLimit     Code = 290
	// UnknownField is MongoDB's IDL parser refusing a field it does not
	// know ("BSON field 'find.x' is an unknown field."; codeName
	// Location40415).
	UnknownField Code = 40415
	// MongoDB's assertion for a txnNumber on a command that is neither a
	// retryable write nor part of a transaction.
	TxnNumberNotAllowed  Code = 50768
	RoleNotFound         Code = 31
	MechanismUnavailable Code = 334
	// MongoDB reports an existing user or role with these numbered
	// assertions (codeName "Location51003" / "Location51002").
	UserAlreadyExists Code = 51003
	RoleAlreadyExists Code = 51002
)

var names = map[Code]string{
	InternalError:                "InternalError",
	BadValue:                     "BadValue",
	NoSuchKey:                    "NoSuchKey",
	HostUnreachable:              "HostUnreachable",
	FailedToParse:                "FailedToParse",
	Unauthorized:                 "Unauthorized",
	TypeMismatch:                 "TypeMismatch",
	AuthenticationFailed:         "AuthenticationFailed",
	IllegalOperation:             "IllegalOperation",
	InvalidBSON:                  "InvalidBSON",
	NamespaceNotFound:            "NamespaceNotFound",
	IndexNotFound:                "IndexNotFound",
	PathNotViable:                "PathNotViable",
	ConflictingUpdateOperators:   "ConflictingUpdateOperators",
	CursorNotFound:               "CursorNotFound",
	NamespaceExists:              "NamespaceExists",
	MaxTimeMSExpired:             "MaxTimeMSExpired",
	DollarPrefixedFieldName:      "DollarPrefixedFieldName",
	InvalidIDField:               "InvalidIdField",
	NotSingleValueField:          "NotSingleValueField",
	EmptyFieldName:               "EmptyFieldName",
	CommandNotFound:              "CommandNotFound",
	WriteConcernFailed:           "WriteConcernFailed",
	ImmutableField:               "ImmutableField",
	CannotCreateIndex:            "CannotCreateIndex",
	IndexAlreadyExists:           "IndexAlreadyExists",
	InvalidOptions:               "InvalidOptions",
	InvalidNamespace:             "InvalidNamespace",
	IndexOptionsConflict:         "IndexOptionsConflict",
	IndexKeySpecsConflict:        "IndexKeySpecsConflict",
	NetworkTimeout:               "NetworkTimeout",
	OperationFailed:              "OperationFailed",
	ExceededTimeLimit:            "ExceededTimeLimit",
	QueryExceededMemoryLimit:     "QueryExceededMemoryLimitNoDiskUseAllowed",
	ExceededMemoryLimit:          "ExceededMemoryLimit",
	NotWritablePrimary:           "NotWritablePrimary",
	BSONObjectTooLarge:           "BSONObjectTooLarge",
	DuplicateKey:                 "DuplicateKey",
	InterruptedAtShutdown:        "InterruptedAtShutdown",
	ClientDisconnect:             "ClientDisconnect",
	InvalidLength:                "InvalidLength",
	ProtocolError:                "ProtocolError",
	CommandNotSupported:          "CommandNotSupported",
	NotImplemented:               "NotImplemented",
	InvalidIndexSpecificationOpt: "InvalidIndexSpecificationOption",
	AmbiguousIndexKeyPattern:     "AmbiguousIndexKeyPattern",
	CannotIndexParallelArrays:    "CannotIndexParallelArrays",
	ShutdownInProgress:           "ShutdownInProgress",
	PrimarySteppedDown:           "PrimarySteppedDown",
	NoReplicationEnabled:         "NoReplicationEnabled",
	UnknownReplWriteConcern:      "UnknownReplWriteConcern",
	UnsatisfiableWriteConcern:    "UnsatisfiableWriteConcern",
	FailedToSatisfyReadPref:      "FailedToSatisfyReadPreference",
	InterruptedDueToReplChange:   "InterruptedDueToReplStateChange",
	UnknownError:                 "UnknownError",
	InvalidPipelineOperator:      "InvalidPipelineOperator",
	UserNotFound:                 "UserNotFound",
	RoleNotFound:                 "RoleNotFound",
	MechanismUnavailable:         "MechanismUnavailable",
	WriteConflict:                "WriteConflict",
	ConflictingOperationInProg:   "ConflictingOperationInProgress",
	NoSuchSession:                "NoSuchSession",
	TransactionTooOld:            "TransactionTooOld",
	NoSuchTransaction:            "NoSuchTransaction",
	TransactionCommitted:         "TransactionCommitted",
	OperationNotSupportedInTxn:   "OperationNotSupportedInTransaction",
	TxnExceededLifetimeLimit:     "TransactionExceededLifetimeLimitSeconds",
}

// Error labels MongoDB attaches to errors of transactions and retryable
// writes; drivers decide from them whether to retry.
const (
	// LabelTransientTxn: the whole transaction may be retried from the start.
	LabelTransientTxn = "TransientTransactionError"
	// LabelUnknownCommit: the commit may or may not have happened; retrying
	// commitTransaction is safe.
	LabelUnknownCommit = "UnknownTransactionCommitResult"
)

// Name is the codeName MongoDB sends beside the code; "Location<N>" for the
// numbered assertion codes that have no name.
func (c Code) Name() string {
	if n, ok := names[c]; ok {
		return n
	}
	return fmt.Sprintf("Location%d", int32(c))
}

// Error is a failure the client is allowed to see.
type Error struct {
	Code Code
	Msg  string
	// Labels are the reply's errorLabels (LabelTransientTxn, ...).
	Labels []string
	// Cause is the underlying error, for the log only. Never sent to a client.
	Cause error
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("%s (%d): %s: %v", e.Code.Name(), e.Code, e.Msg, e.Cause)
	}
	return fmt.Sprintf("%s (%d): %s", e.Code.Name(), e.Code, e.Msg)
}

func (e *Error) Unwrap() error { return e.Cause }

// New returns an error with the given code and client-visible message.
func New(code Code, msg string) *Error { return &Error{Code: code, Msg: msg} }

// Newf is New with formatting.
func Newf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// WithLabel returns a copy of e that carries label too.
func (e *Error) WithLabel(label string) *Error {
	c := *e
	if !slices.Contains(c.Labels, label) {
		c.Labels = append(slices.Clone(c.Labels), label)
	}
	return &c
}

// As reports whether err is (or wraps) a *Error, and returns it.
func As(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}
