"""Aggregation stages and expressions through pymongo, results checked
against MongoDB's documented semantics: missing vs null, BSON type order,
numeric types preserved, error codes."""

import datetime

import pytest
from bson import Decimal128, Int64, ObjectId
from pymongo.errors import OperationFailure


def codes(excinfo):
    return excinfo.value.code


def agg(coll, pipeline, **kw):
    return list(coll.aggregate(pipeline, **kw))


def one(coll, expression, doc=None):
    """Evaluates an expression over one document (default {_id: 1})."""
    coll.delete_many({})
    coll.insert_one(doc or {"_id": 1})
    return agg(coll, [{"$project": {"_id": 0, "v": expression}}])[0].get("v", "MISSING")


def fails(coll, expression, code, doc=None):
    coll.delete_many({})
    coll.insert_one(doc or {"_id": 1})
    with pytest.raises(OperationFailure) as e:
        agg(coll, [{"$project": {"v": expression}}])
    assert e.value.code == code, e.value.details


# --- expressions -----------------------------------------------------------

def test_arithmetic_keeps_numeric_types(db):
    c = db.e
    assert one(c, {"$add": [1, 2]}) == 3 and type(one(c, {"$add": [1, 2]})) is int
    big = one(c, {"$add": [2147483647, 1]})
    assert big == 2147483648  # int32 overflows into int64
    assert isinstance(one(c, {"$add": [Int64(1), 1]}), Int64)
    assert one(c, {"$add": [Int64(9223372036854775807), 1]}) == pytest.approx(9.223372036854776e18)
    assert isinstance(one(c, {"$add": [Int64(9223372036854775807), 1]}), float)
    assert one(c, {"$add": [1, 2.5]}) == 3.5
    assert one(c, {"$add": [Decimal128("0.1"), Decimal128("0.2")]}) == Decimal128("0.3")
    assert one(c, {"$multiply": [3, Decimal128("1.5")]}) == Decimal128("4.5")
    assert one(c, {"$subtract": [10, 4]}) == 6
    assert one(c, {"$divide": [9, 3]}) == 3.0 and isinstance(one(c, {"$divide": [9, 3]}), float)
    assert one(c, {"$divide": [Decimal128("1"), 4]}) == Decimal128("0.25")
    assert one(c, {"$mod": [7, 3]}) == 1
    assert one(c, {"$mod": [-7.5, 2]}) == -1.5
    assert one(c, {"$abs": -5}) == 5
    assert one(c, {"$ceil": 1.2}) == 2.0 and one(c, {"$floor": -1.2}) == -2.0
    assert one(c, {"$round": [2.5, 0]}) == 2.0 and one(c, {"$round": [3.5]}) == 4.0
    assert one(c, {"$round": [1234, -2]}) == 1200
    assert one(c, {"$trunc": [Decimal128("1.289"), 2]}) == Decimal128("1.28")
    assert one(c, {"$pow": [2, 10]}) == 1024 and type(one(c, {"$pow": [2, 10]})) is int
    assert one(c, {"$sqrt": 16}) == 4.0
    assert one(c, {"$log10": 1000}) == pytest.approx(3.0)
    assert one(c, {"$add": [1, None]}) is None
    assert one(c, {"$add": [1, "$nothere"]}) is None


def test_date_arithmetic(db):
    c = db.e
    d = datetime.datetime(2024, 3, 1, 12, 0)
    assert one(c, {"$add": ["$d", 60000]}, {"_id": 1, "d": d}) == d + datetime.timedelta(minutes=1)
    assert one(c, {"$subtract": ["$d", "$e"]}, {"_id": 1, "d": d, "e": d - datetime.timedelta(seconds=5)}) == 5000
    fails(c, {"$add": ["$d", "$d"]}, 16612, {"_id": 1, "d": d})


def test_arithmetic_errors(db):
    c = db.e
    fails(c, {"$divide": [1, 0]}, 2)
    fails(c, {"$mod": [1, 0]}, 16610)
    fails(c, {"$add": [1, "a"]}, 14)
    fails(c, {"$multiply": ["a", 2]}, 14)
    fails(c, {"$subtract": ["a", 1]}, 14)
    fails(c, {"$sqrt": -1}, 28714)
    fails(c, {"$abs": "x"}, 28765)
    fails(c, {"$subtract": [1]}, 16020)
    fails(c, {"$frobnicate": 1}, 168)


def test_comparison_uses_bson_order(db):
    c = db.e
    assert one(c, {"$lt": [1, "a"]}) is True  # numbers before strings
    assert one(c, {"$gt": [{"a": 1}, "zzz"]}) is True  # objects after strings
    assert one(c, {"$eq": [1, 1.0]}) is True
    assert one(c, {"$eq": [Decimal128("1"), Int64(1)]}) is True
    assert one(c, {"$cmp": ["a", "b"]}) == -1
    assert one(c, {"$eq": ["$missing", None]}) is False  # missing is not null
    assert one(c, {"$lt": ["$missing", None]}) is True
    assert one(c, {"$ne": [None, False]}) is True


def test_boolean_and_conditional(db):
    c = db.e
    assert one(c, {"$and": [1, "x", True]}) is True
    assert one(c, {"$and": [1, 0]}) is False
    assert one(c, {"$or": [None, "$missing", 0]}) is False
    assert one(c, {"$not": [[]]}) is False  # an array is truthy
    assert one(c, {"$cond": [{"$gt": [2, 1]}, "yes", "no"]}) == "yes"
    assert one(c, {"$cond": {"if": None, "then": "yes", "else": "no"}}) == "no"
    assert one(c, {"$ifNull": ["$missing", None, "fallback"]}) == "fallback"
    assert one(c, {"$switch": {"branches": [{"case": False, "then": 1}, {"case": True, "then": 2}]}}) == 2
    fails(c, {"$switch": {"branches": [{"case": False, "then": 1}]}}, 40066)
    fails(c, {"$cond": {"if": True, "then": 1}}, 17082)
    # $cond does not evaluate the branch it does not take.
    assert one(c, {"$cond": [True, 1, {"$divide": [1, 0]}]}) == 1


