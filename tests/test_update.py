"""Updates: replacement, operators, upsert, multi, and their error codes."""
import datetime

import pytest
from bson import Decimal128, ObjectId, Timestamp
from bson.int64 import Int64
from pymongo.errors import DuplicateKeyError, OperationFailure, WriteError


@pytest.fixture
def c(db):
    db.c.insert_one({"_id": 1, "n": 5, "s": "str", "arr": [1, 2, 3], "sub": {"x": 1, "y": 2}})
    return db.c


def one(c):
    return c.find_one({"_id": 1})


def test_replacement_keeps_id(c):
    r = c.replace_one({"_id": 1}, {"only": "this"})
    assert (r.matched_count, r.modified_count) == (1, 1)
    assert one(c) == {"_id": 1, "only": "this"}
    assert list(one(c))[0] == "_id"


def test_set_unset(c):
    c.update_one({"_id": 1}, {"$set": {"n": 6, "sub.z": 3, "new.deep": True}, "$unset": {"s": ""}})
    assert one(c) == {"_id": 1, "n": 6, "arr": [1, 2, 3], "sub": {"x": 1, "y": 2, "z": 3}, "new": {"deep": True}}


def test_inc_mul_keep_numeric_types(c):
    c.update_one({"_id": 1}, {"$inc": {"n": 2, "fresh": 1}, "$mul": {"sub.x": 2.5}})
    d = one(c)
    assert d["n"] == 7 and type(d["n"]) is int
    assert d["fresh"] == 1
    assert d["sub"]["x"] == 2.5 and type(d["sub"]["x"]) is float
    c.update_one({"_id": 1}, {"$inc": {"n": Int64(1)}})
    assert type(one(c)["n"]) is Int64 and one(c)["n"] == 8


def test_inc_widens_numeric_types(db):
    db.c.insert_one({"_id": 1, "i32": 2**31 - 1, "i": 1, "j": 1, "neg": -2**31})
    db.c.update_one({"_id": 1}, {"$inc": {"i32": 1, "i": 0.5, "j": Decimal128("0.25"), "neg": -1}})
    d = db.c.find_one()
    assert d["i32"] == 2**31 and type(d["i32"]) is Int64  # int32 overflow becomes a long
    assert d["neg"] == -2**31 - 1 and type(d["neg"]) is Int64
    assert d["i"] == 1.5 and type(d["i"]) is float
    assert d["j"] == Decimal128("1.25")
    c = db.c
    c.update_one({"_id": 1}, {"$mul": {"i32": 2}})
    assert c.find_one()["i32"] == 2**32


def test_array_index_paths(c):
    c.update_one({"_id": 1}, {"$set": {"arr.1": 20}})
    assert one(c)["arr"] == [1, 20, 3]
    c.update_one({"_id": 1}, {"$set": {"arr.5": 6}})
    assert one(c)["arr"] == [1, 20, 3, None, None, 6]  # padded with nulls
    c.update_one({"_id": 1}, {"$unset": {"arr.0": ""}})
    assert one(c)["arr"] == [None, 20, 3, None, None, 6]  # $unset on an element leaves null


def test_unset_missing_field_is_no_op(c):
    r = c.update_one({"_id": 1}, {"$unset": {"nothere": ""}})
    assert (r.matched_count, r.modified_count) == (1, 0)


def test_current_date(c):
    c.update_one({"_id": 1}, {"$currentDate": {"when": True, "ts": {"$type": "timestamp"}}})
    d = one(c)
    assert isinstance(d["when"], datetime.datetime)
    assert isinstance(d["ts"], Timestamp) and d["ts"].time > 1_600_000_000


def test_set_keeps_field_order(c):
    c.update_one({"_id": 1}, {"$set": {"n": 6, "aaa": 1}})
    assert list(one(c).keys()) == ["_id", "n", "s", "arr", "sub", "aaa"]


def test_min_max(c):
    c.update_one({"_id": 1}, {"$min": {"n": 3}, "$max": {"sub.y": 10}})
    assert one(c)["n"] == 3 and one(c)["sub"]["y"] == 10
    r = c.update_one({"_id": 1}, {"$min": {"n": 100}})
    assert r.modified_count == 0


