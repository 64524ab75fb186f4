"""Insert, find, delete, findAndModify, counting and aggregation.

Cursors are in test_cursors.py, update operators in test_update.py, query
operators and ordering in test_query.py.
"""
import bson
import pytest
from bson import SON, ObjectId
from bson.codec_options import CodecOptions
from bson.int64 import Int64
from bson.raw_bson import RawBSONDocument
from pymongo import ASCENDING, DESCENDING, ReturnDocument
from pymongo.errors import BulkWriteError, DuplicateKeyError, OperationFailure


# --- insert ------------------------------------------------------------------------

def test_insert_one_assigns_object_id(db):
    r = db.c.insert_one({"x": 1})
    doc = db.c.find_one()
    assert doc == {"_id": r.inserted_id, "x": 1}
    assert list(doc)[0] == "_id"


def test_insert_duplicate_id(db):
    db.c.insert_one({"_id": 1})
    with pytest.raises(DuplicateKeyError) as ei:
        db.c.insert_one({"_id": 1, "other": True})
    assert ei.value.code == 11000
    assert db.c.find_one({"_id": 1}) == {"_id": 1}


def test_insert_ordered_stops_at_duplicate_in_batch(db):
    docs = [{"_id": 1}, {"_id": 2}, {"_id": 1}, {"_id": 3}]
    with pytest.raises(BulkWriteError) as ei:
        db.c.insert_many(docs, ordered=True)
    res = ei.value.details
    assert res["nInserted"] == 2
    assert [(e["index"], e["code"]) for e in res["writeErrors"]] == [(2, 11000)]
    assert sorted(d["_id"] for d in db.c.find()) == [1, 2]


def test_insert_unordered_continues_past_duplicates(db):
    db.c.insert_one({"_id": 5})
    docs = [{"_id": 4}, {"_id": 5}, {"_id": 6}, {"_id": 4}, {"_id": 7}]
    with pytest.raises(BulkWriteError) as ei:
        db.c.insert_many(docs, ordered=False)
    res = ei.value.details
    assert res["nInserted"] == 3
    assert [(e["index"], e["code"]) for e in res["writeErrors"]] == [(1, 11000), (3, 11000)]
    assert sorted(d["_id"] for d in db.c.find()) == [4, 5, 6, 7]


def test_insert_command_reply(db):
    db.c.insert_one({"_id": "x"})
    r = db.command("insert", "c", documents=[{"_id": "y"}, {"_id": "x"}, {"_id": "z"}], ordered=False)
    assert r["n"] == 2
    assert len(r["writeErrors"]) == 1
    we = r["writeErrors"][0]
    assert (we["index"], we["code"]) == (1, 11000)
    assert "E11000" in we["errmsg"]


def test_id_is_moved_to_the_front(db):
    raw = bson.encode(SON([("a", 1), ("_id", 5), ("b", 2)]))
    db.c.insert_one(RawBSONDocument(raw))
    got = db.get_collection("c", codec_options=CodecOptions(document_class=SON)).find_one()
    assert list(got.items()) == [("_id", 5), ("a", 1), ("b", 2)]


def test_server_generates_missing_id(db):
    # The insert command itself, so that pymongo does not add an _id.
    db.command("insert", "c", documents=[SON([("a", 1)])])
    got = db.get_collection("c", codec_options=CodecOptions(document_class=SON)).find_one()
    assert list(got.keys()) == ["_id", "a"]
    assert isinstance(got["_id"], ObjectId)


def test_insert_many_1000(db):
    r = db.c.insert_many([{"i": i, "s": str(i)} for i in range(1000)])
    assert len(r.inserted_ids) == 1000
    assert len(set(r.inserted_ids)) == 1000
    assert db.c.count_documents({}) == 1000
    assert db.c.estimated_document_count() == 1000
    assert sorted(d["i"] for d in db.c.find({}, {"i": 1})) == list(range(1000))


# --- find --------------------------------------------------------------------------

