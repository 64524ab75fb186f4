package mongoerr

// Codes of the admin commands (currentOp, killOp, argument checks).
const (
	// Interrupted: the operation was killed (killOp).
	Interrupted Code = 11601
	// ValueNegative is MongoDB's IDL check of a field that must be at
	// least some bound ("BSON field 'skip' value must be >= 0, actual
	// value '-1'"; codeName Location51024).
	ValueNegative Code = 51024
	// MissingField is MongoDB's IDL parser missing a required field
	// ("BSON field 'killOp.op' is missing but a required field";
	// codeName Location40414).
	MissingField Code = 40414
)

func init() {
	names[Interrupted] = "Interrupted"
}

// Location40602: a source stage ($collStats, $currentOp) after the first.
const Location40602 Code = 40602

// Location5447000: $collStats given something other than a document.
const Location5447000 Code = 5447000

// Location26823: a killOp opid that does not fit 32 bits.
const Location26823 Code = 26823
