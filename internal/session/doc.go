// Package session keeps MongoDB's logical sessions: the lsid a driver sends
// with its commands, the highest txnNumber each session has used, and the
// state of its multi-document transaction (active, committed, aborted,
// expired). It decides whether a transaction statement may run; it does not
// run anything.
//
// A session's commands run one at a time (Acquire waits for the session's
// turn). Transactions end by commit, abort, a newer transaction of the same
// session, the end of the session, or their lifetime limit
// (transactionLifetimeLimitSeconds); idle sessions are forgotten after the
// session timeout (logicalSessionTimeoutMinutes).
//
// session is pure logic with an injected clock: it must never do I/O or
// talk to PostgreSQL itself. What a transaction holds (a PostgreSQL
// transaction, an admission) is behind the Resource interface.
package session