@pytest.fixture
def people(db):
    db.p.insert_many([
        {"_id": 1, "name": "ann", "age": 31, "city": "oslo", "tags": ["a", "b"]},
        {"_id": 2, "name": "bob", "age": 25, "city": "rome"},
        {"_id": 3, "name": "cid", "age": 31, "city": "rome", "tags": []},
        {"_id": 4, "name": "dee", "age": 19, "city": "oslo"},
        {"_id": 5, "name": "eve", "age": 44, "city": "lima", "tags": ["b"]},
    ])
    return db.p


def test_find_filter(people):
    assert sorted(d["_id"] for d in people.find({"city": "rome"})) == [2, 3]
    assert [d["_id"] for d in people.find({"city": "oslo", "age": 19})] == [4]
    assert list(people.find({"city": "paris"})) == []
    assert people.find_one({"_id": 5})["name"] == "eve"


def test_projection_inclusion(people):
    assert people.find_one({"_id": 1}, {"name": 1, "age": 1}) == {"_id": 1, "name": "ann", "age": 31}


def test_projection_exclusion(people):
    assert people.find_one({"_id": 1}, {"tags": 0, "city": 0}) == {"_id": 1, "name": "ann", "age": 31}


def test_projection_id_exclusion(people):
    assert people.find_one({"_id": 2}, {"_id": 0, "name": 1}) == {"name": "bob"}
    assert people.find_one({"_id": 2}, {"_id": 0}) == {"name": "bob", "age": 25, "city": "rome"}


def test_projection_mixing_is_rejected(people):
    with pytest.raises(OperationFailure):
        people.find_one({}, {"name": 1, "age": 0})


def test_sort(people):
    assert [d["age"] for d in people.find().sort("age", ASCENDING)] == [19, 25, 31, 31, 44]
    assert [d["age"] for d in people.find().sort("age", DESCENDING)] == [44, 31, 31, 25, 19]
    compound = people.find().sort([("age", DESCENDING), ("name", ASCENDING)])
    assert [d["_id"] for d in compound] == [5, 1, 3, 2, 4]
    compound = people.find().sort([("city", ASCENDING), ("age", DESCENDING)])
    assert [d["_id"] for d in compound] == [5, 1, 4, 3, 2]


def test_skip_limit(people):
    page = people.find().sort("_id", 1).skip(1).limit(2)
    assert [d["_id"] for d in page] == [2, 3]
    assert [d["_id"] for d in people.find().sort("_id", -1).limit(1)] == [5]
    assert list(people.find().skip(10)) == []


def test_find_command_limit_and_single_batch(people):
    r = people.database.command("find", "p", sort={"_id": 1}, batchSize=2, singleBatch=True)
    assert r["cursor"]["id"] == 0
    assert [d["_id"] for d in r["cursor"]["firstBatch"]] == [1, 2]
    r = people.database.command("find", "p", sort={"_id": 1}, limit=3)
    assert [d["_id"] for d in r["cursor"]["firstBatch"]] == [1, 2, 3]
    assert r["cursor"]["id"] == 0
    assert r["cursor"]["ns"] == people.full_name


def test_negative_limit_is_one_batch(people):
    cur = people.find().sort("_id", 1).limit(-3)
    assert [d["_id"] for d in cur] == [1, 2, 3]
    assert cur.cursor_id in (None, 0)  # nothing left open on the server
    # singleBatch: a batch smaller than the limit is all there is.
    r = people.database.command("find", "p", sort={"_id": 1}, limit=3, singleBatch=True, batchSize=1)
    assert ([d["_id"] for d in r["cursor"]["firstBatch"]], r["cursor"]["id"]) == ([1], 0)


def test_sort_on_dotted_path_into_arrays(db):
    db.s.insert_many([
        {"_id": 1, "a": [{"b": 5}, {"b": 1}]},
        {"_id": 2, "a": {"b": 3}},
        {"_id": 3, "a": [{"b": 4}, {"b": 9}]},
    ])
    assert [d["_id"] for d in db.s.find().sort("a.b", 1)] == [1, 2, 3]  # by the smallest b
    assert [d["_id"] for d in db.s.find().sort("a.b", -1)] == [3, 1, 2]  # by the largest b