def test_string_operators(db):
    c = db.e
    assert one(c, {"$concat": ["a", "b", "c"]}) == "abc"
    assert one(c, {"$concat": ["a", None]}) is None
    fails(c, {"$concat": ["a", 1]}, 16702)
    assert one(c, {"$substr": ["hello", 1, 3]}) == "ell"
    assert one(c, {"$substrCP": ["héllo", 1, 2]}) == "él"
    fails(c, {"$substrBytes": ["héllo", 2, 1]}, 28656)
    assert one(c, {"$toUpper": "abc"}) == "ABC" and one(c, {"$toLower": 12}) == "12"
    assert one(c, {"$toLower": None}) == ""
    assert one(c, {"$strLenBytes": "héllo"}) == 6 and one(c, {"$strLenCP": "héllo"}) == 5
    assert one(c, {"$split": ["a,b,,c", ","]}) == ["a", "b", "", "c"]
    assert one(c, {"$trim": {"input": "  x  "}}) == "x"
    assert one(c, {"$ltrim": {"input": "xxyxx", "chars": "x"}}) == "yxx"
    assert one(c, {"$indexOfBytes": ["cafeteria", "e"]}) == 3
    assert one(c, {"$indexOfCP": ["café au lait", "au"]}) == 5
    assert one(c, {"$regexMatch": {"input": "Tierdb", "regex": "^tier", "options": "i"}}) is True
    assert one(c, {"$regexFind": {"input": "né 42 ab7", "regex": "([a-z])(\\d)?(x)?$"}}) == {"match": "b7", "idx": 7, "captures": ["b", "7", None]}
    assert one(c, {"$regexFind": {"input": "abc", "regex": "z"}}) is None
    assert one(c, {"$regexFind": {"input": None, "regex": "z"}}) is None
    assert one(c, {"$regexFindAll": {"input": "a1b22", "regex": "\\d+"}}) == [
        {"match": "1", "idx": 1, "captures": []}, {"match": "22", "idx": 3, "captures": []}]
    assert one(c, {"$regexFindAll": {"input": "$missing", "regex": "a"}}) == []
    assert one(c, {"$replaceOne": {"input": "a.b.c", "find": ".", "replacement": "-"}}) == "a-b.c"
    assert one(c, {"$replaceAll": {"input": "a.b.c", "find": ".", "replacement": "-"}}) == "a-b-c"
    assert one(c, {"$replaceAll": {"input": "abc", "find": None, "replacement": "-"}}) is None
    fails(c, {"$replaceAll": {"input": "abc", "find": 1, "replacement": "-"}}, 51745)
    fails(c, {"$replaceOne": {"input": "abc", "find": "a"}}, 51747)
    assert one(c, {"$strcasecmp": ["ABC", "abc"]}) == 0
    fails(c, {"$strLenCP": 1}, 34471)


def test_array_operators(db):
    c = db.e
    doc = {"_id": 1, "a": [1, 2, 3, 4], "o": [{"x": 1}, {"x": 2}, {"y": 3}, 7]}
    assert one(c, {"$size": "$a"}, doc) == 4
    fails(c, {"$size": "$missing"}, 17124, doc)
    assert one(c, {"$arrayElemAt": ["$a", -1]}, doc) == 4
    assert one(c, {"$arrayElemAt": ["$a", 10]}, doc) == "MISSING"
    assert one(c, {"$first": "$a"}, doc) == 1 and one(c, {"$last": "$a"}, doc) == 4
    assert one(c, {"$in": [2, "$a"]}, doc) is True
    fails(c, {"$in": [2, "$missing"]}, 40081, doc)
    assert one(c, {"$filter": {"input": "$a", "as": "n", "cond": {"$gt": ["$$n", 2]}}}, doc) == [3, 4]
    assert one(c, {"$map": {"input": "$a", "in": {"$multiply": ["$$this", 10]}}}, doc) == [10, 20, 30, 40]
    assert one(c, {"$reduce": {"input": "$a", "initialValue": 0, "in": {"$add": ["$$value", "$$this"]}}}, doc) == 10
    assert one(c, {"$concatArrays": ["$a", [5]]}, doc) == [1, 2, 3, 4, 5]
    assert one(c, {"$slice": ["$a", -2]}, doc) == [3, 4]
    assert one(c, {"$slice": ["$a", 1, 2]}, doc) == [2, 3]
    assert one(c, {"$isArray": "$a"}, doc) is True
    assert one(c, {"$reverseArray": "$a"}, doc) == [4, 3, 2, 1]
    assert one(c, {"$range": [0, 10, 3]}, doc) == [0, 3, 6, 9]
    assert one(c, {"$indexOfArray": ["$a", 3]}, doc) == 2
    # A path through an array collects the field from each document element.
    assert one(c, "$o.x", doc) == [1, 2]


def test_set_operators(db):
    c = db.e
    doc = {"_id": 1, "a": [1, 2, 3, 2], "b": [3, 4.0, 1]}
    # Sets of distinct values, equal as $eq compares (1 and 1.0 are one);
    # $setUnion and $setIntersection in BSON order, as MongoDB returns them.
    assert one(c, {"$setUnion": ["$a", "$b"]}, doc) == [1, 2, 3, 4.0]
    assert one(c, {"$setIntersection": ["$a", "$b"]}, doc) == [1, 3]
    assert one(c, {"$setIntersection": []}, doc) == []
    assert one(c, {"$setDifference": ["$a", "$b"]}, doc) == [2]
    assert one(c, {"$setEquals": ["$a", [3, 2, 1.0]]}, doc) is True
    assert one(c, {"$setEquals": ["$a", "$b"]}, doc) is False
    assert one(c, {"$setIsSubset": [[2, 2], "$a"]}, doc) is True
    assert one(c, {"$anyElementTrue": [[0, None, "x"]]}, doc) is True
    assert one(c, {"$allElementsTrue": [[1, 0]]}, doc) is False
    assert one(c, {"$allElementsTrue": [[]]}, doc) is True
    # A null or missing operand gives null where MongoDB allows it, else an error.
    assert one(c, {"$setUnion": ["$a", "$missing"]}, doc) is None
    assert one(c, {"$setDifference": [None, "$a"]}, doc) is None
    fails(c, {"$setUnion": ["$a", 1]}, 17043, doc)
    fails(c, {"$setIntersection": ["x"]}, 17047, doc)
    fails(c, {"$setDifference": ["$a", 1]}, 17049, doc)
    fails(c, {"$setEquals": ["$a"]}, 17045, doc)
    fails(c, {"$setEquals": ["$a", None]}, 17044, doc)
    fails(c, {"$setIsSubset": ["$missing", "$a"]}, 17046, doc)
    fails(c, {"$anyElementTrue": ["$missing"]}, 17041, doc)
    fails(c, {"$allElementsTrue": [5]}, 17040, doc)


