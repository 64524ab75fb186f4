"""Positional updates ($, $[], $[<identifier>] with arrayFilters), $bit and
pipeline-style updates, checked against MongoDB's documented results and
error codes. A refused update changes nothing."""
import datetime
import uuid

import bson
import pytest
from bson.binary import UUID_SUBTYPE, Binary
from bson.int64 import Int64
from pymongo import ReturnDocument, UpdateMany, UpdateOne
from pymongo.errors import BulkWriteError, OperationFailure, WriteError


@pytest.fixture
def c(db):
    return db.pos


def refused(c, code, fn):
    """fn must fail with code and leave the collection as it was."""
    before = list(c.find().sort("_id"))
    with pytest.raises((OperationFailure, BulkWriteError)) as e:
        fn()
    err = e.value
    got = err.details["writeErrors"][0]["code"] if isinstance(err, BulkWriteError) else err.code
    assert got == code, err.details
    assert list(c.find().sort("_id")) == before
    return err


# --- positional $ -------------------------------------------------------------

def test_positional_updates_first_matched_element(c):
    # The manual's example: students.updateOne({_id: 1, grades: 80}, {$set: {"grades.$": 82}})
    c.insert_many([{"_id": 1, "grades": [85, 80, 80]}, {"_id": 2, "grades": [88, 90, 92]}])
    r = c.update_one({"_id": 1, "grades": 80}, {"$set": {"grades.$": 82}})
    assert (r.matched_count, r.modified_count) == (1, 1)
    assert c.find_one({"_id": 1})["grades"] == [85, 82, 80]


def test_positional_on_embedded_documents_and_elem_match(c):
    c.insert_one({"_id": 4, "grades": [{"grade": 80, "mean": 75, "std": 8},
                                       {"grade": 85, "mean": 90, "std": 5},
                                       {"grade": 85, "mean": 85, "std": 8}]})
    c.update_one({"_id": 4, "grades.grade": 85}, {"$set": {"grades.$.std": 6}})
    assert [g["std"] for g in c.find_one()["grades"]] == [8, 6, 8]
    c.update_one({"_id": 4, "grades": {"$elemMatch": {"grade": {"$lte": 90}, "mean": {"$gt": 80}}}},
                 {"$set": {"grades.$.std": 7}})
    assert [g["std"] for g in c.find_one()["grades"]] == [8, 7, 8]


def test_positional_multi_uses_each_documents_match(c):
    c.insert_many([{"_id": 1, "a": [1, 5]}, {"_id": 2, "a": [5, 1]}])
    r = c.update_many({"a": 5}, {"$inc": {"a.$": 10}})
    assert r.modified_count == 2
    assert [d["a"] for d in c.find().sort("_id")] == [[1, 15], [15, 1]]


def test_positional_errors_change_nothing(c):
    c.insert_one({"_id": 1, "a": [1, 2]})
    e = refused(c, 2, lambda: c.update_one({"_id": 1}, {"$set": {"a.$": 9}}))
    assert "The positional operator did not find the match needed from the query" in str(e)
    refused(c, 2, lambda: c.update_one({"a": 1}, {"$set": {"a.$.b.$": 9}}))  # too many $
    refused(c, 2, lambda: c.update_one({"a": 1}, {"$set": {"$": 9}}))  # $ first
    # An upsert that inserts has no match for $.
    refused(c, 2, lambda: c.update_one({"a": 7}, {"$set": {"a.$": 9}}, upsert=True))


def test_positional_find_and_modify(c):
    c.insert_one({"_id": 1, "items": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 1}]})
    doc = c.find_one_and_update({"items.sku": "b"}, {"$inc": {"items.$.qty": 4}},
                                return_document=ReturnDocument.AFTER)
    assert doc["items"][1]["qty"] == 5 and doc["items"][0]["qty"] == 1


# --- $[] and $[<identifier>] --------------------------------------------------

def test_all_positional(c):
    c.insert_many([{"_id": 1, "grades": [85, 82, 80]}, {"_id": 2, "grades": [88, 90, 92]}])
    c.update_many({}, {"$inc": {"grades.$[]": 10}})
    assert [d["grades"] for d in c.find().sort("_id")] == [[95, 92, 90], [98, 100, 102]]
    c.insert_one({"_id": 3, "g": [{"v": 1}, {"v": 2}]})
    c.update_one({"_id": 3}, {"$set": {"g.$[].w": 0}})
    assert c.find_one({"_id": 3})["g"] == [{"v": 1, "w": 0}, {"v": 2, "w": 0}]