def test_find_on_missing_collection(db):
    assert list(db.nothing.find()) == []
    assert db.nothing.find_one() is None
    assert db.nothing.count_documents({}) == 0


# --- delete ------------------------------------------------------------------------

def test_delete_one_and_many(people):
    assert people.delete_one({"city": "rome"}).deleted_count == 1
    assert people.count_documents({"city": "rome"}) == 1
    old = people.count_documents({"age": {"$gte": 30}})
    assert people.delete_many({"age": {"$gte": 30}}).deleted_count == old
    assert people.count_documents({"age": {"$gte": 30}}) == 0
    left = people.count_documents({})
    assert left == 4 - old
    assert people.delete_many({}).deleted_count == left
    assert people.count_documents({}) == 0


def test_delete_command_limits(people):
    db = people.database
    r = db.command("delete", "p", deletes=[{"q": {"city": "oslo"}, "limit": 1}, {"q": {"city": "rome"}, "limit": 0}])
    assert r["n"] == 3
    assert people.count_documents({}) == 2
    try:
        r = db.command("delete", "p", deletes=[{"q": {}, "limit": 5}])
        codes = [e["code"] for e in r.get("writeErrors", [])]
    except OperationFailure as e:
        codes = [e.code]
    assert codes == [9]  # FailedToParse: limit must be 0 or 1
    assert people.count_documents({}) == 2


# --- findAndModify -------------------------------------------------------------------

def test_find_one_and_update_before_after(people):
    before = people.find_one_and_update({"_id": 2}, {"$inc": {"age": 1}})
    assert before["age"] == 25
    after = people.find_one_and_update({"_id": 2}, {"$inc": {"age": 1}}, return_document=ReturnDocument.AFTER)
    assert after["age"] == 27
    assert people.find_one({"_id": 2})["age"] == 27
    assert people.find_one_and_update({"_id": 99}, {"$set": {"x": 1}}) is None


def test_find_one_and_update_sort_picks_first(people):
    doc = people.find_one_and_update({"age": 31}, {"$set": {"picked": True}}, sort=[("name", DESCENDING)],
                                     return_document=ReturnDocument.AFTER)
    assert doc["_id"] == 3 and doc["picked"] is True
    assert people.count_documents({"picked": True}) == 1


def test_find_one_and_update_upsert(db):
    doc = db.c.find_one_and_update({"k": "new"}, {"$set": {"v": 1}}, upsert=True, return_document=ReturnDocument.AFTER)
    assert doc["k"] == "new" and doc["v"] == 1 and "_id" in doc
    assert db.c.find_one_and_update({"k": "new2"}, {"$set": {"v": 2}}, upsert=True) is None
    assert db.c.count_documents({}) == 2


def test_find_one_and_update_projection(people):
    doc = people.find_one_and_update({"_id": 1}, {"$set": {"age": 32}}, projection={"age": 1, "_id": 0},
                                     return_document=ReturnDocument.AFTER)
    assert doc == {"age": 32}


def test_find_one_and_delete(people):
    doc = people.find_one_and_delete({"city": "oslo"}, sort=[("age", ASCENDING)])
    assert doc["_id"] == 4
    assert people.find_one({"_id": 4}) is None
    assert people.count_documents({}) == 4
    assert people.find_one_and_delete({"_id": 42}) is None


def test_find_one_and_replace(people):
    old = people.find_one_and_replace({"_id": 3}, {"name": "CID"})
    assert old["name"] == "cid"
    assert people.find_one({"_id": 3}) == {"_id": 3, "name": "CID"}
    new = people.find_one_and_replace({"_id": 3}, {"name": "C"}, return_document=ReturnDocument.AFTER)
    assert new == {"_id": 3, "name": "C"}


