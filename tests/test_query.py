"""Query operators, null/missing, arrays, and MongoDB's cross-type comparison and sort order."""
import datetime

import pytest
from bson import Binary, Code, Decimal128, ObjectId, Regex, Timestamp
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from pymongo.errors import OperationFailure


def ids(cursor):
    return sorted(d["_id"] for d in cursor)


@pytest.fixture
def nums(db):
    db.n.insert_many([
        {"_id": 1, "v": 1},
        {"_id": 2, "v": Int64(2)},
        {"_id": 3, "v": 3.5},
        {"_id": 4, "v": Decimal128("4")},
        {"_id": 5, "v": "5"},
        {"_id": 6, "v": None},
        {"_id": 7},
        {"_id": 8, "v": [0, 9]},
        {"_id": 9, "v": {"w": 1}},
        {"_id": 10, "v": 1.0},
    ])
    return db.n


def test_comparison_operators(nums):
    assert ids(nums.find({"v": {"$eq": 1}})) == [1, 10]
    assert ids(nums.find({"v": 1})) == [1, 10]
    assert ids(nums.find({"v": {"$gt": 2}})) == [3, 4, 8]
    assert ids(nums.find({"v": {"$gte": 2}})) == [2, 3, 4, 8]
    assert ids(nums.find({"v": {"$lt": 2}})) == [1, 8, 10]
    assert ids(nums.find({"v": {"$lte": Decimal128("2")}})) == [1, 2, 8, 10]
    assert ids(nums.find({"v": {"$gt": 1, "$lt": 4}})) == [2, 3, 8]


def test_numbers_compare_across_types(nums):
    assert ids(nums.find({"v": Int64(1)})) == [1, 10]
    assert ids(nums.find({"v": Decimal128("1.0")})) == [1, 10]
    assert ids(nums.find({"v": 2.0})) == [2]
    assert ids(nums.find({"v": 4})) == [4]


def test_type_bracketing(nums):
    # Range operators only compare within a type: "5" is not > 2, and 3.5 is not < "a".
    assert 5 not in ids(nums.find({"v": {"$gt": 2}}))
    assert ids(nums.find({"v": {"$gte": ""}})) == [5]
    assert ids(nums.find({"v": {"$gt": {}}})) == [9]


def test_ne_nin_in(nums):
    assert ids(nums.find({"v": {"$ne": 1}})) == [2, 3, 4, 5, 6, 7, 8, 9]
    assert ids(nums.find({"v": {"$in": [1, "5", None]}})) == [1, 5, 6, 7, 10]
    assert ids(nums.find({"v": {"$nin": [1, "5", None]}})) == [2, 3, 4, 8, 9]
    assert ids(nums.find({"v": {"$in": []}})) == []


def test_null_versus_missing(nums):
    assert ids(nums.find({"v": None})) == [6, 7]
    assert ids(nums.find({"v": {"$exists": False}})) == [7]
    assert ids(nums.find({"v": {"$exists": True}})) == [1, 2, 3, 4, 5, 6, 8, 9, 10]
    assert ids(nums.find({"v": {"$ne": None}})) == [1, 2, 3, 4, 5, 8, 9, 10]
    assert ids(nums.find({"v": {"$type": "null"}})) == [6]


def test_and_or(nums):
    assert ids(nums.find({"$or": [{"v": 1}, {"v": "5"}]})) == [1, 5, 10]
    assert ids(nums.find({"$and": [{"v": {"$gte": 1}}, {"v": {"$lt": 3}}]})) == [1, 2, 8, 10]  # [0, 9]: 9 >= 1 and 0 < 3
    assert ids(nums.find({"$or": [{"_id": 7}, {"v": {"$gt": 3}}], "_id": {"$lt": 8}})) == [3, 4, 7]


