package mongoerr

// Codes of MongoDB's checks on the arguments of $skip, $limit, $count and
// $sort (document_source_{skip,limit,count,sort}.cpp, sort_pattern.cpp).
const (
	Location15957   Code = 15957 // $limit is not a number
	Location15958   Code = 15958 // $limit is 0
	Location15972   Code = 15972 // $skip is not a number
	Location5107200 Code = 5107200
	Location5107201 Code = 5107201
	Location40156   Code = 40156 // $count's field is not a string
	Location40157   Code = 40157 // ... is empty
	Location40158   Code = 40158 // ... starts with '$'
	Location40160   Code = 40160 // ... contains '.'
	Location15973   Code = 15973 // $sort's argument is not a document
	Location15974   Code = 15974 // a $sort key's order is not a number or $meta
	Location15975   Code = 15975 // ... is a number other than 1 or -1
	Location15976   Code = 15976 // $sort has no key
)
