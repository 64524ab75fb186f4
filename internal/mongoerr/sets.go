package mongoerr

// Codes of MongoDB's set expressions ($setUnion, ...; expression.cpp).
const (
	Location17040 Code = 17040 // $allElementsTrue's argument is not an array
	Location17041 Code = 17041 // $anyElementTrue's argument is not an array
	Location17042 Code = 17042 // $setIsSubset's second argument is not an array
	Location17043 Code = 17043 // an operand of $setUnion is not an array
	Location17044 Code = 17044 // an operand of $setEquals is not an array
	Location17045 Code = 17045 // $setEquals has fewer than two arguments
	Location17046 Code = 17046 // $setIsSubset's first argument is not an array
	Location17047 Code = 17047 // an operand of $setIntersection is not an array
	Location17048 Code = 17048 // $setDifference's first argument is not an array
	Location17049 Code = 17049 // $setDifference's second argument is not an array
)

// Codes of $replaceOne and $replaceAll.
const (
	Location51744 Code = 51744 // 'replacement' is not a string
	Location51745 Code = 51745 // 'find' is not a string
	Location51746 Code = 51746 // 'input' is not a string
	Location51747 Code = 51747 // no 'replacement'
	Location51748 Code = 51748 // no 'find'
	Location51749 Code = 51749 // no 'input'
	Location51750 Code = 51750 // an unknown argument
	Location51751 Code = 51751 // the argument is not an object
)

// Codes of $dateAdd, $dateSubtract and $dateDiff.
const (
	Location5166301 Code = 5166301 // $dateDiff's argument is not an object
	Location5166302 Code = 5166302 // ... has an unknown field
	Location5166303 Code = 5166303 // ... no startDate
	Location5166304 Code = 5166304 // ... no endDate
	Location5166305 Code = 5166305 // ... no unit
	Location5166307 Code = 5166307 // ... a date that is not one
	Location5166400 Code = 5166400 // $dateAdd's argument is not an object
	Location5166401 Code = 5166401 // ... has an unknown field
	Location5166402 Code = 5166402 // ... lacks startDate, unit or amount
	Location5166403 Code = 5166403 // ... startDate is not a date
	Location5166405 Code = 5166405 // ... amount is not a whole number
	Location5166406 Code = 5166406 // ... overflows
	Location5439013 Code = 5439013 // unit is not a string
	Location5439015 Code = 5439015 // startOfWeek is not a string
	Location5439016 Code = 5439016 // startOfWeek is not a day
)

// Codes of $dateTrunc.
const (
	Location5439007 Code = 5439007 // the argument is not an object
	Location5439008 Code = 5439008 // an unknown argument
	Location5439009 Code = 5439009 // no date
	Location5439010 Code = 5439010 // no unit
	Location5439012 Code = 5439012 // date is not a date
	Location5439017 Code = 5439017 // binSize is not a whole number
	Location5439018 Code = 5439018 // binSize is not above 0
)

// Codes of $dateFromString.
const (
	Location40540 Code = 40540 // the argument is not an object
	Location40541 Code = 40541 // an unknown argument
	Location40542 Code = 40542 // no dateString
	Location40684 Code = 40684 // format is not a string
)

// Codes of $dateToParts and $dateFromParts.
const (
	Location31034 Code = 31034 // a part outside [-32768, 32767]
	Location40489 Code = 40489 // natural and ISO parts mixed
	Location40515 Code = 40515 // a part is not a whole number
	Location40516 Code = 40516 // neither year nor isoWeekYear
	Location40518 Code = 40518 // $dateFromParts: an unknown argument
	Location40519 Code = 40519 // $dateFromParts: the argument is not an object
	Location40520 Code = 40520 // $dateToParts: an unknown argument
	Location40521 Code = 40521 // iso8601 is not a bool
	Location40522 Code = 40522 // $dateToParts: no date
	Location40523 Code = 40523 // the year outside 1 to 9999
	Location40524 Code = 40524 // $dateToParts: the argument is not an object
	Location40525 Code = 40525 // ISO and natural parts mixed
)
