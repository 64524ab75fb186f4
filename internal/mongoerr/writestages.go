package mongoerr

// Codes of the writing stages ($out, $merge) and of views.
const (
	CommandNotSupportedOnView    Code = 166
	OptionNotSupportedOnView     Code = 167
	ViewDepthLimitExceeded       Code = 170
	GraphContainsCycle           Code = 93
	MergeStageNoMatchingDocument Code = 13113
	Location16990                Code = 16990 // $out's argument of the wrong type
	Location17385                Code = 17385 // $out to a special collection
	Location17152                Code = 17152 // $out to a capped collection
	Location31441                Code = 31441 // $out/$merge inside $unionWith
	Location40601                Code = 40601 // a writing stage that is not the last one
	Location51047                Code = 51047 // $out/$merge inside $lookup
	Location51132                Code = 51132 // $merge's 'on' field missing, null or an array
	Location51178                Code = 51178 // $merge's 'on' fields not unique or empty
	Location51183                Code = 51183 // $merge's 'on' without a unique index
	Location51186                Code = 51186 // $merge's 'on' of the wrong type
	Location51191                Code = 51191 // $merge's 'into' of the wrong type
	Location51199                Code = 51199 // $merge's 'let' without a pipeline
	Location51182                Code = 51182 // $merge's argument of the wrong type
	Location51187                Code = 51187 // $merge's 'on' an empty array
	Location51134                Code = 51134 // $merge's 'on' array of non-strings
	Location31465                Code = 31465 // $merge's 'on' naming a field twice
)

func init() {
	names[CommandNotSupportedOnView] = "CommandNotSupportedOnView"
	names[OptionNotSupportedOnView] = "OptionNotSupportedOnView"
	names[ViewDepthLimitExceeded] = "ViewDepthLimitExceeded"
	names[GraphContainsCycle] = "GraphContainsCycle"
	names[MergeStageNoMatchingDocument] = "MergeStageNoMatchingDocument"
}

// Codes of $graphLookup, $bucketAuto and $setWindowFields.
const (
	Location40100 Code = 40100
	Location40101 Code = 40101
	Location40103 Code = 40103
	Location40104 Code = 40104
	Location40105 Code = 40105
	Location40185 Code = 40185
	Location40239 Code = 40239
	Location40240 Code = 40240
	Location40241 Code = 40241
	Location40242 Code = 40242
	Location40243 Code = 40243
	Location40244 Code = 40244
	Location40245 Code = 40245
	Location40246 Code = 40246
	Location40327 Code = 40327
)