def test_array_filters(c):
    # The manual's example: {$set: {"grades.$[element]": 100}}, arrayFilters [{element: {$gte: 100}}]
    c.insert_many([{"_id": 1, "grades": [95, 92, 90]}, {"_id": 2, "grades": [98, 100, 102]},
                   {"_id": 3, "grades": [95, 110, 100]}])
    r = c.update_many({}, {"$set": {"grades.$[element]": 100}}, array_filters=[{"element": {"$gte": 100}}])
    assert r.modified_count == 2
    assert [d["grades"] for d in c.find().sort("_id")] == [[95, 92, 90], [98, 100, 100], [95, 100, 100]]


def test_array_filters_on_documents_and_nested(c):
    c.insert_one({"_id": 1, "a": [{"b": 0, "c": [{"d": 0}, {"d": 1}]}, {"b": 1, "c": [{"d": 0}, {"d": 1}]}]})
    c.update_one({"_id": 1}, {"$set": {"a.$[i].c.$[j].d": 2}}, array_filters=[{"i.b": 0}, {"j.d": 0}])
    assert c.find_one()["a"] == [{"b": 0, "c": [{"d": 2}, {"d": 1}]}, {"b": 1, "c": [{"d": 0}, {"d": 1}]}]
    c.update_one({"_id": 1}, {"$set": {"a.$[x].b": 7}}, array_filters=[{"$or": [{"x.b": 0}, {"x.b": 1}]}])
    assert [e["b"] for e in c.find_one()["a"]] == [7, 7]


def test_array_filters_in_find_and_modify_and_bulk(c):
    c.insert_many([{"_id": 1, "a": [1, 2, 3]}, {"_id": 2, "a": [3, 4]}])
    doc = c.find_one_and_update({"_id": 1}, {"$mul": {"a.$[v]": 10}}, array_filters=[{"v": {"$gt": 1}}],
                                return_document=ReturnDocument.AFTER)
    assert doc["a"] == [1, 20, 30]
    c.bulk_write([UpdateOne({"_id": 2}, {"$set": {"a.$[v]": 0}}, array_filters=[{"v": 3}]),
                  UpdateMany({}, {"$inc": {"a.$[w]": 1}}, array_filters=[{"w": {"$lt": 2}}])])
    assert [d["a"] for d in c.find().sort("_id")] == [[2, 20, 30], [1, 4]]


def test_array_filter_errors_change_nothing(c):
    c.insert_one({"_id": 0, "a": [0, 1], "b": 5})
    e = refused(c, 9, lambda: c.update_one({"_id": 0}, {"$set": {"a.$[i]": 5}}, array_filters=[{"i": 0}, {"j": 0}]))
    assert "The array filter for identifier 'j' was not used in the update" in str(e)
    e = refused(c, 2, lambda: c.update_one({"_id": 0}, {"$set": {"a.$[i]": 0}}))
    assert "No array filter found for identifier 'i' in path 'a.$[i]'" in str(e)
    refused(c, 9, lambda: c.update_one({"_id": 0}, {"$set": {"a.$[i]": 5}}, array_filters=[{"i": 0, "j": 0}]))
    refused(c, 9, lambda: c.update_one({"_id": 0}, {"$set": {"a.$[i]": 5}}, array_filters=[{"i": 0}, {"i": 1}]))
    refused(c, 2, lambda: c.update_one({"_id": 0}, {"$set": {"a.$[I]": 5}}, array_filters=[{"I": 0}]))
    refused(c, 40, lambda: c.update_one({"_id": 0}, {"$set": {"a.$[i]": 0, "a.0": 0}}, array_filters=[{"i": 0}]))
    refused(c, 40, lambda: c.update_one({"_id": 0}, {"$set": {"a.$[i]": 0, "a.$[j]": 1}},
                                        array_filters=[{"i": 0}, {"j": {"$gte": 0}}]))
    refused(c, 2, lambda: c.update_one({"_id": 0}, {"$set": {"b.$[]": 0}}))  # not an array
    refused(c, 2, lambda: c.update_one({"_id": 0}, {"$set": {"z.$[]": 0}}))  # missing
    refused(c, 2, lambda: c.update_one({"_id": 0}, {"$rename": {"a.$[]": "c"}}))
    reply = c.database.command("update", c.name, updates=[{"q": {}, "u": {"$set": {"a.$[i]": 1}}, "arrayFilters": {"i": 0}}])
    assert reply["writeErrors"][0]["code"] == 14 and reply["nModified"] == 0


def test_upsert_with_all_positional_needs_the_array_in_the_query(c):
    # The manual: the query must hold an exact equality on the array for $[] on insert.
    c.update_one({"_id": 5, "a": [1, 2]}, {"$set": {"a.$[]": 0}}, upsert=True)
    assert c.find_one({"_id": 5}) == {"_id": 5, "a": [0, 0]}
    refused(c, 2, lambda: c.update_one({"_id": 6}, {"$set": {"a.$[]": 0}}, upsert=True))