def test_known_operators_tierdb_lacks_are_not_implemented(db):
    c = db.e
    for op in ({"$function": {"body": "x", "args": [], "lang": "js"}}, {"$toHashedIndexKey": "$a"},
               {"$toUUID": "$a"}, {"$createObjectId": {}}, {"$meta": "searchScore"},
               {"$meta": "indexKey"}):
        fails(c, op, 238)
    # textScore without a $text query is MongoDB's 40218; an unknown keyword 17308.
    fails(c, {"$meta": "textScore"}, 40218)
    fails(c, {"$meta": "bogus"}, 17308)
    fails(c, {"$frobnicate": 1}, 168)  # not MongoDB's either


def test_variables(db):
    c = db.e
    doc = {"_id": 1, "a": 2, "b": {"c": 3}}
    assert one(c, {"$let": {"vars": {"x": "$a", "y": 10}, "in": {"$add": ["$$x", "$$y"]}}}, doc) == 12
    assert one(c, "$$ROOT.b.c", doc) == 3
    assert one(c, "$$CURRENT.a", doc) == 2
    assert isinstance(one(c, "$$NOW", doc), datetime.datetime)
    fails(c, "$$nope", 17276, doc)
    # CURRENT is the one system variable $let may rebind: field paths follow it.
    rebound = {"$let": {"vars": {"CURRENT": "$b"}, "in": {"$add": ["$c", "$$ROOT.a"]}}}
    assert one(c, rebound, doc) == 5
    assert one(c, {"$add": [rebound, "$a"]}, doc) == 7  # the outer CURRENT again
    assert one(c, {"$let": {"vars": {"CURRENT": "$b"}, "in": "$$CURRENT"}}, doc) == {"c": 3}
    fails(c, {"$let": {"vars": {"ROOT": 1}, "in": 1}}, 9, doc)
    rows = agg(c, [{"$project": {"_id": 0, "v": {"$multiply": ["$a", "$$k"]}}}], let={"k": 21})
    assert rows == [{"v": 42}]


def test_accumulators_as_expressions(db):
    c = db.e
    doc = {"_id": 1, "a": [1, 2, Int64(3), "x", None]}
    assert one(c, {"$sum": "$a"}, doc) == 6 and isinstance(one(c, {"$sum": "$a"}, doc), Int64)
    assert one(c, {"$avg": "$a"}, doc) == 2.0
    assert one(c, {"$max": "$a"}, doc) == "x"  # strings sort after numbers
    assert one(c, {"$min": [5, None, 3]}, doc) == 3
    assert one(c, {"$stdDevPop": [2, 4]}, doc) == 1.0
    assert one(c, {"$sum": "$missing"}, doc) == 0


def test_date_operators(db):
    c = db.e
    d = datetime.datetime(2024, 2, 29, 13, 45, 30, 123000)
    doc = {"_id": 1, "d": d}
    assert one(c, {"$year": "$d"}, doc) == 2024
    assert one(c, {"$month": "$d"}, doc) == 2
    assert one(c, {"$dayOfMonth": "$d"}, doc) == 29
    assert one(c, {"$hour": "$d"}, doc) == 13
    assert one(c, {"$minute": "$d"}, doc) == 45
    assert one(c, {"$second": "$d"}, doc) == 30
    assert one(c, {"$millisecond": "$d"}, doc) == 123
    assert one(c, {"$dayOfWeek": "$d"}, doc) == 5  # Thursday (Sunday is 1)
    assert one(c, {"$dayOfYear": "$d"}, doc) == 60
    assert one(c, {"$week": "$d"}, doc) == 8
    assert one(c, {"$isoWeek": "$d"}, doc) == 9 and one(c, {"$isoDayOfWeek": "$d"}, doc) == 4
    sunday = {"_id": 1, "d": datetime.datetime(2023, 12, 31)}  # ISO week 52 of 2023; %U week 53
    assert (one(c, {"$isoWeekYear": "$d"}, sunday), one(c, {"$isoWeek": "$d"}, sunday)) == (2023, 52)
    assert one(c, {"$isoDayOfWeek": "$d"}, sunday) == 7
    assert one(c, {"$dateToString": {"date": "$d", "format": "%Y-%m-%d %H:%M:%S.%L"}}, doc) == "2024-02-29 13:45:30.123"
    assert one(c, {"$dateToString": {"date": "$d"}}, doc) == "2024-02-29T13:45:30.123Z"
    assert one(c, {"$hour": {"date": "$d", "timezone": "Europe/Oslo"}}, doc) == 14
    assert one(c, {"$dateToString": {"date": "$d", "format": "%H:%M", "timezone": "-05:00"}}, doc) == "08:45"
    assert one(c, {"$year": "$missing"}, doc) is None
    fails(c, {"$year": "$d"}, 16006, {"_id": 1, "d": "2024"})
    fails(c, {"$hour": {"date": "$d", "timezone": "Mars/Olympus"}}, 40485, doc)
    fails(c, {"$dateToString": {"date": "$d", "format": "%Q"}}, 18536, doc)


