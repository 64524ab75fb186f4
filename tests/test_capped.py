"""Capped collections and tailable cursors (MongoDB's semantics: insertion
order, oldest documents evicted past size or max, tailable/awaitData
cursors that stay open at the end and see later inserts)."""
import threading
import time

import bson
import pytest
from pymongo import CursorType
from pymongo.errors import BulkWriteError, OperationFailure


def test_create_options_and_list_collections(db):
    db.create_collection("log", capped=True, size=10000, max=5)
    info = next(db.list_collections(filter={"name": "log"}))
    # MongoDB rounds size up to a multiple of 256 (and at least 4096).
    assert info["options"] == {"capped": True, "size": 10240, "max": 5}
    assert db.log.options() == {"capped": True, "size": 10240, "max": 5}
    db.create_collection("small", capped=True, size=100)
    assert db.small.options()["size"] == 4096


def test_coll_stats_show_the_limits(db):
    """collStats and $collStats (what mongosh's coll.stats() reads) say
    capped with max and maxSize (scaled), as MongoDB's do."""
    db.create_collection("log", capped=True, size=10000, max=5)
    db.create_collection("bysize", capped=True, size=8192)
    db.create_collection("plain")
    st = db.command("collStats", "log")
    assert (st["capped"], st["max"], st["maxSize"]) == (True, 5, 10240)
    assert db.command("collStats", "log", scale=1024)["maxSize"] == 10
    st = db.command("collStats", "bysize")
    assert (st["capped"], st["max"], st["maxSize"]) == (True, 0, 8192)
    st = db.command("collStats", "plain")
    assert st["capped"] is False and "max" not in st and "maxSize" not in st
    (doc,) = db.log.aggregate([{"$collStats": {"storageStats": {}}}])
    assert (doc["storageStats"]["capped"], doc["storageStats"]["maxSize"]) == (True, 10240)


@pytest.mark.parametrize("opts,code", [
    ({"capped": True}, 72),             # size is required
    ({"capped": True, "size": -1}, 2),
    ({"size": 1000}, 72),               # size without capped
])
def test_create_refusals(db, opts, code):
    with pytest.raises(OperationFailure) as e:
        db.command({"create": "bad", **opts})
    assert e.value.code == code
    assert "bad" not in db.list_collection_names()


def test_max_evicts_oldest_in_insertion_order(db):
    db.create_collection("c", capped=True, size=100000, max=3)
    # _ids out of order: natural order is insertion order, not _id order.
    for i in [5, 1, 4, 2, 3]:
        db.c.insert_one({"_id": i})
    assert [d["_id"] for d in db.c.find()] == [4, 2, 3]
    assert [d["_id"] for d in db.c.find(sort=[("$natural", -1)])] == [3, 2, 4]
    assert [d["_id"] for d in db.c.find(sort=[("_id", 1)])] == [2, 3, 4]
    db.c.insert_many([{"_id": 10}, {"_id": 11}])
    assert [d["_id"] for d in db.c.find()] == [3, 10, 11]
    assert db.c.count_documents({}) == 3


def test_size_evicts_by_bson_bytes(db):
    db.create_collection("c", capped=True, size=4096)
    pad = "x" * 1000
    doc_size = len(bson.encode({"_id": 0, "p": pad}))
    for i in range(10):
        db.c.insert_one({"_id": i, "p": pad})
    ids = [d["_id"] for d in db.c.find()]
    fit = 4096 // doc_size
    assert ids == list(range(10 - fit, 10))
    assert sum(len(bson.encode(d)) for d in db.c.find()) <= 4096