def test_array_operators(c):
    c.update_one({"_id": 1}, {"$push": {"arr": 4}})
    assert one(c)["arr"] == [1, 2, 3, 4]
    c.update_one({"_id": 1}, {"$push": {"arr": {"$each": [5, 6]}}})
    assert one(c)["arr"] == [1, 2, 3, 4, 5, 6]
    c.update_one({"_id": 1}, {"$addToSet": {"arr": 3}})
    assert one(c)["arr"] == [1, 2, 3, 4, 5, 6]
    c.update_one({"_id": 1}, {"$addToSet": {"arr": 7}})
    assert one(c)["arr"] == [1, 2, 3, 4, 5, 6, 7]
    c.update_one({"_id": 1}, {"$pull": {"arr": {"$gte": 5}}})
    assert one(c)["arr"] == [1, 2, 3, 4]
    c.update_one({"_id": 1}, {"$pop": {"arr": 1}})
    assert one(c)["arr"] == [1, 2, 3]


def test_rename(c):
    c.update_one({"_id": 1}, {"$rename": {"s": "t", "sub.x": "sub.w"}})
    d = one(c)
    assert "s" not in d and d["t"] == "str"
    assert d["sub"] == {"y": 2, "w": 1}


def test_no_op_update_counts_matched_not_modified(c):
    r = c.update_one({"_id": 1}, {"$set": {"n": 5}})
    assert (r.matched_count, r.modified_count) == (1, 0)


def test_update_missing_document(c):
    r = c.update_one({"_id": 2}, {"$set": {"n": 1}})
    assert (r.matched_count, r.modified_count, r.upserted_id) == (0, 0, None)


def test_upsert_uses_filter_equalities(db):
    r = db.c.update_one({"k": 7, "name": "x", "range": {"$gt": 1}}, {"$set": {"y": 1}, "$setOnInsert": {"born": True}}, upsert=True)
    assert r.matched_count == 0
    assert r.upserted_id is not None
    doc = db.c.find_one({"_id": r.upserted_id})
    assert doc == {"_id": r.upserted_id, "k": 7, "name": "x", "y": 1, "born": True}
    # Now it matches: $setOnInsert does nothing.
    r = db.c.update_one({"k": 7, "name": "x"}, {"$set": {"y": 2}, "$setOnInsert": {"born": False}}, upsert=True)
    assert (r.matched_count, r.modified_count, r.upserted_id) == (1, 1, None)
    assert db.c.find_one({"k": 7})["born"] is True


def test_upsert_with_id_in_filter_and_dotted_equality(db):
    r = db.c.update_one({"_id": "abc", "a.b": 1}, {"$inc": {"n": 1}}, upsert=True)
    assert r.upserted_id == "abc"
    assert db.c.find_one() == {"_id": "abc", "a": {"b": 1}, "n": 1}


def test_upsert_takes_eq_and_and_equalities(db):
    r = db.c.update_one({"$and": [{"a": {"$eq": 3}}, {"b": "x"}], "c": {"$in": [1, 2]}}, {"$set": {"d": 1}}, upsert=True)
    doc = db.c.find_one({"_id": r.upserted_id}, {"_id": 0})
    assert doc == {"a": 3, "b": "x", "d": 1}


def test_upsert_generates_object_id(db):
    r = db.c.update_one({"k": 1}, {"$set": {"v": 1}}, upsert=True)
    assert isinstance(r.upserted_id, ObjectId)
    assert list(db.c.find_one())[0] == "_id"


def test_upsert_conflicting_with_unique_index(db):
    db.c.create_index("u", unique=True)
    db.c.insert_one({"k": 1, "u": 7})
    with pytest.raises(DuplicateKeyError):
        db.c.update_one({"k": 2}, {"$set": {"u": 7}}, upsert=True)
    with pytest.raises(DuplicateKeyError):
        db.c.find_one_and_update({"k": 3}, {"$set": {"u": 7}}, upsert=True)
    assert db.c.count_documents({}) == 1