# --- $bit ---------------------------------------------------------------------

def test_bit(c):
    # The manual: expdata 13 (1101) and 10 (1010) = 8; or 5 = 13 ... on NumberInt/NumberLong.
    c.insert_many([{"_id": 1, "expdata": 13}, {"_id": 2, "expdata": Int64(3)}, {"_id": 3, "expdata": 1}])
    c.update_one({"_id": 1}, {"$bit": {"expdata": {"and": 10}}})
    c.update_one({"_id": 2}, {"$bit": {"expdata": {"or": 5}}})
    c.update_one({"_id": 3}, {"$bit": {"expdata": {"xor": 5}}})
    c.update_one({"_id": 1}, {"$bit": {"missing": {"or": Int64(6)}}})
    docs = {d["_id"]: d for d in c.find()}
    assert docs[1]["expdata"] == 8 and docs[2]["expdata"] == 7 and docs[3]["expdata"] == 4
    assert isinstance(docs[2]["expdata"], Int64) and not isinstance(docs[1]["expdata"], Int64)
    assert isinstance(docs[1]["missing"], Int64) and docs[1]["missing"] == 6
    c.insert_one({"_id": 4, "d": 1.5})
    refused(c, 2, lambda: c.update_one({"_id": 4}, {"$bit": {"d": {"or": 1}}}))
    refused(c, 2, lambda: c.update_one({"_id": 4}, {"$bit": {"x": {"or": 1.0}}}))
    refused(c, 2, lambda: c.update_one({"_id": 4}, {"$bit": {"x": {"not": 1}}}))


# --- pipeline-style updates ---------------------------------------------------

def test_pipeline_update_set_unset_and_now(c):
    # The manual's example: $set modified: "$$NOW" and a computed field, then $unset.
    c.insert_many([{"_id": 1, "member": "abc123", "status": "A", "points": 2, "misc1": "note", "misc2": "x"},
                   {"_id": 2, "member": "xyz123", "status": "A", "points": 60, "misc1": "n", "misc2": "y"}])
    before = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None) - datetime.timedelta(seconds=5)
    r = c.update_many({}, [{"$set": {"status": "Modified", "comments": ["$misc1", "$misc2"], "lastUpdate": "$$NOW"}},
                           {"$unset": ["misc1", "misc2"]}])
    assert r.modified_count == 2
    docs = list(c.find().sort("_id"))
    assert docs[0]["comments"] == ["note", "x"] and "misc1" not in docs[0] and docs[0]["status"] == "Modified"
    assert docs[0]["lastUpdate"] == docs[1]["lastUpdate"] >= before  # one $$NOW per command


def test_pipeline_update_replace_with_and_project(c):
    c.insert_one({"_id": 1, "name": {"first": "A", "last": "B"}, "x": 1})
    c.update_one({"_id": 1}, [{"$replaceWith": {"$mergeObjects": [{"full": {"$concat": ["$name.first", " ", "$name.last"]}}, "$$ROOT"]}},
                             {"$project": {"name": 0}}])
    assert c.find_one() == {"full": "A B", "_id": 1, "x": 1}
    c.update_one({"_id": 1}, [{"$replaceRoot": {"newRoot": {"y": {"$add": ["$x", 1]}}}}])
    assert c.find_one() == {"_id": 1, "y": 2}  # _id kept


def test_pipeline_update_with_let_upsert_and_find_and_modify(c):
    c.insert_one({"_id": 1, "qty": 5})
    c.update_one({"$expr": {"$eq": ["$_id", "$$target"]}}, [{"$set": {"qty": {"$add": ["$qty", "$$inc"]}}}],
                 let={"target": 1, "inc": 3})
    assert c.find_one({"_id": 1})["qty"] == 8
    r = c.update_one({"_id": 2, "kind": "new"}, [{"$set": {"qty": {"$ifNull": ["$qty", 0]}, "tag": "up"}}], upsert=True)
    assert r.upserted_id == 2
    assert c.find_one({"_id": 2}) == {"_id": 2, "kind": "new", "qty": 0, "tag": "up"}
    doc = c.find_one_and_update({"_id": 1}, [{"$set": {"double": {"$multiply": ["$qty", 2]}}}],
                                return_document=ReturnDocument.AFTER)
    assert doc == {"_id": 1, "qty": 8, "double": 16}
    doc = c.find_one_and_update({"_id": 1}, [{"$set": {"qty": "$$v"}}], let={"v": 1})
    assert doc["qty"] == 8 and c.find_one({"_id": 1})["qty"] == 1


