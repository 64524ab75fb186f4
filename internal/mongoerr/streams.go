package mongoerr

// Codes of capped collections, tailable cursors and change streams, kept
// apart so the main table stays easy to merge.
const (
	CappedPositionLost      Code = 136
	ChangeStreamFatalError  Code = 280
	ChangeStreamHistoryLost Code = 286
	InvalidResumeToken      Code = 260
	// Location40573: $changeStream where MongoDB has no oplog (standalone).
	Location40573 Code = 40573
)

func init() {
	names[CappedPositionLost] = "CappedPositionLost"
	names[ChangeStreamFatalError] = "ChangeStreamFatalError"
	names[ChangeStreamHistoryLost] = "ChangeStreamHistoryLost"
	names[InvalidResumeToken] = "InvalidResumeToken"
}
