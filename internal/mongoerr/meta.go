package mongoerr

// Codes of {$meta: ...} (expression_meta.cpp, the pipeline's dependency
// checks).
const (
	Location40218 Code = 40218 // textScore asked for where no $text query gave one
	Location17308 Code = 17308 // an unknown $meta keyword
)
