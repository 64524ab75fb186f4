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
