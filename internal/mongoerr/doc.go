// Package mongoerr is the one place where failures become MongoDB error codes.
//
// Handlers and lower layers return either a *Error built here (when they already
// know the MongoDB code, e.g. a malformed filter is BadValue) or their own error
// values (storage codes, context errors, driver errors). Map turns anything into a
// *Error that is safe to show a client.
//
// It must never let SQL text, file paths or other internal detail reach a client:
// unknown errors become InternalError with a generic message and the real error is
// left for the caller to log.
package mongoerr
