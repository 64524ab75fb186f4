"""The later expression operators and accumulators through pymongo:
$getField/$setField/$unsetField, $sortArray, $zip, $rand, $bsonSize,
$binarySize, $tsSecond/$tsIncrement, the array forms of
$firstN/$lastN/$minN/$maxN/$median/$percentile, the trigonometric and
bitwise operators, and the $group/$setWindowFields accumulators $top,
$bottom, $topN, $bottomN, $firstN, $lastN, $minN, $maxN, $median,
$percentile, $concatArrays and $setUnion. Results are checked against
MongoDB's documented semantics (null and missing, numeric types, order),
errors against its codes."""

import math

import bson
import pytest
from bson import Binary, Decimal128, Int64, Timestamp
from pymongo.errors import OperationFailure

MISSING = object()


def value(coll, expression, doc=None):
    """The expression's value over one document; MISSING when it is."""
    coll.delete_many({})
    coll.insert_one(doc or {"_id": 1})
    out = list(coll.aggregate([{"$project": {"_id": 0, "v": expression}}]))[0]
    return out.get("v", MISSING)


def fails(coll, expression, code, doc=None):
    coll.delete_many({})
    coll.insert_one(doc or {"_id": 1})
    with pytest.raises(OperationFailure) as e:
        list(coll.aggregate([{"$project": {"v": expression}}]))
    assert e.value.code == code, e.value.details


def group(coll, docs, spec, sort=True):
    coll.delete_many({})
    coll.insert_many(docs)
    pipeline = [{"$group": spec}] + ([{"$sort": {"_id": 1}}] if sort else [])
    return list(coll.aggregate(pipeline))


def group_fails(coll, spec, code):
    coll.delete_many({})
    coll.insert_one({"_id": 1, "v": 1})
    with pytest.raises(OperationFailure) as e:
        list(coll.aggregate([{"$group": dict({"_id": None}, x=spec)}]))
    assert e.value.code == code, e.value.details


# --- trigonometry and angles ---------------------------------------------

def test_trigonometry(db):
    c = db.trig
    assert value(c, {"$sin": 0}) == 0.0 and type(value(c, {"$sin": 0})) is float
    assert value(c, {"$cos": Int64(0)}) == 1.0
    assert math.isclose(value(c, {"$tan": math.pi / 4}), 1.0)
    assert math.isclose(value(c, {"$asin": 1}), math.pi / 2)
    assert value(c, {"$acos": 1}) == 0.0
    assert math.isclose(value(c, {"$atan": 1}), math.pi / 4)
    assert math.isclose(value(c, {"$atan2": [1, -1]}), 3 * math.pi / 4)
    assert math.isclose(value(c, {"$sinh": 1}), math.sinh(1))
    assert math.isclose(value(c, {"$cosh": 1}), math.cosh(1))
    assert math.isclose(value(c, {"$tanh": 1}), math.tanh(1))
    assert math.isclose(value(c, {"$asinh": 1}), math.asinh(1))
    assert value(c, {"$acosh": 1}) == 0.0
    assert math.isclose(value(c, {"$atanh": 0.5}), math.atanh(0.5))
    assert value(c, {"$atanh": 1}) == math.inf
    assert math.isnan(value(c, {"$sin": math.nan}))
    assert value(c, {"$atan": math.inf}) == pytest.approx(math.pi / 2)
    for op in ("$sin", "$acos", "$atanh", "$degreesToRadians"):
        assert value(c, {op: "$missing"}) is None
        assert value(c, {op: None}) is None
    assert value(c, {"$atan2": [None, "not even a number"]}) is None


def test_trigonometry_errors(db):
    c = db.trig
    fails(c, {"$sin": "x"}, 28765)
    fails(c, {"$sin": math.inf}, 50989)
    fails(c, {"$cos": -math.inf}, 50989)
    fails(c, {"$asin": 1.5}, 50989)
    fails(c, {"$acos": -2}, 50989)
    fails(c, {"$acosh": 0.5}, 50989)
    fails(c, {"$atanh": 2}, 50989)
    fails(c, {"$atan2": ["x", 1]}, 51044)
    fails(c, {"$atan2": [1, "x"]}, 51045)
    fails(c, {"$atan2": ["x", None]}, 51044)  # checked in order: the first fails before the null
    fails(c, {"$atan2": [1]}, 16020)
    fails(c, {"$sin": [1, 2]}, 16020)
    # tierdb has no decimal transcendental functions: refused, never rounded.
    fails(c, {"$sin": Decimal128("1")}, 238)