def test_find_and_modify_raw_reply(people):
    r = people.database.command("findAndModify", "p", query={"_id": 1}, update={"$set": {"x": 1}}, new=True)
    assert r["lastErrorObject"]["n"] == 1
    assert r["lastErrorObject"]["updatedExisting"] is True
    assert r["value"]["x"] == 1
    r = people.database.command("findAndModify", "p", query={"_id": 77}, update={"$set": {"x": 1}}, upsert=True, new=True)
    assert r["lastErrorObject"]["updatedExisting"] is False
    assert r["lastErrorObject"]["upserted"] == 77
    assert r["value"] == {"_id": 77, "x": 1}


# --- counting and aggregation ---------------------------------------------------------

def test_count_documents(people):
    assert people.count_documents({}) == 5
    assert people.count_documents({"age": 31}) == 2
    assert people.count_documents({}, skip=1, limit=3) == 3
    assert people.count_documents({}, skip=4) == 1
    assert people.count_documents({"age": {"$gt": 100}}) == 0
    assert people.estimated_document_count() == 5


def test_count_command(people):
    assert people.database.command("count", "p", query={"city": "oslo"})["n"] == 2
    assert people.database.command("count", "nothing")["n"] == 0


def test_aggregate_group(people):
    rows = list(people.aggregate([
        {"$match": {"age": {"$gte": 20}}},
        {"$group": {"_id": "$city", "n": {"$sum": 1}, "total": {"$sum": "$age"}, "avg": {"$avg": "$age"}}},
        {"$sort": {"_id": 1}},
    ]))
    assert rows == [
        {"_id": "lima", "n": 1, "total": 44, "avg": 44.0},
        {"_id": "oslo", "n": 1, "total": 31, "avg": 31.0},
        {"_id": "rome", "n": 2, "total": 56, "avg": 28.0},
    ]


def test_aggregate_count_sort_limit(people):
    assert list(people.aggregate([{"$match": {"city": "oslo"}}, {"$count": "n"}])) == [{"n": 2}]
    assert list(people.aggregate([{"$match": {"city": "none"}}, {"$count": "n"}])) == []
    top = list(people.aggregate([{"$sort": {"age": -1, "_id": 1}}, {"$limit": 2}, {"$project": {"name": 1, "_id": 0}}]))
    assert top == [{"name": "eve"}, {"name": "ann"}]


def test_aggregate_group_null_id(people):
    rows = list(people.aggregate([{"$group": {"_id": None, "max": {"$max": "$age"}, "min": {"$min": "$age"}}}]))
    assert rows == [{"_id": None, "max": 44, "min": 19}]


def test_aggregate_group_by_compound_key(people):
    rows = list(people.aggregate([
        {"$group": {"_id": {"city": "$city", "age": "$age"}, "names": {"$push": "$name"}}},
        {"$sort": {"_id.city": 1, "_id.age": 1}},
    ]))
    assert [(r["_id"]["city"], r["_id"]["age"], r["names"]) for r in rows] == [
        ("lima", 44, ["eve"]), ("oslo", 19, ["dee"]), ("oslo", 31, ["ann"]), ("rome", 25, ["bob"]), ("rome", 31, ["cid"]),
    ]


def test_aggregate_sum_types(db):
    db.c.insert_many([{"g": 1, "v": 2**31 - 1}, {"g": 1, "v": 1}, {"g": 2, "v": 1.5}, {"g": 2, "v": 1},
                      {"g": 3, "v": "text"}])
    rows = {r["_id"]: r for r in db.c.aggregate([{"$group": {"_id": "$g", "s": {"$sum": "$v"}, "a": {"$avg": "$v"}}}])}
    assert rows[1]["s"] == 2**31 and type(rows[1]["s"]) is Int64  # int32 overflow widens
    assert rows[2]["s"] == 2.5 and type(rows[2]["s"]) is float
    assert rows[3]["s"] == 0 and rows[3]["a"] is None  # non-numbers are ignored


def test_aggregate_cursor_batches(db):
    db.c.insert_many([{"_id": i} for i in range(95)])
    got = [d["_id"] for d in db.c.aggregate([{"$sort": {"_id": -1}}], batchSize=10)]
    assert got == list(range(94, -1, -1))


def test_aggregate_unknown_stage(people):
    with pytest.raises(OperationFailure):
        list(people.aggregate([{"$frobnicate": {}}]))