def test_dotted_paths(db):
    db.d.insert_many([
        {"_id": 1, "a": {"b": {"c": 1}}},
        {"_id": 2, "a": {"b": {"c": 2}}},
        {"_id": 3, "a": {"b": 1}},
        {"_id": 4, "a": [{"b": {"c": 2}}, {"b": {"c": 3}}]},
        {"_id": 5, "a": {"b": [{"c": 5}]}},
        {"_id": 6, "x": [10, 20, 30]},
    ])
    assert ids(db.d.find({"a.b.c": 2})) == [2, 4]
    assert ids(db.d.find({"a.b.c": {"$gte": 3}})) == [4, 5]
    assert ids(db.d.find({"a.b": 1})) == [3]
    assert ids(db.d.find({"a.b.c": {"$exists": False}})) == [3, 6]
    assert ids(db.d.find({"x.1": 20})) == [6]
    assert ids(db.d.find({"a.0.b.c": 2})) == [4]


def test_array_element_match(db):
    db.a.insert_many([
        {"_id": 1, "tags": ["red", "blue"]},
        {"_id": 2, "tags": ["green"]},
        {"_id": 3, "tags": "red"},
        {"_id": 4, "tags": []},
        {"_id": 5, "tags": [["red"]]},
        {"_id": 6, "n": [1, 15]},
        {"_id": 7, "n": [7]},
    ])
    assert ids(db.a.find({"tags": "red"})) == [1, 3]
    assert ids(db.a.find({"tags": ["red"]})) == [5]  # whole-array equality, or an element equal to it
    assert ids(db.a.find({"tags": ["red", "blue"]})) == [1]
    assert ids(db.a.find({"tags": []})) == [4]
    assert ids(db.a.find({"tags": {"$in": ["green", "blue"]}})) == [1, 2]
    assert ids(db.a.find({"tags": {"$nin": ["red"]}})) == [2, 4, 5, 6, 7]
    # Each condition may be met by a different element...
    assert ids(db.a.find({"n": {"$gt": 5, "$lt": 10}})) == [6, 7]
    # ...unless $elemMatch ties them to one.
    assert ids(db.a.find({"n": {"$elemMatch": {"$gt": 5, "$lt": 10}}})) == [7]
    assert ids(db.a.find({"tags": {"$size": 2}})) == [1]
    assert ids(db.a.find({"tags": {"$all": ["blue", "red"]}})) == [1]


def test_regex_and_not(db):
    db.r.insert_many([{"_id": 1, "s": "Apple"}, {"_id": 2, "s": "apricot"}, {"_id": 3, "s": "banana"}, {"_id": 4, "s": 5}])
    assert ids(db.r.find({"s": {"$regex": "^ap"}})) == [2]
    assert ids(db.r.find({"s": {"$regex": "^ap", "$options": "i"}})) == [1, 2]
    assert ids(db.r.find({"s": Regex("an", "")})) == [3]
    assert ids(db.r.find({"s": {"$not": {"$regex": "^a", "$options": "i"}}})) == [3, 4]


def test_more_operators(nums):
    assert ids(nums.find({"$nor": [{"v": 1}, {"v": {"$type": "string"}}]})) == [2, 3, 4, 6, 7, 8, 9]
    assert ids(nums.find({"v": {"$type": "int"}})) == [1, 8]
    assert ids(nums.find({"v": {"$type": 18}})) == [2]  # long
    assert ids(nums.find({"v": {"$type": ["double", "decimal"]}})) == [3, 4, 10]
    assert ids(nums.find({"v": {"$type": "array"}})) == [8]
    assert ids(nums.find({"v": {"$mod": [2, 0]}})) == [2, 4, 8]
    assert ids(nums.find({"v": {"$all": []}})) == []
    assert ids(nums.find({"v": {"$size": 2}})) == [8]
    assert ids(nums.find({"v": {"$not": {"$gt": 1}}})) == [1, 5, 6, 7, 9, 10]


def test_bad_operator_is_bad_value(nums):
    with pytest.raises(OperationFailure) as ei:
        nums.find_one({"v": {"$frob": 1}})
    assert ei.value.code == 2
    assert ei.value.details["codeName"] == "BadValue"
    with pytest.raises(OperationFailure) as ei:
        nums.find_one({"$frob": [{}]})
    assert ei.value.code == 2


def test_bad_operator_argument(nums):
    with pytest.raises(OperationFailure) as ei:
        nums.find_one({"v": {"$in": 5}})
    assert ei.value.code == 2
    with pytest.raises(OperationFailure) as ei:
        nums.find_one({"$or": []})
    assert ei.value.code == 2