def test_angle_conversions(db):
    c = db.trig
    assert value(c, {"$degreesToRadians": 180}) == pytest.approx(math.pi)
    assert value(c, {"$radiansToDegrees": math.pi}) == pytest.approx(180.0)
    assert type(value(c, {"$degreesToRadians": 90})) is float
    got = value(c, {"$degreesToRadians": Decimal128("180")})
    assert isinstance(got, Decimal128) and str(got).startswith("3.14159265358979323846264338327950")
    got = value(c, {"$radiansToDegrees": Decimal128("1")})
    assert isinstance(got, Decimal128) and str(got).startswith("57.295779513082320876798154814105")
    fails(c, {"$radiansToDegrees": "x"}, 28765)


# --- bitwise ----------------------------------------------------------------

def test_bitwise(db):
    c = db.bits
    got = value(c, {"$bitAnd": [12, 10]})
    assert got == 8 and type(got) is int
    got = value(c, {"$bitOr": [12, Int64(3)]})
    assert got == 15 and isinstance(got, Int64)
    assert value(c, {"$bitXor": [12, 10, 1]}) == 7
    assert value(c, {"$bitAnd": []}) == -1 and value(c, {"$bitOr": []}) == 0
    assert value(c, {"$bitNot": 5}) == -6
    assert value(c, {"$bitNot": Int64(0)}) == -1 and isinstance(value(c, {"$bitNot": Int64(0)}), Int64)
    assert value(c, {"$bitAnd": [1, None]}) is None
    assert value(c, {"$bitOr": [1, "$missing"]}) is None
    assert value(c, {"$bitNot": "$missing"}) is None
    fails(c, {"$bitAnd": [1, 1.0]}, 14)
    fails(c, {"$bitOr": ["a"]}, 14)
    fails(c, {"$bitNot": 2.5}, 14)
    fails(c, {"$bitNot": "x"}, 28765)  # a non-number, as for $abs
    fails(c, {"$bitNot": [1, 2]}, 16020)


# --- fields -----------------------------------------------------------------

def test_get_field(db):
    c = db.fields
    doc = {"_id": 1, "a.b": 1, "a": {"b": 2}, "k": "a.b", "n": None}
    assert value(c, {"$getField": "a.b"}, doc) == 1
    priced = {"$setField": {"field": {"$literal": "$price"}, "input": {}, "value": 9}}
    assert value(c, {"$getField": {"field": {"$literal": "$price"}, "input": priced}}, doc) == 9
    assert value(c, {"$getField": "$k"}, doc) == 1  # field is any expression (7.2+)
    assert value(c, {"$getField": {"field": "b", "input": "$a"}}, doc) == 2
    assert value(c, {"$getField": {"field": "q", "input": "$a"}}, doc) is MISSING
    assert value(c, {"$getField": {"field": "b", "input": "$nope"}}, doc) is None
    assert value(c, {"$getField": {"field": "b", "input": "$n"}}, doc) is None
    assert value(c, {"$getField": "n"}, doc) is None
    fails(c, {"$getField": {"field": "a", "bogus": 1}}, 3041701)
    fails(c, {"$getField": {"input": "$$ROOT"}}, 3041702)
    fails(c, {"$getField": {"field": "a"}}, 3041703)
    fails(c, {"$getField": 5}, 3041704)
    fails(c, {"$getField": "$nope"}, 3041704)
    fails(c, {"$getField": {"field": "a", "input": 5}}, 3041705)


