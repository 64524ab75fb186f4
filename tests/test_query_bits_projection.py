"""Bitwise query operators and the positional, $elemMatch and $slice find
projections, checked against MongoDB's documented results and codes."""
import pytest
from bson import Binary, Decimal128
from bson.int64 import Int64
from pymongo import ReturnDocument
from pymongo.errors import OperationFailure


@pytest.fixture
def bits(db):
    # The manual's collection: a: 54 (00110110), 20 (00010100), 20.0, BinData(0, "Zg==") (01100110).
    db.bits.insert_many([
        {"_id": 1, "a": 54, "binaryValueofA": "00110110"},
        {"_id": 2, "a": 20, "binaryValueofA": "00010100"},
        {"_id": 3, "a": 20.0, "binaryValueofA": "00010100"},
        {"_id": 4, "a": Binary(b"\x66", 0), "binaryValueofA": "01100110"},
    ])
    return db.bits


def ids(c, f):
    return sorted(d["_id"] for d in c.find(f))


@pytest.mark.parametrize("op,arg,want", [
    ("$bitsAllSet", [1, 5], [1, 4]),
    ("$bitsAllSet", 50, [1]),
    ("$bitsAllSet", Binary(b"\x30", 0), [1]),
    ("$bitsAnySet", [1, 5], [1, 4]),
    ("$bitsAnySet", 35, [1, 4]),
    ("$bitsAnySet", Binary(b"\x30", 0), [1, 2, 3, 4]),
    ("$bitsAllClear", [1, 5], [2, 3]),
    ("$bitsAllClear", 35, [2, 3]),
    ("$bitsAllClear", Binary(b"\x20", 0), [2, 3]),
    ("$bitsAnyClear", [1, 5], [2, 3]),
    ("$bitsAnyClear", 35, [1, 2, 3, 4]),
    ("$bitsAnyClear", Binary(b"\x30", 0), [2, 3, 4]),
])
def test_bits_operators_manual_examples(bits, op, arg, want):
    assert ids(bits, {"a": {op: arg}}) == want


def test_bits_sign_extension_and_non_integers(db):
    db.neg.insert_many([{"_id": 1, "a": -5}, {"_id": 2, "a": 5}, {"_id": 3, "a": 5.5},
                        {"_id": 4, "a": float("nan")}, {"_id": 5, "a": Int64(-1)}, {"_id": 6, "a": "5"},
                        {"_id": 7, "a": Decimal128("5")}, {"_id": 8, "a": 1e30}, {"_id": 9, "a": [8, 1]}])
    # Bit 200 is set in negative numbers (sign extension), clear in positive ones.
    assert ids(db.neg, {"a": {"$bitsAllSet": [200]}}) == [1, 5]
    assert ids(db.neg, {"a": {"$bitsAllClear": [200]}}) == [2, 7, 9]
    # Fractional, NaN, too large and non-numbers never match, even $bitsAllClear.
    assert ids(db.neg, {"a": {"$bitsAllClear": 0}}) == [1, 2, 5, 7, 9]
    assert ids(db.neg, {"a": {"$bitsAnySet": 1}}) == [1, 2, 5, 7, 9]


def test_bits_with_an_index_never_wrong(db):
    db.bidx.create_index("a")
    db.bidx.insert_many([{"_id": i, "a": i} for i in range(32)])
    assert ids(db.bidx, {"a": {"$bitsAllSet": 5, "$gte": 10}}) == [13, 15, 21, 23, 29, 31]
    assert db.bidx.count_documents({"a": {"$bitsAnyClear": [0]}}) == 16


@pytest.mark.parametrize("arg,code", [
    ("x", 2), (-1, 9), (1.5, 9), ([-1], 9), ([1.5], 9), ([True], 2),
])
def test_bits_operand_errors(bits, arg, code):
    with pytest.raises(OperationFailure) as e:
        list(bits.find({"a": {"$bitsAllSet": arg}}))
    assert e.value.code == code


# --- projections --------------------------------------------------------------

@pytest.fixture
def students(db):
    # The manual's $ projection example.
    db.students.insert_many([
        {"_id": 1, "semester": 1, "grades": [70, 87, 90]},
        {"_id": 2, "semester": 1, "grades": [90, 88, 92]},
        {"_id": 3, "semester": 1, "grades": [85, 100, 90]},
        {"_id": 4, "semester": 2, "grades": [79, 85, 80]},
        {"_id": 5, "semester": 2, "grades": [88, 88, 92]},
        {"_id": 6, "semester": 2, "grades": [95, 90, 96]},
    ])
    return db.students


def test_positional_projection(students):
    got = list(students.find({"semester": 1, "grades": {"$gte": 85}}, {"grades.$": 1}).sort("_id"))
    assert got == [{"_id": 1, "grades": [87]}, {"_id": 2, "grades": [90]}, {"_id": 3, "grades": [85]}]