def test_date_arithmetic_truncation_parsing_and_parts(db):
    c = db.e
    D = datetime.datetime
    add = lambda start, unit, n, **kw: one(c, {"$dateAdd": {"startDate": start, "unit": unit, "amount": n, **kw}})
    assert add(D(2021, 1, 31), "month", 1) == D(2021, 2, 28)  # the month's last day
    assert add(D(2020, 2, 29), "year", 1) == D(2021, 2, 28)
    assert add(D(2021, 1, 31), "quarter", -1) == D(2020, 10, 31)
    assert add(D(2021, 1, 1, 10), "hour", 25) == D(2021, 1, 2, 11)
    assert add(D(2021, 1, 1), "millisecond", Int64(1500)) == D(2021, 1, 1, 0, 0, 1, 500000)
    assert add(D(2021, 1, 1), "week", 2.0) == D(2021, 1, 15)
    # A day is a calendar day in the time zone: across New York's daylight
    # saving change it keeps noon local time; 24 hours do not.
    assert add(D(2021, 3, 13, 17), "day", 1, timezone="America/New_York") == D(2021, 3, 14, 16)
    assert add(D(2021, 3, 13, 17), "hour", 24, timezone="America/New_York") == D(2021, 3, 14, 17)
    assert one(c, {"$dateSubtract": {"startDate": D(2021, 3, 1), "unit": "day", "amount": 1}}) == D(2021, 2, 28)
    assert add("$missing", "day", 1) is None and add(D(2021, 1, 1), "day", None) is None
    fails(c, {"$dateAdd": {"startDate": D(2021, 1, 1), "unit": "day"}}, 5166402)
    fails(c, {"$dateAdd": {"startDate": "2021", "unit": "day", "amount": 1}}, 5166403)
    fails(c, {"$dateAdd": {"startDate": D(2021, 1, 1), "unit": "day", "amount": 1.5}}, 5166405)
    fails(c, {"$dateAdd": {"startDate": D(2021, 1, 1), "unit": "fortnight", "amount": 1}}, 9)
    fails(c, {"$dateAdd": {"startDate": D(2021, 1, 1), "unit": "day", "amount": 1, "bogus": 1}}, 5166401)

    diff = lambda a, b, unit, **kw: one(c, {"$dateDiff": {"startDate": a, "endDate": b, "unit": unit, **kw}})
    # Boundaries crossed, not elapsed whole units.
    assert diff(D(2020, 12, 31, 23), D(2021, 1, 1, 1), "year") == 1
    assert isinstance(diff(D(2020, 12, 31), D(2021, 1, 1), "year"), Int64)
    assert diff(D(2020, 12, 31, 23), D(2021, 1, 1, 1), "day") == 1
    assert diff(D(2021, 1, 1), D(2021, 12, 31), "month") == 11
    assert diff(D(2021, 3, 31), D(2021, 4, 1), "quarter") == 1
    assert diff(D(2021, 1, 1, 10, 59), D(2021, 1, 1, 11, 0), "hour") == 1
    assert diff(D(2021, 1, 1, 11, 0), D(2021, 1, 1, 10, 59), "minute") == -1
    assert diff(D(2021, 1, 1), D(2021, 1, 1, 0, 0, 1, 250000), "millisecond") == 1250
    # Weeks start on Sunday unless startOfWeek says otherwise.
    assert diff(D(2021, 1, 2), D(2021, 1, 3), "week") == 1  # Saturday to Sunday
    assert diff(D(2021, 1, 2), D(2021, 1, 3), "week", startOfWeek="mon") == 0
    # In a time zone the local date counts: 2021-01-01T23:00Z is Jan 2 in Tokyo.
    assert diff(D(2021, 1, 1, 12), D(2021, 1, 1, 23), "day") == 0
    assert diff(D(2021, 1, 1, 12), D(2021, 1, 1, 23), "day", timezone="Asia/Tokyo") == 1
    assert diff(None, D(2021, 1, 1), "day") is None
    fails(c, {"$dateDiff": {"startDate": D(2021, 1, 1), "unit": "day"}}, 5166304)
    fails(c, {"$dateDiff": {"startDate": 1, "endDate": D(2021, 1, 1), "unit": "day"}}, 5166307)
    fails(c, {"$dateDiff": {"startDate": D(2021, 1, 1), "endDate": D(2021, 1, 1), "unit": "week", "startOfWeek": "x"}}, 5439016)

    trunc = lambda unit, **kw: one(c, {"$dateTrunc": {"date": D(2021, 3, 17, 13, 47, 5), "unit": unit, **kw}})
    assert trunc("hour") == D(2021, 3, 17, 13) and trunc("hour", binSize=6) == D(2021, 3, 17, 12)
    assert trunc("minute", binSize=15) == D(2021, 3, 17, 13, 45)
    assert trunc("day") == D(2021, 3, 17)
    assert trunc("day", binSize=7) == D(2021, 3, 13)  # 7-day periods from Saturday 2000-01-01
    assert trunc("week") == D(2021, 3, 14) and trunc("week", startOfWeek="Monday") == D(2021, 3, 15)
    assert trunc("month") == D(2021, 3, 1) and trunc("month", binSize=5) == D(2020, 11, 1)
    assert trunc("quarter") == D(2021, 1, 1) and trunc("year", binSize=10) == D(2020, 1, 1)
    # In New York 02:00Z on the 17th is still the 16th.
    assert one(c, {"$dateTrunc": {"date": D(2021, 3, 17, 2), "unit": "day", "timezone": "America/New_York"}}) == D(2021, 3, 16, 4)
    assert one(c, {"$dateTrunc": {"date": "$missing", "unit": "day"}}) is None
    fails(c, {"$dateTrunc": {"date": D(2021, 1, 1), "unit": "day", "binSize": 0}}, 5439018)
    fails(c, {"$dateTrunc": {"date": D(2021, 1, 1), "unit": "day", "binSize": 1.5}}, 5439017)
    fails(c, {"$dateTrunc": {"date": "x", "unit": "day"}}, 5439012)
    fails(c, {"$dateTrunc": {"unit": "day"}}, 5439009)

    parse = lambda s, **kw: one(c, {"$dateFromString": {"dateString": s, **kw}})
    assert parse("2021-03-17T10:20:30.456Z") == D(2021, 3, 17, 10, 20, 30, 456000)
    assert parse("2021-03-17T10:20:30+02:00") == D(2021, 3, 17, 8, 20, 30)
    assert parse("2021-03-17") == D(2021, 3, 17)
    assert parse("2021-03-17 12:00", timezone="Asia/Tokyo") == D(2021, 3, 17, 3)  # local time there
    assert parse("17/03/2021 07h05", format="%d/%m/%Y %Hh%M") == D(2021, 3, 17, 7, 5)
    assert parse("2021-076 +0130", format="%Y-%j %z") == D(2021, 3, 16, 22, 30)
    assert parse(None, onNull="none") == "none" and parse("$missing") is None
    assert parse("yesterday", onError="bad") == "bad" and parse(5, onError="bad") == "bad"
    assert parse("2021-03-17Z", timezone=None) is None
    fails(c, {"$dateFromString": {"dateString": "yesterday"}}, 241)
    fails(c, {"$dateFromString": {"dateString": "2021-02-30", "format": "%Y-%m-%d"}}, 241)
    fails(c, {"$dateFromString": {"dateString": "2021-03-17T10:00:00Z", "timezone": "Europe/Paris"}}, 241)
    fails(c, {"$dateFromString": {"dateString": "2021", "format": "%Q"}}, 18536)
    fails(c, {"$dateFromString": {"format": "%Y"}}, 40542)

    d = D(2021, 3, 17, 13, 47, 5, 123000)
    assert one(c, {"$dateToParts": {"date": d}}) == {"year": 2021, "month": 3, "day": 17, "hour": 13, "minute": 47, "second": 5, "millisecond": 123}
    assert one(c, {"$dateToParts": {"date": d, "timezone": "Asia/Tokyo", "iso8601": True}}) == {
        "isoWeekYear": 2021, "isoWeek": 11, "isoDayOfWeek": 3, "hour": 22, "minute": 47, "second": 5, "millisecond": 123}
    assert one(c, {"$dateToParts": {"date": "$missing"}}) is None
    parts = lambda **kw: one(c, {"$dateFromParts": kw})
    assert parts(year=2021, month=3, day=17, hour=13, minute=47, second=5, millisecond=123) == d
    assert parts(year=2021) == D(2021, 1, 1)
    assert parts(year=2020, month=14, day=0, hour=25) == D(2021, 2, 1, 1)  # parts past their range carry over
    assert parts(year=2021, month=3, day=17, timezone="-05:00") == D(2021, 3, 17, 5)
    assert parts(isoWeekYear=2021, isoWeek=11, isoDayOfWeek=3) == D(2021, 3, 17)
    assert parts(isoWeekYear=2021) == D(2021, 1, 4)  # Monday of ISO week 1
    assert parts(year=2021, month="$missing") is None
    fails(c, {"$dateFromParts": {"month": 1}}, 40516)
    fails(c, {"$dateFromParts": {"year": 2021, "isoWeek": 1}}, 40489)
    fails(c, {"$dateFromParts": {"year": 2021, "month": 1.5}}, 40515)
    fails(c, {"$dateFromParts": {"year": 0}}, 40523)
    fails(c, {"$dateToParts": {"date": d, "iso8601": 1}}, 40521)