def test_set_and_unset_field(db):
    c = db.fields
    doc = {"_id": 1, "a": 1, "b": {"x": 1}, "n": None}
    got = value(c, {"$setField": {"field": "c.d", "input": "$$ROOT", "value": 5}}, doc)
    assert list(got.items()) == [("_id", 1), ("a", 1), ("b", {"x": 1}), ("n", None), ("c.d", 5)]
    got = value(c, {"$setField": {"field": "a", "input": "$$ROOT", "value": "z"}}, doc)
    assert list(got) == ["_id", "a", "b", "n"] and got["a"] == "z"
    got = value(c, {"$setField": {"field": {"$literal": "$d"}, "input": "$b", "value": "$a"}}, doc)
    assert got == {"x": 1, "$d": 1}
    got = value(c, {"$setField": {"field": "x", "input": "$b", "value": "$$REMOVE"}}, doc)
    assert got == {}
    got = value(c, {"$unsetField": {"field": "a", "input": "$$ROOT"}}, doc)
    assert got == {"_id": 1, "b": {"x": 1}, "n": None}
    assert value(c, {"$setField": {"field": "a", "input": "$n", "value": 1}}, doc) is None
    assert value(c, {"$unsetField": {"field": "a", "input": "$nope"}}, doc) is None
    fails(c, {"$setField": 1}, 4161100)
    fails(c, {"$setField": {"field": "a", "input": {}, "value": 1, "x": 1}}, 4161101)
    fails(c, {"$unsetField": {"field": "a", "input": {}, "value": 1}}, 4161101)
    fails(c, {"$setField": {"input": {}, "value": 1}}, 4161102)
    fails(c, {"$setField": {"field": "a", "input": {}}}, 4161103)
    fails(c, {"$setField": {"field": "a", "input": 5, "value": 1}}, 4161105)
    fails(c, {"$setField": {"field": {"$toUpper": "$a"}, "input": {}, "value": 1}}, 4161106)
    fails(c, {"$setField": {"field": 3, "input": {}, "value": 1}}, 4161107)
    fails(c, {"$setField": {"field": "$a", "input": {}, "value": 1}}, 4161108)
    fails(c, {"$setField": {"field": "a", "value": 1}}, 4161109)


# --- arrays -----------------------------------------------------------------

def test_sort_array(db):
    c = db.arrays
    doc = {"_id": 1, "a": [3, None, "s", 1, 2.5, [0]],
           "team": [{"n": "b", "age": 30}, {"n": "a", "age": 25}, 7, {"n": "c", "age": 30}]}
    assert value(c, {"$sortArray": {"input": "$a", "sortBy": 1}}, doc) == [None, 1, 2.5, 3, "s", [0]]
    assert value(c, {"$sortArray": {"input": "$a", "sortBy": -1}}, doc) == [[0], "s", 3, 2.5, 1, None]
    got = value(c, {"$sortArray": {"input": "$team", "sortBy": {"age": -1, "n": 1}}}, doc)
    assert got == [{"n": "b", "age": 30}, {"n": "c", "age": 30}, {"n": "a", "age": 25}, 7]
    assert value(c, {"$sortArray": {"input": "$nope", "sortBy": 1}}, doc) is None
    fails(c, {"$sortArray": [1]}, 2942500)
    fails(c, {"$sortArray": {"input": [], "sortBy": 1, "x": 1}}, 2942501)
    fails(c, {"$sortArray": {"sortBy": 1}}, 2942502)
    fails(c, {"$sortArray": {"input": []}}, 2942503)
    fails(c, {"$sortArray": {"input": "str", "sortBy": 1}}, 2942504)
    fails(c, {"$sortArray": {"input": [], "sortBy": 0}}, 2942506)


def test_zip(db):
    c = db.arrays
    doc = {"_id": 1, "a": [1, 2, 3], "b": ["x", "y"]}
    assert value(c, {"$zip": {"inputs": ["$a", "$b"]}}, doc) == [[1, "x"], [2, "y"]]
    assert value(c, {"$zip": {"inputs": ["$a", "$b"], "useLongestLength": True}}, doc) == \
        [[1, "x"], [2, "y"], [3, None]]
    assert value(c, {"$zip": {"inputs": ["$a", "$b"], "useLongestLength": True, "defaults": [0, "z"]}}, doc) == \
        [[1, "x"], [2, "y"], [3, "z"]]
    assert value(c, {"$zip": {"inputs": ["$a", "$nope"]}}, doc) is None
    assert value(c, {"$zip": {"inputs": [[]]}}, doc) == []
    fails(c, {"$zip": 1}, 34460)
    fails(c, {"$zip": {"inputs": 1}}, 34461)
    fails(c, {"$zip": {"inputs": ["$a"], "defaults": 1}}, 34462)
    fails(c, {"$zip": {"inputs": ["$a"], "useLongestLength": 1}}, 34463)
    fails(c, {"$zip": {"inputs": ["$a"], "x": 1}}, 34464)
    fails(c, {"$zip": {}}, 34465)
    fails(c, {"$zip": {"inputs": ["$a"], "defaults": [1]}}, 34466)
    fails(c, {"$zip": {"inputs": ["$a"], "useLongestLength": True, "defaults": [1, 2]}}, 34467)
    assert value(c, {"$zip": {"inputs": [[1]], "defaults": []}}, doc) == [[1]]  # empty defaults: none
    fails(c, {"$zip": {"inputs": ["$a", 5]}}, 34468, doc)