# --- sort order across types --------------------------------------------------------

def ordered_values():
    """One value of each BSON type, in MongoDB's documented ascending order:
    MinKey < null < numbers < string < object < array < binData < ObjectId <
    bool < date < timestamp < regex < MaxKey (and within a type, by value)."""
    epoch = datetime.datetime(1970, 1, 1)
    return [
        MinKey(),
        None,
        float("nan"),  # NaN sorts before every other number
        float("-inf"),
        -5,
        Int64(2),
        2.5,
        Decimal128("3"),
        float("inf"),
        "",
        "B",
        "a",
        "ab",
        {},
        {"a": 1},
        {"a": 2},
        {"b": 0},
        [[]],  # sorts by its smallest element, itself an array
        Binary(b"", 0),
        Binary(b"\x01", 0),
        Binary(b"\x00\x00", 0),  # shorter binary first, then subtype, then bytes
        ObjectId("000000000000000000000000"),
        ObjectId("ffffffffffffffffffffffff"),
        False,
        True,
        epoch - datetime.timedelta(days=1),
        epoch,
        datetime.datetime(2030, 1, 1),
        Timestamp(1, 1),
        Timestamp(1, 2),
        Timestamp(2, 0),
        Regex("a", ""),
        Regex("a", "i"),
        Regex("b", ""),
        MaxKey(),
    ]


@pytest.fixture
def mixed(db):
    vals = ordered_values()
    # Insert in a scrambled order so storage order cannot explain the result.
    order = list(range(len(vals)))
    order = order[::2][::-1] + order[1::2]
    db.m.insert_many([{"_id": i, "v": vals[i]} for i in order])
    return db.m, vals


def test_sort_order_across_types_ascending(mixed):
    coll, vals = mixed
    got = [d["_id"] for d in coll.find().sort("v", 1)]
    assert got == list(range(len(vals))), [repr(vals[i]) for i in got]


def test_sort_order_across_types_descending(mixed):
    coll, vals = mixed
    got = [d["_id"] for d in coll.find().sort("v", -1)]
    assert got == list(range(len(vals)))[::-1], [repr(vals[i]) for i in got]


def test_sort_order_with_batches(mixed):
    coll, vals = mixed
    got = [d["_id"] for d in coll.find(batch_size=4).sort([("v", 1)])]
    assert got == list(range(len(vals)))


def test_missing_sorts_with_null(db):
    db.s.insert_many([{"_id": 1, "v": 1}, {"_id": 2}, {"_id": 3, "v": MinKey()}, {"_id": 4, "v": "x"}])
    assert [d["_id"] for d in db.s.find().sort("v", 1)] == [3, 2, 1, 4]


def test_array_sort_uses_min_ascending_and_max_descending(db):
    db.s.insert_many([
        {"_id": "a", "v": [3, 10]},
        {"_id": "b", "v": 5},
        {"_id": "c", "v": [1, 7]},
        {"_id": "d", "v": []},
        {"_id": "e", "v": None},
    ])
    assert [d["_id"] for d in db.s.find().sort("v", 1)] == ["d", "e", "c", "a", "b"]
    assert [d["_id"] for d in db.s.find().sort("v", -1)] == ["a", "c", "b", "e", "d"]


def test_code_sorts_between_regex_and_max_key(db):
    db.s.insert_many([{"_id": 1, "v": MaxKey()}, {"_id": 2, "v": Code("x")}, {"_id": 3, "v": Regex("z", "")}])
    assert [d["_id"] for d in db.s.find().sort("v", 1)] == [3, 2, 1]


def test_range_query_over_mixed_types(mixed):
    coll, vals = mixed
    got = ids(coll.find({"v": {"$gte": "", "$lt": "b"}}))
    assert [vals[i] for i in got] == ["", "B", "a", "ab"]
    got = ids(coll.find({"v": {"$gt": datetime.datetime(1969, 12, 31, 12)}}))
    assert len(got) == 2
    got = ids(coll.find({"v": {"$lt": Timestamp(2, 0)}}))
    assert [vals[i] for i in got] == [Timestamp(1, 1), Timestamp(1, 2)]