def test_type_operators(db):
    c = db.e
    assert one(c, {"$type": "$missing"}) == "missing"
    assert one(c, {"$type": 1}) == "int" and one(c, {"$type": Int64(1)}) == "long"
    assert one(c, {"$type": [[1]]}) == "array"
    assert one(c, {"$toInt": "42"}) == 42
    assert isinstance(one(c, {"$toLong": 42}), Int64)
    assert one(c, {"$toDouble": "1.5"}) == 1.5
    assert one(c, {"$toDecimal": 1.5}) == Decimal128("1.50000000000000")  # doubles convert at 15 digits
    assert one(c, {"$toString": 12}) == "12"
    assert one(c, {"$toBool": 0}) is False and one(c, {"$toBool": "false"}) is True
    assert one(c, {"$toDate": Int64(0)}) == datetime.datetime(1970, 1, 1)
    oid = ObjectId()
    assert one(c, {"$toObjectId": str(oid)}) == oid
    assert one(c, {"$isNumber": Decimal128("1")}) is True and one(c, {"$isNumber": "1"}) is False
    assert one(c, {"$convert": {"input": "x", "to": "int", "onError": -1}}) == -1
    assert one(c, {"$convert": {"input": None, "to": "int", "onNull": 0}}) == 0
    fails(c, {"$toInt": "x"}, 241)
    fails(c, {"$toInt": 3e10}, 241)


def test_object_operators(db):
    c = db.e
    assert one(c, {"$mergeObjects": [{"a": 1, "b": 1}, None, {"b": 2}]}) == {"a": 1, "b": 2}
    assert one(c, {"$objectToArray": {"a": 1}}) == [{"k": "a", "v": 1}]
    assert one(c, {"$arrayToObject": [[["a", 1], ["b", 2]]]}) == {"a": 1, "b": 2}
    fails(c, {"$mergeObjects": [1]}, 40400)
    # A document expression leaves missing fields out; an array makes them null.
    assert agg(c, [{"$replaceWith": {"x": "$missing", "y": 1}}]) == [{"y": 1}]
    assert one(c, ["$missing"]) == [None]


# --- stages ----------------------------------------------------------------

@pytest.fixture
def sales(db):
    db.s.insert_many([
        {"_id": 1, "item": "a", "qty": 2, "price": 10, "tags": ["x", "y"], "d": datetime.datetime(2024, 1, 5)},
        {"_id": 2, "item": "b", "qty": 1, "price": 20, "tags": [], "d": datetime.datetime(2024, 1, 6)},
        {"_id": 3, "item": "a", "qty": 5, "price": 10, "tags": None, "d": datetime.datetime(2024, 2, 1)},
        {"_id": 4, "item": "c", "qty": 1, "price": 30, "d": datetime.datetime(2024, 2, 2)},
    ])
    return db.s


def test_add_fields_set_unset(sales):
    rows = agg(sales, [{"$addFields": {"total": {"$multiply": ["$qty", "$price"]}, "meta.k": 1}}, {"$sort": {"_id": 1}}])
    assert rows[0]["total"] == 20 and rows[0]["meta"] == {"k": 1}
    assert list(rows[0])[-2:] == ["total", "meta"]
    rows = agg(sales, [{"$set": {"qty": "$$REMOVE"}}, {"$unset": ["tags", "d"]}, {"$match": {"_id": 1}}])
    assert rows == [{"_id": 1, "item": "a", "price": 10}]
    rows = agg(sales, [{"$unset": "item"}, {"$match": {"_id": 4}}])
    assert "item" not in rows[0] and rows[0]["qty"] == 1


def test_project_computed_and_modes(sales):
    rows = agg(sales, [{"$match": {"_id": 1}}, {"$project": {"item": 1, "sum": {"$add": ["$qty", 1]}, "lit": "text"}}])
    assert rows == [{"_id": 1, "item": "a", "sum": 3, "lit": "text"}]
    rows = agg(sales, [{"$match": {"_id": 1}}, {"$project": {"_id": 0, "tags": 0, "d": 0}}])
    assert rows == [{"item": "a", "qty": 2, "price": 10}]
    with pytest.raises(OperationFailure) as e:
        agg(sales, [{"$project": {"item": 1, "qty": 0}}])
    assert codes(e) == 31254
    with pytest.raises(OperationFailure) as e:
        agg(sales, [{"$project": {}}])
    assert codes(e) == 51272


def test_replace_root(sales):
    rows = agg(sales, [{"$match": {"_id": 1}}, {"$replaceRoot": {"newRoot": {"i": "$item", "q": "$qty"}}}])
    assert rows == [{"i": "a", "q": 2}]
    rows = agg(sales, [{"$match": {"_id": 2}}, {"$replaceWith": {"$mergeObjects": [{"x": 0}, {"item": "$item"}]}}])
    assert rows == [{"x": 0, "item": "b"}]
    with pytest.raises(OperationFailure) as e:
        agg(sales, [{"$replaceRoot": {"newRoot": "$qty"}}])
    assert codes(e) == 40228


def test_unwind(sales):
    rows = agg(sales, [{"$unwind": "$tags"}, {"$project": {"tags": 1}}])
    assert rows == [{"_id": 1, "tags": "x"}, {"_id": 1, "tags": "y"}]
    rows = agg(sales, [{"$unwind": {"path": "$tags", "includeArrayIndex": "i", "preserveNullAndEmptyArrays": True}},
                       {"$project": {"tags": 1, "i": 1}}])
    assert rows == [
        {"_id": 1, "tags": "x", "i": Int64(0)}, {"_id": 1, "tags": "y", "i": 1},
        {"_id": 2, "i": None},  # the empty array is dropped from the document
        {"_id": 3, "tags": None, "i": None},
        {"_id": 4, "i": None},
    ]
    assert isinstance(rows[0]["i"], Int64)
    with pytest.raises(OperationFailure) as e:
        agg(sales, [{"$unwind": "tags"}])
    assert codes(e) == 28818