def test_document_larger_than_the_collection_is_refused(db):
    # MongoDB refuses it (BSONObjectTooLarge) rather than evicting every
    # document, itself included; the others of the batch are stored.
    db.create_collection("c", capped=True, size=4096)
    db.c.insert_one({"_id": 0})
    with pytest.raises(BulkWriteError) as e:
        db.c.insert_many([{"_id": 1}, {"_id": 2, "p": "x" * 5000}, {"_id": 3}], ordered=False)
    errs = e.value.details["writeErrors"]
    assert [(w["index"], w["code"]) for w in errs] == [(1, 10334)]
    assert e.value.details["nInserted"] == 2
    assert [d["_id"] for d in db.c.find()] == [0, 1, 3]
    with pytest.raises(OperationFailure) as e:
        db.c.insert_one({"_id": 4, "p": "x" * 5000})
    assert e.value.code == 10334
    assert [d["_id"] for d in db.c.find()] == [0, 1, 3]


def test_deletes_and_updates_keep_the_totals(db):
    # MongoDB 7 allows deletes and updates on capped collections.
    db.create_collection("c", capped=True, size=100000, max=3)
    db.c.insert_many([{"_id": i} for i in range(3)])
    assert db.c.delete_one({"_id": 1}).deleted_count == 1
    db.c.insert_one({"_id": 3})
    # Two left plus one new: nothing evicted yet.
    assert [d["_id"] for d in db.c.find()] == [0, 2, 3]
    db.c.update_one({"_id": 0}, {"$set": {"a": "grown"}})
    db.c.insert_one({"_id": 4})
    assert [d["_id"] for d in db.c.find()] == [2, 3, 4]


def test_tailable_cursor_sees_later_inserts(db):
    db.create_collection("c", capped=True, size=100000)
    db.c.insert_many([{"_id": i} for i in range(3)])
    cur = db.c.find(cursor_type=CursorType.TAILABLE)
    assert [d["_id"] for d in cur] == [0, 1, 2]
    assert cur.alive
    db.c.insert_many([{"_id": 3}, {"_id": 4}])
    assert [d["_id"] for d in cur] == [3, 4]
    assert cur.alive
    cur.close()


def test_tailable_filter_skips_non_matching_rows(db):
    db.create_collection("c", capped=True, size=100000)
    db.c.insert_one({"_id": 0, "k": "a"})
    cur = db.c.find({"k": "b"}, cursor_type=CursorType.TAILABLE)
    assert list(cur) == []
    assert cur.alive  # positioned on a non-matching row, so not dead
    db.c.insert_many([{"_id": 1, "k": "a"}, {"_id": 2, "k": "b"}])
    assert [d["_id"] for d in cur] == [2]
    cur.close()


def test_tailable_batch_size_zero_reads_nothing_yet(db):
    db.create_collection("c", capped=True, size=100000)
    db.c.insert_many([{"_id": 0}, {"_id": 1}])
    first = db.command("find", "c", tailable=True, batchSize=0)
    assert first["cursor"]["firstBatch"] == [] and first["cursor"]["id"] != 0
    more = db.command("getMore", first["cursor"]["id"], collection="c")
    assert [d["_id"] for d in more["cursor"]["nextBatch"]] == [0, 1]
    db.command("killCursors", "c", cursors=[first["cursor"]["id"]])


def test_tailable_on_empty_collection_is_dead(db):
    db.create_collection("c", capped=True, size=100000)
    reply = db.command("find", "c", tailable=True)
    assert reply["cursor"]["id"] == 0


def test_await_data_wakes_on_insert(db):
    db.create_collection("c", capped=True, size=100000)
    db.c.insert_one({"_id": 0})
    cur = db.c.find(cursor_type=CursorType.TAILABLE_AWAIT).max_await_time_ms(10000)
    assert next(cur)["_id"] == 0
    inserter = threading.Timer(0.3, lambda: db.c.insert_one({"_id": 1}))
    inserter.start()
    # The getMore waits for the insert (at most the await time) and returns it.
    assert next(cur)["_id"] == 1
    inserter.join()
    cur.close()


def test_await_data_returns_empty_batch_at_await_time(db):
    db.create_collection("c", capped=True, size=100000)
    db.c.insert_one({"_id": 0})
    first = db.command("find", "c", tailable=True, awaitData=True)
    cid = first["cursor"]["id"]
    assert cid != 0
    more = db.command("getMore", cid, collection="c", maxTimeMS=200)
    assert more["cursor"]["nextBatch"] == [] and more["cursor"]["id"] == cid
    db.c.insert_one({"_id": 1})
    more = db.command("getMore", cid, collection="c", maxTimeMS=200)
    assert [d["_id"] for d in more["cursor"]["nextBatch"]] == [1]
    db.command("killCursors", "c", cursors=[cid])