def test_pipeline_update_statement_constants(db):
    db.k.insert_one({"_id": 1})
    db.command("update", "k", updates=[{"q": {"_id": 1}, "u": [{"$set": {"v": "$$c1"}}], "c": {"c1": 42}}])
    assert db.k.find_one() == {"_id": 1, "v": 42}
    reply = db.command("update", "k", updates=[{"q": {"_id": 1}, "u": {"$set": {"v": 1}}, "c": {"c1": 42}}])
    assert reply["writeErrors"][0]["code"] == 51198


def test_pipeline_update_errors_change_nothing(c):
    c.insert_one({"_id": 1, "a": 1})
    refused(c, 72, lambda: c.update_one({"_id": 1}, [{"$match": {"a": 1}}]))
    refused(c, 72, lambda: c.update_one({"_id": 1}, [{"$group": {"_id": "$a"}}]))
    refused(c, 66, lambda: c.update_one({"_id": 1}, [{"$set": {"_id": 2}}]))
    refused(c, 9, lambda: c.update_one({"_id": 1}, [{"$set": {"a.$[i]": 1}}], array_filters=[{"i": 0}]))
    refused(c, 40324, lambda: c.update_one({"_id": 1}, [{"$bogus": {}}]))


# --- exactly once -------------------------------------------------------------

def test_retried_positional_and_pipeline_updates_apply_once(raw_client, db):
    db.once.insert_one({"_id": 1, "a": [1, 2], "n": 0})
    sid = {"id": Binary(uuid.uuid4().bytes, UUID_SUBTYPE)}
    for i, u in enumerate([{"$inc": {"a.$[v]": 10}}, [{"$set": {"n": {"$add": ["$n", 1]}}}]]):
        stmt = {"q": {"_id": 1}, "u": u}
        if isinstance(u, dict):
            stmt["arrayFilters"] = [{"v": {"$gte": 2}}]
        cmd = {"update": "once", "updates": [stmt], "lsid": sid, "txnNumber": Int64(i + 1)}
        assert raw_client(db.name, cmd)["nModified"] == 1
        assert raw_client(db.name, cmd)["nModified"] == 1  # the retry answers from the record
    assert db.once.find_one() == {"_id": 1, "a": [1, 12], "n": 1}


def test_positional_update_in_transaction(client, db):
    db.tx.insert_one({"_id": 1, "a": [{"k": "x", "v": 1}, {"k": "y", "v": 1}]})
    with client.start_session() as s:
        with s.start_transaction():
            db.tx.update_one({"_id": 1, "a.k": "y"}, {"$inc": {"a.$.v": 1}}, session=s)
            db.tx.update_one({"_id": 1}, {"$inc": {"a.$[e].v": 10}}, array_filters=[{"e.k": "x"}], session=s)
            s.abort_transaction()
    assert [e["v"] for e in db.tx.find_one()["a"]] == [1, 1]
    with client.start_session() as s:
        with s.start_transaction():
            db.tx.update_one({"_id": 1, "a.k": "y"}, {"$inc": {"a.$.v": 1}}, session=s)
            db.tx.update_one({"_id": 1}, {"$inc": {"a.$[e].v": 10}}, array_filters=[{"e.k": "x"}], session=s)
    assert [e["v"] for e in db.tx.find_one()["a"]] == [11, 2]


@pytest.fixture
def raw_client(server):
    import rawwire

    sock = rawwire.connect(server)
    n = [0]

    def call(dbname, cmd):
        n[0] += 1
        reply = rawwire.command(sock, {**cmd, "$db": dbname}, request_id=n[0])
        if reply.get("ok") != 1:
            raise OperationFailure(reply.get("errmsg"), reply.get("code"), reply)
        return reply

    yield call
    sock.close()


def test_delete_and_find_and_modify_let_and_option_errors(db):
    db.dl.insert_many([{"_id": i, "v": i} for i in range(5)])
    r = db.dl.delete_many({"$expr": {"$gte": ["$v", "$$cut"]}}, let={"cut": 3})
    assert r.deleted_count == 2 and db.dl.count_documents({}) == 3
    with pytest.raises(OperationFailure) as e:
        db.command("findAndModify", "dl", query={}, remove=True, arrayFilters=[{"i": 0}])
    assert e.value.code == 9 and "Cannot specify arrayFilters and remove=true" in str(e.value)
    with pytest.raises(OperationFailure) as e:
        db.command("findAndModify", "dl", query={}, update=[{"$set": {"a": 1}}], arrayFilters=[{"i": 0}])
    assert e.value.code == 9
    assert db.dl.count_documents({"a": {"$exists": True}}) == 0