def test_n_expressions(db):
    c = db.arrays
    doc = {"_id": 1, "a": [3, None, 1, 5, 1.0, "z"]}
    assert value(c, {"$firstN": {"n": 2, "input": "$a"}}, doc) == [3, None]
    assert value(c, {"$lastN": {"n": Int64(2), "input": "$a"}}, doc) == [1.0, "z"]
    assert value(c, {"$firstN": {"n": 10, "input": [1, 2]}}, doc) == [1, 2]
    assert value(c, {"$maxN": {"n": 2.0, "input": "$a"}}, doc) == ["z", 5]
    got = value(c, {"$minN": {"n": 3, "input": "$a"}}, doc)
    assert got == [1, 1, 3] and [type(x) for x in got] == [int, float, int]
    assert value(c, {"$minN": {"n": 3, "input": [None, "$nope"]}}, doc) == []
    fails(c, {"$firstN": 1}, 5787801)
    fails(c, {"$maxN": 1}, 5787900)
    fails(c, {"$lastN": {"n": 1, "input": [], "x": 1}}, 5787901)
    fails(c, {"$lastN": {"input": []}}, 5787906)
    fails(c, {"$lastN": {"n": 1}}, 5787907)
    fails(c, {"$minN": {"n": "2", "input": []}}, 5787902)
    fails(c, {"$minN": {"n": 1.5, "input": []}}, 5787903)
    fails(c, {"$minN": {"n": 0, "input": []}}, 5787908)
    fails(c, {"$firstN": {"n": 1, "input": "$nope"}}, 5788200)
    fails(c, {"$firstN": {"n": 1, "input": 5}}, 5788200)


def test_median_and_percentile_expressions(db):
    c = db.arrays
    doc = {"_id": 1, "a": [10, 1, "x", 7, 3, Int64(5)], "s": 4}
    assert value(c, {"$median": {"input": "$a", "method": "approximate"}}, doc) == 5.0
    assert value(c, {"$percentile": {"input": "$a", "p": [0, 0.2, 0.5, 0.95, 1], "method": "approximate"}}, doc) == \
        [1.0, 1.0, 5.0, 10.0, 10.0]
    assert value(c, {"$median": {"input": "$s", "method": "approximate"}}, doc) == 4.0
    assert value(c, {"$median": {"input": "$nope", "method": "approximate"}}, doc) is None
    assert value(c, {"$percentile": {"input": ["x"], "p": [0.5, 0.9], "method": "approximate"}}, doc) == [None, None]
    # NaNs are not samples (MongoDB's discrete percentile drops them)
    assert value(c, {"$median": {"input": [math.nan, 1, 2, 3], "method": "approximate"}}, doc) == 2.0
    fails(c, {"$median": 1}, 7436201)
    fails(c, {"$percentile": 1}, 7436200)
    fails(c, {"$median": {"input": "$a"}}, 40414)
    fails(c, {"$median": {"input": "$a", "method": "approximate", "x": 1}}, 40415)
    fails(c, {"$median": {"input": "$a", "method": "nearest"}}, 2)
    fails(c, {"$percentile": {"input": "$a", "p": "$a", "method": "approximate"}}, 7750300)
    fails(c, {"$percentile": {"input": "$a", "p": [], "method": "approximate"}}, 7750301)
    fails(c, {"$percentile": {"input": "$a", "p": ["x"], "method": "approximate"}}, 7750302)
    fails(c, {"$percentile": {"input": "$a", "p": [1.5], "method": "approximate"}}, 7750303)


# --- misc -------------------------------------------------------------------