def test_upsert_replacement(db):
    r = db.c.replace_one({"_id": 9}, {"v": 1}, upsert=True)
    assert r.upserted_id == 9
    assert db.c.find_one() == {"_id": 9, "v": 1}


def test_update_many_counts(db):
    db.c.insert_many([{"_id": i, "flag": i < 3} for i in range(10)])
    r = db.c.update_many({}, {"$set": {"flag": True}})
    assert (r.matched_count, r.modified_count) == (10, 7)
    assert db.c.count_documents({"flag": True}) == 10
    r = db.c.update_many({"_id": {"$gte": 8}}, {"$inc": {"n": 1}})
    assert (r.matched_count, r.modified_count) == (2, 2)


def test_update_command_reply(db):
    db.c.insert_many([{"_id": 1}, {"_id": 2}])
    r = db.command("update", "c", updates=[
        {"q": {"_id": 1}, "u": {"$set": {"a": 1}}},
        {"q": {"_id": 3}, "u": {"$set": {"a": 3}}, "upsert": True},
        {"q": {}, "u": {"$set": {"b": 1}}, "multi": True},
    ])
    assert r["n"] == 1 + 1 + 3
    assert r["nModified"] == 1 + 3
    assert r["upserted"] == [{"index": 1, "_id": 3}]


# --- errors -------------------------------------------------------------------------

def write_error(fn):
    with pytest.raises(WriteError) as ei:
        fn()
    return ei.value.code


def test_inc_on_string_is_type_mismatch(c):
    assert write_error(lambda: c.update_one({"_id": 1}, {"$inc": {"s": 1}})) == 14
    assert one(c)["s"] == "str"


def test_modifying_id_is_immutable_field(c):
    assert write_error(lambda: c.update_one({"_id": 1}, {"$set": {"_id": 2}})) == 66
    assert write_error(lambda: c.replace_one({"_id": 1}, {"_id": 2, "x": 1})) == 66
    assert c.find_one({"_id": 2}) is None and one(c)["n"] == 5


def test_conflicting_paths(c):
    assert write_error(lambda: c.update_one({"_id": 1}, {"$set": {"n": 1}, "$inc": {"n": 1}})) == 40
    assert write_error(lambda: c.update_one({"_id": 1}, {"$set": {"sub": 1, "sub.x": 2}})) == 40
    assert one(c)["n"] == 5


def test_dollar_field_names(c):
    assert write_error(lambda: c.update_one({"_id": 1}, {"$set": {"$bad": 1}})) == 52
    # pymongo refuses a replacement with $-keys, so send the command itself.
    r = c.database.command("update", "c", updates=[{"q": {"_id": 1}, "u": {"ok": 1, "$bad": 1}}])
    assert r["writeErrors"][0]["code"] == 52
    assert r["n"] == 0
    assert one(c)["n"] == 5


def test_unknown_update_operator(c):
    assert write_error(lambda: c.update_one({"_id": 1}, {"$frob": {"n": 1}})) == 9  # FailedToParse


def test_empty_update_document_rejected(c):
    with pytest.raises((ValueError, OperationFailure)):
        c.update_one({"_id": 1}, {})


def test_ordered_update_stops_at_first_error(db):
    db.c.insert_many([{"_id": 1, "s": "x"}, {"_id": 2, "n": 1}])
    r = db.command("update", "c", ordered=True, updates=[
        {"q": {"_id": 1}, "u": {"$inc": {"s": 1}}},
        {"q": {"_id": 2}, "u": {"$inc": {"n": 1}}},
    ])
    assert [(e["index"], e["code"]) for e in r["writeErrors"]] == [(0, 14)]
    assert db.c.find_one({"_id": 2})["n"] == 1
    r = db.command("update", "c", ordered=False, updates=[
        {"q": {"_id": 1}, "u": {"$inc": {"s": 1}}},
        {"q": {"_id": 2}, "u": {"$inc": {"n": 1}}},
    ])
    assert [(e["index"], e["code"]) for e in r["writeErrors"]] == [(0, 14)]
    assert db.c.find_one({"_id": 2})["n"] == 2