def test_group_expressions_and_accumulators(sales):
    rows = agg(sales, [
        {"$group": {
            "_id": {"m": {"$month": "$d"}},
            "revenue": {"$sum": {"$multiply": ["$qty", "$price"]}},
            "avgQty": {"$avg": "$qty"},
            "items": {"$addToSet": "$item"},
            "all": {"$push": "$item"},
            "first": {"$first": "$item"},
            "last": {"$last": "$item"},
            "min": {"$min": "$price"},
            "max": {"$max": "$price"},
            "n": {"$count": {}},
            "sd": {"$stdDevPop": "$qty"},
            "sds": {"$stdDevSamp": "$qty"},
            "merged": {"$mergeObjects": {"last": "$item"}},
        }},
        {"$sort": {"_id.m": 1}},
    ])
    jan, feb = rows
    assert jan["_id"] == {"m": 1} and jan["revenue"] == 40 and jan["avgQty"] == 1.5
    assert jan["items"] == ["a", "b"] and jan["all"] == ["a", "b"]
    assert (jan["first"], jan["last"], jan["min"], jan["max"], jan["n"]) == ("a", "b", 10, 20, 2)
    assert jan["sd"] == pytest.approx(0.5) and jan["sds"] == pytest.approx(0.7071067811865476)
    assert jan["merged"] == {"last": "b"}
    assert feb["revenue"] == 80
    # Missing _id groups as null; $first of a missing value is null.
    rows = agg(sales, [{"$group": {"_id": "$nothere", "f": {"$first": "$nothere"}, "p": {"$push": "$nothere"}}}])
    assert rows == [{"_id": None, "f": None, "p": []}]
    with pytest.raises(OperationFailure) as e:
        agg(sales, [{"$group": {"_id": None, "x": {"$sum": [1, 2]}}}])
    assert codes(e) == 40237


def test_sort_by_count_and_bucket(sales):
    assert agg(sales, [{"$sortByCount": "$item"}])[0] == {"_id": "a", "count": 2}
    rows = agg(sales, [{"$bucket": {"groupBy": "$price", "boundaries": [0, 15, 25], "default": "other",
                                    "output": {"n": {"$sum": 1}, "items": {"$push": "$item"}}}}])
    assert rows == [
        {"_id": 0, "n": 2, "items": ["a", "a"]},
        {"_id": 15, "n": 1, "items": ["b"]},
        {"_id": "other", "n": 1, "items": ["c"]},
    ]
    with pytest.raises(OperationFailure) as e:
        agg(sales, [{"$bucket": {"groupBy": "$price", "boundaries": [0, 15]}}])
    assert codes(e) == 40066
    with pytest.raises(OperationFailure) as e:
        agg(sales, [{"$bucket": {"groupBy": "$price", "boundaries": [5, 1]}}])
    assert codes(e) == 40194


def test_skip_limit_count_and_their_argument_codes(sales):
    ids = lambda rows: [r["_id"] for r in rows]
    assert ids(agg(sales, [{"$sort": {"_id": -1}}, {"$skip": 1}, {"$limit": 2}])) == [3, 2]
    assert ids(agg(sales, [{"$sort": {"_id": 1}}, {"$skip": 1.0}, {"$limit": Int64(1)}])) == [2]
    assert agg(sales, [{"$skip": 10}]) == []
    assert agg(sales, [{"$match": {"item": "a"}}, {"$count": "n"}]) == [{"n": 2}]
    assert agg(sales, [{"$match": {"item": "zz"}}, {"$count": "n"}]) == []  # no document, not {n: 0}
    # MongoDB's codes (document_source_skip/limit/count/sort.cpp, sort_pattern.cpp).
    for stage, code in [({"$skip": "1"}, 15972), ({"$skip": -1}, 5107200), ({"$skip": 1.5}, 5107200),
                        ({"$limit": "1"}, 15957), ({"$limit": -1}, 5107201), ({"$limit": 0}, 15958),
                        ({"$count": 1}, 40156), ({"$count": ""}, 40157), ({"$count": "$n"}, 40158),
                        ({"$count": "a.b"}, 40160),
                        ({"$sort": 1}, 15973), ({"$sort": {}}, 15976), ({"$sort": {"a": "x"}}, 15974),
                        ({"$sort": {"a": 2}}, 15975)]:
        with pytest.raises(OperationFailure) as e:
            agg(sales, [stage])
        assert codes(e) == code, stage


def test_facet(sales):
    rows = agg(sales, [{"$facet": {
        "byItem": [{"$sortByCount": "$item"}, {"$limit": 1}],
        "total": [{"$count": "n"}],
        "cheap": [{"$match": {"price": {"$lt": 15}}}, {"$project": {"_id": 1}}],
    }}])
    assert rows == [{"byItem": [{"_id": "a", "count": 2}], "total": [{"n": 4}], "cheap": [{"_id": 1}, {"_id": 3}]}]
    with pytest.raises(OperationFailure) as e:
        agg(sales, [{"$facet": {"x": [{"$facet": {"y": [{"$limit": 1}]}}]}}])
    assert codes(e) == 40600


def test_sample(sales):
    rows = agg(sales, [{"$sample": {"size": 2}}])
    assert len(rows) == 2 and len({r["_id"] for r in rows}) == 2
    assert len(agg(sales, [{"$sample": {"size": 10}}])) == 4
    with pytest.raises(OperationFailure) as e:
        agg(sales, [{"$sample": {"size": -1}}])
    assert codes(e) == 28747


def test_lookup_equality_and_pipeline(db, sales):
    db.items.insert_many([
        {"_id": "a", "name": "apple", "stock": 3},
        {"_id": "b", "name": "bean", "stock": 0},
        {"_id": "x", "name": "none"},
    ])
    rows = agg(sales, [{"$match": {"_id": {"$in": [1, 4]}}},
                       {"$lookup": {"from": "items", "localField": "item", "foreignField": "_id", "as": "info"}},
                       {"$project": {"info.name": 1}}])
    assert rows == [{"_id": 1, "info": [{"name": "apple"}]}, {"_id": 4, "info": []}]
    rows = agg(sales, [{"$match": {"_id": {"$in": [1, 2]}}},
                       {"$lookup": {"from": "items", "let": {"it": "$item", "q": "$qty"}, "as": "ok",
                                    "pipeline": [{"$match": {"$expr": {"$and": [{"$eq": ["$_id", "$$it"]},
                                                                               {"$gte": ["$stock", "$$q"]}]}}},
                                                 {"$project": {"_id": 0, "name": 1}}]}},
                       {"$project": {"ok": 1}}])
    assert rows == [{"_id": 1, "ok": [{"name": "apple"}]}, {"_id": 2, "ok": []}]
    # A missing local field matches foreign documents where the field is null or missing.
    db.left.insert_one({"_id": 1})
    rows = agg(db.left, [{"$lookup": {"from": "items", "localField": "k", "foreignField": "stock", "as": "m"}}])
    assert [m["_id"] for m in rows[0]["m"]] == ["x"]