def test_sizes_timestamps_and_rand(db):
    c = db.misc
    doc = {"_id": 1, "d": {"a": 1}, "s": "héllo", "b": Binary(b"\x01\x02\x03"), "t": Timestamp(1700000000, 42)}
    assert value(c, {"$bsonSize": "$d"}, doc) == len(bson.encode({"a": 1}))
    assert value(c, {"$bsonSize": "$$ROOT"}, doc) == len(bson.encode(doc))
    assert value(c, {"$binarySize": "$s"}, doc) == 6
    assert value(c, {"$binarySize": "$b"}, doc) == 3
    got = value(c, {"$tsSecond": "$t"}, doc)
    assert got == 1700000000 and isinstance(got, Int64)
    got = value(c, {"$tsIncrement": "$t"}, doc)
    assert got == 42 and isinstance(got, Int64)
    for op in ("$bsonSize", "$binarySize", "$tsSecond", "$tsIncrement"):
        assert value(c, {op: "$nope"}, doc) is None
    fails(c, {"$bsonSize": "x"}, 31393)
    fails(c, {"$binarySize": 1}, 51276)
    fails(c, {"$tsSecond": 1}, 5687301)
    fails(c, {"$tsIncrement": "x"}, 5687302)
    fails(c, {"$rand": {"a": 1}}, 3040501)
    fails(c, {"$rand": [1]}, 3040501)
    fails(c, {"$rand": "x"}, 10065)
    assert 0 <= value(c, {"$rand": []}) < 1
    c.delete_many({})
    c.insert_many([{"_id": i} for i in range(20)])
    rands = [d["r"] for d in c.aggregate([{"$project": {"r": {"$rand": {}}}}])]
    assert all(type(r) is float and 0 <= r < 1 for r in rands)
    assert len(set(rands)) > 1


def test_still_refused(db):
    c = db.misc
    for expression in ({"$function": {"body": "x", "args": [], "lang": "js"}},
                       {"$toHashedIndexKey": "$a"}):
        fails(c, expression, 238)
    group_fails(c, {"$accumulator": {}}, 238)


# --- accumulators -------------------------------------------------------------

DOCS = [
    {"_id": 1, "g": "a", "v": 5, "t": 3, "arr": [1, 2]},
    {"_id": 2, "g": "a", "v": None, "t": 1, "arr": [2]},
    {"_id": 3, "g": "b", "v": 7, "t": 2, "arr": []},
    {"_id": 4, "g": "a", "v": 1, "t": 3, "arr": [3, 1]},
    {"_id": 5, "g": "a", "t": 2},
    {"_id": 6, "g": "b", "v": "x", "t": 9, "arr": [7]},
]


def test_group_n_accumulators(db):
    got = group(db.acc, DOCS, {
        "_id": "$g",
        "f": {"$firstN": {"n": 3, "input": "$v"}},
        "l": {"$lastN": {"n": 2, "input": "$v"}},
        "mn": {"$minN": {"n": 2, "input": "$v"}},
        "mx": {"$maxN": {"n": 5, "input": "$v"}},
        "byKey": {"$firstN": {"n": {"$cond": [{"$eq": ["$_id", "a"]}, 1, 2]}, "input": "$_id"}},
    })
    assert got == [
        {"_id": "a", "f": [5, None, 1], "l": [1, None], "mn": [1, 5], "mx": [5, 1], "byKey": [1]},
        {"_id": "b", "f": [7, "x"], "l": [7, "x"], "mn": [7, "x"], "mx": ["x", 7], "byKey": [3, 6]},
    ]


def test_group_top_bottom(db):
    got = group(db.acc, DOCS, {
        "_id": "$g",
        "top": {"$top": {"sortBy": {"t": -1}, "output": "$_id"}},
        "bottom": {"$bottom": {"sortBy": {"t": -1}, "output": ["$_id", "$v"]}},
        "topN": {"$topN": {"n": 3, "sortBy": {"t": 1, "_id": -1}, "output": "$_id"}},
        "bottomN": {"$bottomN": {"n": 2, "sortBy": {"t": 1}, "output": {"id": "$_id"}}},
    })
    assert got == [
        {"_id": "a", "top": 1, "bottom": [2, None], "topN": [2, 5, 4], "bottomN": [{"id": 1}, {"id": 4}]},
        {"_id": "b", "top": 6, "bottom": [3, 7], "topN": [3, 6], "bottomN": [{"id": 3}, {"id": 6}]},
    ]


