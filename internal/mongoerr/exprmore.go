package mongoerr

// Codes of the later expression operators and accumulators ($getField,
// $setField, $sortArray, $zip, the trigonometric and bitwise operators,
// the n-accumulators, $top/$bottom, $median and $percentile), kept apart
// so the main table stays easy to merge.
const (
	Location2942500 Code = 2942500 // $sortArray: argument not an object
	Location2942501 Code = 2942501 // $sortArray: unknown argument
	Location2942502 Code = 2942502 // $sortArray: no 'input'
	Location2942503 Code = 2942503 // $sortArray: no 'sortBy'
	Location2942504 Code = 2942504 // $sortArray: input not an array
	Location2942506 Code = 2942506 // $sortArray: a sort direction not 1 or -1
	Location3040501 Code = 3040501 // $rand with arguments
	Location3041701 Code = 3041701 // $getField: unknown argument
	Location3041702 Code = 3041702 // $getField: no 'field'
	Location3041703 Code = 3041703 // $getField: no 'input'
	Location3041704 Code = 3041704 // $getField: field not a string
	Location3041705 Code = 3041705 // $getField: input not an object
	Location4161100 Code = 4161100 // $setField: argument not an object
	Location4161101 Code = 4161101 // $setField: unknown argument
	Location4161102 Code = 4161102 // $setField: no 'field'
	Location4161103 Code = 4161103 // $setField: no 'value'
	Location4161105 Code = 4161105 // $setField: input not an object
	Location4161106 Code = 4161106 // $setField: field not a constant
	Location4161107 Code = 4161107 // $setField: field not a string
	Location4161108 Code = 4161108 // $setField: field a field path
	Location4161109 Code = 4161109 // $setField: no 'input'
	Location31393   Code = 31393   // $bsonSize: not a document
	Location34460   Code = 34460   // $zip: argument not an object
	Location34461   Code = 34461   // $zip: inputs not an array
	Location34462   Code = 34462   // $zip: defaults not an array
	Location34463   Code = 34463   // $zip: useLongestLength not a bool
	Location34464   Code = 34464   // $zip: unknown argument
	Location34465   Code = 34465   // $zip: no inputs
	Location34466   Code = 34466   // $zip: defaults without useLongestLength
	Location34467   Code = 34467   // $zip: defaults and inputs of different lengths
	Location34468   Code = 34468   // $zip: an input not an array
	Location50989   Code = 50989   // trigonometric argument out of bounds
	Location51044   Code = 51044   // $atan2: first argument not a number
	Location51045   Code = 51045   // $atan2: second argument not a number
	Location51276   Code = 51276   // $binarySize: not a string or BinData
	Location5687301 Code = 5687301 // $tsSecond: not a timestamp
	Location5687302 Code = 5687302 // $tsIncrement: not a timestamp
	Location5787801 Code = 5787801 // $firstN/$lastN: not an object
	Location5787900 Code = 5787900 // $minN/$maxN: not an object
	Location5787901 Code = 5787901 // n-accumulator: unknown argument
	Location5787902 Code = 5787902 // n not a number
	Location5787903 Code = 5787903 // n not integral
	Location5787906 Code = 5787906 // no 'n'
	Location5787907 Code = 5787907 // no 'input'
	Location5787908 Code = 5787908 // n not positive
	Location5788001 Code = 5788001 // $top/$bottom: not an object
	Location5788002 Code = 5788002 // $top/$bottom: unknown argument
	Location5788003 Code = 5788003 // $topN/$bottomN: no 'n'
	Location5788004 Code = 5788004 // $top/$bottom: no 'output'
	Location5788005 Code = 5788005 // $top/$bottom: no 'sortBy'
	Location5788200 Code = 5788200 // n-expression: input not an array
	Location7429703 Code = 7429703 // $percentile accumulator: not an object
	Location7436100 Code = 7436100 // $median accumulator: not an object
	Location7436200 Code = 7436200 // $percentile expression: not an object
	Location7436201 Code = 7436201 // $median expression: not an object
	Location7750300 Code = 7750300 // $percentile: p not a constant
	Location7750301 Code = 7750301 // $percentile: p not a non-empty array
	Location7750302 Code = 7750302 // $percentile: p element not a number
	Location7750303 Code = 7750303 // $percentile: p element outside [0, 1]
)