def test_lookup_over_many_batches(db):
    db.kinds.insert_many([{"_id": k, "kind": k % 7} for k in range(20)])
    db.many.insert_many([{"_id": i, "k": [i % 7, (i + 1) % 7] if i % 3 == 0 else i % 7} for i in range(700)])
    rows = agg(db.many, [{"$lookup": {"from": "kinds", "localField": "k", "foreignField": "kind", "as": "m"}},
                         {"$project": {"ids": "$m._id"}}])
    assert len(rows) == 700
    for r in rows:
        i = r["_id"]
        wanted = {i % 7, (i + 1) % 7} if i % 3 == 0 else {i % 7}
        assert sorted(r["ids"]) == sorted(k for k in range(20) if k % 7 in wanted), r


def test_union_with(db, sales):
    db.returns.insert_many([{"_id": 10, "item": "a", "qty": -1}, {"_id": 11, "item": "z", "qty": -2}])
    rows = agg(sales, [{"$project": {"item": 1, "qty": 1}},
                       {"$unionWith": {"coll": "returns", "pipeline": [{"$match": {"item": "a"}}]}},
                       {"$group": {"_id": "$item", "qty": {"$sum": "$qty"}}}, {"$sort": {"_id": 1}}])
    assert rows == [{"_id": "a", "qty": 6}, {"_id": "b", "qty": 1}, {"_id": "c", "qty": 1}]
    assert len(agg(sales, [{"$unionWith": "returns"}])) == 6


def test_expr_in_find_and_match(db):
    db.b.insert_many([{"_id": 1, "spent": 10, "budget": 5}, {"_id": 2, "spent": 1, "budget": 5}])
    assert [d["_id"] for d in db.b.find({"$expr": {"$gt": ["$spent", "$budget"]}})] == [1]
    assert db.b.count_documents({"$expr": {"$lt": ["$spent", "$budget"]}}) == 1
    rows = agg(db.b, [{"$match": {"_id": {"$gte": 1}, "$expr": {"$eq": [{"$mod": ["$spent", 2]}, 0]}}}])
    assert [r["_id"] for r in rows] == [1]
    with pytest.raises(OperationFailure) as e:
        list(db.b.find({"$expr": {"$divide": [1, 0]}}))
    assert codes(e) == 2
    with pytest.raises(OperationFailure) as e:
        list(db.b.find({"a": {"$elemMatch": {"$expr": {"$eq": [1, 1]}}}}))
    assert codes(e) == 2


def test_explain_pipeline(db, sales):
    pipeline = [{"$match": {"_id": {"$gt": 1}}}, {"$group": {"_id": "$item", "n": {"$sum": 1}}}]
    for reply in (db.command("aggregate", "s", pipeline=pipeline, explain=True),
                  db.command("explain", {"aggregate": "s", "pipeline": pipeline, "cursor": {}})):
        stages = reply["stages"]
        planner = stages[0]["$cursor"]["queryPlanner"]
        assert planner["parsedQuery"] == {"_id": {"$gt": 1}}
        assert planner["winningPlan"]["stage"] == "POSTGRESQL"
        assert stages[1:] == [pipeline[1]]
    # executionStats: what the leading $match read.
    reply = db.command("explain", {"aggregate": "s", "pipeline": pipeline, "cursor": {}}, verbosity="executionStats")
    st = reply["stages"][0]["$cursor"]["executionStats"]
    assert st["executionSuccess"] is True and st["nReturned"] == 3
    assert "executionStats" not in db.command("explain", {"aggregate": "s", "pipeline": pipeline, "cursor": {}},
                                              verbosity="queryPlanner")["stages"][0]["$cursor"]
    # Explaining reads nothing and still checks the stages.
    with pytest.raises(OperationFailure) as e:
        db.command("aggregate", "s", pipeline=[{"$frob": 1}], explain=True)
    assert codes(e) == 40324


def test_unsupported_stages_are_refused(sales):
    for stage, code in [({"$geoNear": {}}, 238), ({"$densify": {}}, 40414),
                        ({"$fill": {}}, 40414),
                        ({"$frobnicate": {}}, 40324)]:
        with pytest.raises(OperationFailure) as e:
            agg(sales, [stage])
        assert codes(e) == code, stage


# --- distinct --------------------------------------------------------------

def test_distinct(db):
    db.d.insert_many([
        {"_id": 1, "a": 1, "t": ["x", "y"]},
        {"_id": 2, "a": 1.0, "t": "x"},
        {"_id": 3, "a": "s", "t": [["z"]]},
        {"_id": 4, "a": None},
        {"_id": 5, "b": {"c": 2}},
        {"_id": 6, "a": Decimal128("2")},
    ])
    got = db.d.distinct("a")
    assert got == [None, 1, Decimal128("2"), "s"]  # BSON order, 1 and 1.0 the same value
    assert db.d.distinct("t") == ["x", "y", ["z"]]  # arrays unwound one level
    assert db.d.distinct("b.c") == [2]
    assert db.d.distinct("a", {"_id": {"$gt": 2}}) == [None, Decimal128("2"), "s"]
    assert db.nothere.distinct("a") == []
    with pytest.raises(OperationFailure) as e:
        db.command("distinct", "d", key=1)
    assert codes(e) == 14
    with pytest.raises(OperationFailure) as e:
        db.command("distinct", "d", key="a", collation={"locale": "fr"})
    assert codes(e) == 238