def test_get_more_max_time_only_for_await_data(db):
    # MongoDB: getMore's maxTimeMS is an await time; other cursors refuse it.
    db.create_collection("c", capped=True, size=100000)
    db.c.insert_many([{"_id": 0}, {"_id": 1}])
    for opts in [{}, {"tailable": True}]:
        cid = db.command("find", "c", batchSize=1, **opts)["cursor"]["id"]
        with pytest.raises(OperationFailure) as e:
            db.command("getMore", cid, collection="c", maxTimeMS=100)
        assert e.value.code == 2
        db.command("killCursors", "c", cursors=[cid])


def test_position_lost_after_eviction(db):
    db.create_collection("c", capped=True, size=100000, max=2)
    db.c.insert_many([{"_id": 0}, {"_id": 1}])
    first = db.command("find", "c", tailable=True, batchSize=1)
    cid = first["cursor"]["id"]
    # Evict the cursor's position (document 0) and more.
    db.c.insert_many([{"_id": 2}, {"_id": 3}])
    with pytest.raises(OperationFailure) as e:
        db.command("getMore", cid, collection="c")
    assert e.value.code == 136  # CappedPositionLost


@pytest.mark.parametrize("cmd,code", [
    ({"find": "plain", "tailable": True}, 2),
    ({"find": "c", "awaitData": True}, 9),
    ({"find": "c", "tailable": True, "sort": {"_id": 1}}, 2),
])
def test_tailable_refusals(db, cmd, code):
    db.create_collection("c", capped=True, size=100000)
    db.c.insert_one({"_id": 0})
    db.plain.insert_one({"_id": 0})
    with pytest.raises(OperationFailure) as e:
        db.command(cmd)
    assert e.value.code == code


def test_capped_survives_restart(new_server):
    t = new_server().start()
    try:
        c = t.client()
        c.d.create_collection("c", capped=True, size=100000, max=2)
        c.d.c.insert_many([{"_id": i} for i in range(3)])
        c.close()
        t.stop()
        t.start()
        c = t.client()
        assert c.d.c.options()["max"] == 2
        c.d.c.insert_one({"_id": 3})
        assert [d["_id"] for d in c.d.c.find()] == [2, 3]
        c.close()
    finally:
        t.stop()


def test_writes_in_transactions_are_refused(db, client):
    db.create_collection("c", capped=True, size=100000)
    db.c.insert_one({"_id": 0})
    with client.start_session() as s:
        with pytest.raises(OperationFailure) as e:
            with s.start_transaction():
                db.c.insert_one({"_id": 1}, session=s)
        assert e.value.code == 263
    assert [d["_id"] for d in db.c.find()] == [0]


def test_awaiting_get_more_holds_no_admission(server, db):
    """A high-tier getMore waiting for data is not 'in process': lower tiers
    are not held at the door by an idle tailable cursor."""
    db.create_collection("c", capped=True, size=100000)
    db.c.insert_one({"_id": 0})
    high = server.client(maxPoolSize=1)
    high.admin.command("setClientPriority", "high")
    hdb = high[db.name]
    cid = hdb.command("find", "c", tailable=True, awaitData=True)["cursor"]["id"]

    def tiers():
        with server.client() as c:
            return c.admin.command("qosStatus")["tiers"]["high"]

    before = tiers()["admitted"]
    t = threading.Thread(target=lambda: hdb.command("getMore", cid, collection="c", maxTimeMS=4000))
    t.start()
    seen_idle = False
    while t.is_alive() and not seen_idle:
        st = tiers()
        seen_idle = st["admitted"] > before and st["inProcess"] == 0 and t.is_alive()
    t.join()
    high.close()
    assert seen_idle