def test_group_median_percentile_arrays(db):
    got = group(db.acc, DOCS, {
        "_id": "$g",
        "m": {"$median": {"input": "$v", "method": "approximate"}},
        "p": {"$percentile": {"input": "$t", "p": [0, 0.5, 1], "method": "approximate"}},
        "none": {"$median": {"input": "$nope", "method": "approximate"}},
        "c": {"$concatArrays": "$arr"},
        "u": {"$setUnion": "$arr"},
    })
    assert got[0] == {"_id": "a", "m": 1.0, "p": [1.0, 2.0, 3.0], "none": None, "c": [1, 2, 2, 3, 1],
                      "u": got[0]["u"]}
    assert sorted(got[0]["u"]) == [1, 2, 3]
    assert got[1] == {"_id": "b", "m": 7.0, "p": [2.0, 2.0, 9.0], "none": None, "c": [7], "u": [7]}


def test_group_accumulator_errors(db):
    c = db.acc
    group_fails(c, {"$firstN": 5}, 5787801)
    group_fails(c, {"$minN": 5}, 5787900)
    group_fails(c, {"$firstN": {"n": 1, "input": "$v", "x": 1}}, 5787901)
    group_fails(c, {"$firstN": {"input": "$v"}}, 5787906)
    group_fails(c, {"$lastN": {"n": 1}}, 5787907)
    group_fails(c, {"$maxN": {"n": "$v", "input": "$v"}}, 5787902)  # $v is missing in {_id: null}
    group_fails(c, {"$maxN": {"n": 0.5, "input": "$v"}}, 5787903)
    group_fails(c, {"$maxN": {"n": -1, "input": "$v"}}, 5787908)
    group_fails(c, {"$top": 1}, 5788001)
    group_fails(c, {"$top": {"n": 1, "sortBy": {"t": 1}, "output": "$v"}}, 5788002)
    group_fails(c, {"$topN": {"sortBy": {"t": 1}, "output": "$v"}}, 5788003)
    group_fails(c, {"$bottom": {"sortBy": {"t": 1}}}, 5788004)
    group_fails(c, {"$bottomN": {"n": 1, "output": "$v"}}, 5788005)
    group_fails(c, {"$top": {"sortBy": {"t": 2}, "output": "$v"}}, 15975)
    group_fails(c, {"$median": 1}, 7436100)
    group_fails(c, {"$percentile": 1}, 7429703)
    group_fails(c, {"$percentile": {"input": "$v", "method": "approximate"}}, 40414)
    group_fails(c, {"$percentile": {"input": "$v", "p": [2], "method": "approximate"}}, 7750303)
    group_fails(c, {"$concatArrays": "$v"}, 14)
    group_fails(c, {"$setUnion": "$v"}, 14)


def test_window_functions(db):
    c = db.acc
    c.delete_many({})
    c.insert_many(DOCS)
    got = list(c.aggregate([
        {"$match": {"g": "a"}},
        {"$setWindowFields": {"sortBy": {"_id": 1}, "output": {
            "last2": {"$lastN": {"n": 2, "input": "$_id"}, "window": {"documents": ["unbounded", "current"]}},
            "top": {"$top": {"sortBy": {"t": 1}, "output": "$_id"}, "window": {"documents": [-1, 1]}},
            "maxN": {"$maxN": {"n": 2, "input": "$t"}},
            "med": {"$median": {"input": "$v", "method": "approximate"}},
            "cat": {"$concatArrays": "$arr", "window": {"documents": [0, 1]}},
        }}},
        {"$project": {"last2": 1, "top": 1, "maxN": 1, "med": 1, "cat": 1}},
    ]))
    assert got == [
        {"_id": 1, "last2": [1], "top": 2, "maxN": [3, 3], "med": 1.0, "cat": [1, 2, 2]},
        {"_id": 2, "last2": [1, 2], "top": 2, "maxN": [3, 3], "med": 1.0, "cat": [2, 3, 1]},
        {"_id": 4, "last2": [2, 4], "top": 2, "maxN": [3, 3], "med": 1.0, "cat": [3, 1]},
        {"_id": 5, "last2": [4, 5], "top": 5, "maxN": [3, 3], "med": 1.0, "cat": []},
    ]