def test_lookup_needs_find_on_the_other_collection(new_server):
    pw = "adm-lookup-test"
    t = new_server(env={"TIERDB_ADMIN_PASSWORD": pw}, extra_args=["--admin-user", "admin"])
    t.start()
    admin = t.client(username="admin", password=pw)
    shop = admin.shop
    shop.orders.insert_one({"_id": 1, "item": "a"})
    shop.secrets.insert_one({"_id": "a", "code": 42})
    shop.command("createRole", "ordersOnly", roles=[],
                 privileges=[{"resource": {"db": "shop", "collection": "orders"}, "actions": ["find"]}])
    shop.command("createUser", "clerk", pwd=pw, roles=["ordersOnly"])
    clerk = t.client(username="clerk", password=pw, authSource="shop")
    assert list(clerk.shop.orders.find()) == [{"_id": 1, "item": "a"}]
    pipeline = [{"$lookup": {"from": "secrets", "localField": "item", "foreignField": "_id", "as": "s"}}]
    with pytest.raises(OperationFailure) as e:
        list(clerk.shop.orders.aggregate(pipeline))
    assert codes(e) == 13
    assert list(admin.shop.orders.aggregate(pipeline))[0]["s"] == [{"_id": "a", "code": 42}]
    clerk.close()
    admin.close()


# --- $graphLookup, $bucketAuto, $setWindowFields ----------------------------

def test_graph_lookup(db):
    db.emp.insert_many([
        {"_id": 1, "name": "Dev"},
        {"_id": 2, "name": "Eliot", "reportsTo": "Dev"},
        {"_id": 3, "name": "Ron", "reportsTo": "Eliot"},
        {"_id": 4, "name": "Andrew", "reportsTo": "Eliot"},
        {"_id": 5, "name": "Asya", "reportsTo": "Ron"},
    ])
    rows = agg(db.emp, [
        {"$graphLookup": {"from": "emp", "startWith": "$reportsTo", "connectFromField": "reportsTo",
                          "connectToField": "name", "as": "chain", "depthField": "depth"}},
        {"$project": {"chain": {"$map": {"input": "$chain", "in": ["$$this.name", "$$this.depth"]}}}},
    ])
    chains = {r["_id"]: sorted(r["chain"], key=lambda c: c[1]) for r in rows}
    assert chains[1] == [] and chains[2] == [["Dev", 0]]
    assert chains[5] == [["Ron", 0], ["Eliot", 1], ["Dev", 2]]
    assert all(isinstance(c[1], Int64) for c in chains[5])
    # maxDepth and restrictSearchWithMatch.
    rows = agg(db.emp, [
        {"$match": {"_id": 1}},
        {"$graphLookup": {"from": "emp", "startWith": "$name", "connectFromField": "name", "connectToField": "reportsTo",
                          "as": "reports", "maxDepth": 1, "restrictSearchWithMatch": {"name": {"$ne": "Andrew"}}}},
    ])
    assert sorted(r["name"] for r in rows[0]["reports"]) == ["Eliot", "Ron"]
    with pytest.raises(OperationFailure) as e:
        agg(db.emp, [{"$graphLookup": {"from": "emp", "startWith": "$x", "as": "y"}}])
    assert codes(e) == 40105


def test_bucket_auto(db):
    db.b.insert_many([{"_id": i, "price": p} for i, p in enumerate([5, 1, 2, 2, 2, 3, 8, 9, 4, 7, 6, 10])])
    rows = agg(db.b, [{"$bucketAuto": {"groupBy": "$price", "buckets": 4, "output": {"n": {"$sum": 1}, "top": {"$max": "$price"}}}}])
    assert rows == [
        {"_id": {"min": 1, "max": 3}, "n": 4, "top": 2},
        {"_id": {"min": 3, "max": 6}, "n": 3, "top": 5},
        {"_id": {"min": 6, "max": 9}, "n": 3, "top": 8},
        {"_id": {"min": 9, "max": 10}, "n": 2, "top": 10},
    ]
    assert agg(db.b, [{"$bucketAuto": {"groupBy": "$price", "buckets": 1}}]) == [{"_id": {"min": 1, "max": 10}, "count": 12}]
    with pytest.raises(OperationFailure) as e:
        agg(db.b, [{"$bucketAuto": {"groupBy": "$price", "buckets": 2, "granularity": "R5"}}])
    assert codes(e) == 238
    with pytest.raises(OperationFailure) as e:
        agg(db.b, [{"$bucketAuto": {"groupBy": "$price", "buckets": 0}}])
    assert codes(e) == 40243


def test_set_window_fields(db):
    db.w.insert_many([
        {"_id": 1, "state": "CA", "day": 1, "qty": 10},
        {"_id": 2, "state": "CA", "day": 2, "qty": 20},
        {"_id": 3, "state": "CA", "day": 3, "qty": 20},
        {"_id": 4, "state": "WA", "day": 1, "qty": 5},
        {"_id": 5, "state": "WA", "day": 2, "qty": 7},
    ])
    rows = agg(db.w, [{"$setWindowFields": {
        "partitionBy": "$state", "sortBy": {"day": 1},
        "output": {
            "running": {"$sum": "$qty", "window": {"documents": ["unbounded", "current"]}},
            "moving": {"$avg": "$qty", "window": {"documents": [-1, 0]}},
            "total": {"$sum": "$qty"},
            "n": {"$documentNumber": {}},
            "next": {"$shift": {"output": "$qty", "by": 1}},
        }}}, {"$project": {"state": 0, "day": 0}}])
    assert rows == [
        {"_id": 1, "qty": 10, "running": 10, "moving": 10.0, "total": 50, "n": 1, "next": 20},
        {"_id": 2, "qty": 20, "running": 30, "moving": 15.0, "total": 50, "n": 2, "next": 20},
        {"_id": 3, "qty": 20, "running": 50, "moving": 20.0, "total": 50, "n": 3, "next": None},
        {"_id": 4, "qty": 5, "running": 5, "moving": 5.0, "total": 12, "n": 1, "next": 7},
        {"_id": 5, "qty": 7, "running": 12, "moving": 6.0, "total": 12, "n": 2, "next": None},
    ]
    ranks = agg(db.w, [{"$setWindowFields": {"sortBy": {"qty": -1}, "output": {
        "r": {"$rank": {}}, "d": {"$denseRank": {}}}}}, {"$project": {"r": 1, "d": 1}}])
    assert ranks == [{"_id": 2, "r": 1, "d": 1}, {"_id": 3, "r": 1, "d": 1}, {"_id": 1, "r": 3, "d": 2},
                     {"_id": 5, "r": 4, "d": 3}, {"_id": 4, "r": 5, "d": 4}]
    for output, code in [({"x": {"$sum": "$qty", "window": {"range": [-1, 1]}}}, 238),
                         ({"x": {"$derivative": {"input": "$qty"}}}, 238),
                         ({"x": {"$rank": {}}}, 9)]:
        with pytest.raises(OperationFailure) as e:
            agg(db.w, [{"$setWindowFields": {"sortBy": {"qty": 1, "day": 1}, "output": output}}])
        assert codes(e) == code, output