def test_positional_projection_of_embedded_documents(db):
    db.g.insert_one({"_id": 7, "grades": [{"grade": 80, "mean": 75}, {"grade": 85, "mean": 90}, {"grade": 85, "mean": 85}]})
    assert db.g.find_one({"grades.mean": {"$gt": 85}}, {"grades.$": 1}) == {"_id": 7, "grades": [{"grade": 85, "mean": 90}]}
    assert db.g.find_one({"grades": {"$elemMatch": {"grade": 85, "mean": 85}}}, {"grades.$": 1, "_id": 0}) == \
        {"grades": [{"grade": 85, "mean": 85}]}
    doc = db.g.find_one_and_update({"grades.grade": 85}, {"$set": {"seen": True}}, projection={"grades.$": 1},
                                   return_document=ReturnDocument.BEFORE)
    assert doc == {"_id": 7, "grades": [{"grade": 85, "mean": 90}]}


@pytest.mark.parametrize("projection,filter_,code", [
    ({"grades.$": 1, "semester.$": 1}, {"grades": 90, "semester": 1}, 31276),
    ({"grades.$": 1}, {"semester": 1}, 31277),
    ({"grades.$": {"x": 1}}, {"grades": 90}, 31271),
    ({"grades.$": 1, "semester": 0}, {"grades": 90}, 31254),
    ({"grades": {"$elemMatch": {"$gt": 1}}, "semester.$": 1}, {"semester": 1}, 31256),
])
def test_positional_projection_errors(students, projection, filter_, code):
    with pytest.raises(OperationFailure) as e:
        list(students.find(filter_, projection))
    assert e.value.code == code


def test_positional_projection_without_a_recorded_match_fails(students):
    with pytest.raises(OperationFailure) as e:
        list(students.find({"grades": [70, 87, 90]}, {"grades.$": 1}))
    assert e.value.code == 51246


def test_elem_match_and_slice_projections(db):
    db.schools.insert_many([
        {"_id": 1, "zipcode": "63109", "students": [{"name": "john", "school": 102, "age": 10},
                                                   {"name": "jess", "school": 102, "age": 11},
                                                   {"name": "jeff", "school": 108, "age": 15}]},
        {"_id": 3, "zipcode": "63109", "students": [{"name": "ajax", "school": 100, "age": 7},
                                                   {"name": "achilles", "school": 100, "age": 8}]},
    ])
    got = list(db.schools.find({"zipcode": "63109"}, {"students": {"$elemMatch": {"school": 102}}}).sort("_id"))
    assert got == [{"_id": 1, "students": [{"name": "john", "school": 102, "age": 10}]}, {"_id": 3}]
    doc = db.schools.find_one({"_id": 1}, {"students": {"$slice": [1, 1]}, "zipcode": 0})
    assert doc == {"_id": 1, "students": [{"name": "jess", "school": 102, "age": 11}]}
    assert db.schools.find_one({"_id": 1}, {"students": {"$slice": -1}})["students"][0]["name"] == "jeff"
    assert db.schools.find_one({"_id": 1}, {"students": {"$slice": 1.9}, "zipcode": 1})["students"][0]["name"] == "john"
    for spec, code in [({"$slice": [1, 0]}, 31259), ({"$slice": [1]}, 31272), ({"$slice": "x"}, 31273),
                       ({"$elemMatch": 1}, 31274)]:
        with pytest.raises(OperationFailure) as e:
            db.schools.find_one({}, {"students": spec})
        assert e.value.code == code


def test_elem_match_projection_comes_after_other_fields(db):
    # The manual (4.4+): the $elemMatch field is returned after the other included fields.
    db.players.insert_one({"_id": 1, "name": "player1", "games": [{"game": "abc", "score": 8}, {"game": "xyz", "score": 5}],
                           "joined": "2020-01-01", "lastLogin": "2020-05-01"})
    doc = db.players.find_one({}, {"games": {"$elemMatch": {"score": {"$gt": 5}}}, "joined": 1, "lastLogin": 1})
    assert list(doc) == ["_id", "joined", "lastLogin", "games"]
    assert doc["games"] == [{"game": "abc", "score": 8}]


def test_slice_of_an_embedded_array(db):
    # The manual: in an inclusion projection the other fields of the embedded document are not returned.
    db.inventory.insert_one({"_id": 1, "item": "socks", "qty": 100,
                             "details": {"colors": ["blue", "red"], "sizes": ["S", "M", "L"]}})
    assert db.inventory.find_one({}, {"qty": 1, "details.colors": {"$slice": 1}}) == \
        {"_id": 1, "qty": 100, "details": {"colors": ["blue"]}}
    assert db.inventory.find_one({}, {"details.colors": {"$slice": 1}}) == \
        {"_id": 1, "item": "socks", "qty": 100, "details": {"colors": ["blue"], "sizes": ["S", "M", "L"]}}
