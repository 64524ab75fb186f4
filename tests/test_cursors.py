"""Cursors: batches, getMore, killCursors and the idle timeout.

The shared server runs with --cursor-timeout 3s (see conftest.py).
"""
import time

import pytest
from bson.int64 import Int64
from pymongo.errors import OperationFailure

CURSOR_TIMEOUT = 3.0


@pytest.fixture
def coll95(db):
    db.c.insert_many([{"_id": i, "v": i * 10} for i in range(95)])
    return db.c


def test_batches_return_every_doc_once_in_order(coll95):
    cur = coll95.find({}, batch_size=10).sort("_id", 1)
    assert [d["_id"] for d in cur] == list(range(95))


def test_batches_with_filter_and_descending_sort(coll95):
    got = [d["_id"] for d in coll95.find({"v": {"$gte": 200}}, batch_size=7).sort("v", -1)]
    assert got == list(range(94, 19, -1))


def test_get_more_by_hand(coll95):
    db = coll95.database
    r = db.command("find", "c", batchSize=10, sort={"_id": 1})
    cid = r["cursor"]["id"]
    assert isinstance(cid, int) and cid != 0
    got = [d["_id"] for d in r["cursor"]["firstBatch"]]
    assert len(got) == 10
    batches = 0
    while cid:
        r = db.command("getMore", Int64(cid), collection="c", batchSize=10)
        nxt = r["cursor"]["nextBatch"]
        assert len(nxt) <= 10
        got += [d["_id"] for d in nxt]
        assert r["cursor"]["ns"] == coll95.full_name
        new_id = r["cursor"]["id"]
        assert new_id in (0, cid)
        cid = new_id
        batches += 1
    assert got == list(range(95))
    assert batches in (9, 10)  # the last batch may be empty


def test_exhausted_cursor_is_gone(coll95):
    db = coll95.database
    r = db.command("find", "c", batchSize=90)
    cid = r["cursor"]["id"]
    r = db.command("getMore", Int64(cid), collection="c")
    assert r["cursor"]["id"] == 0
    assert len(r["cursor"]["nextBatch"]) == 5
    with pytest.raises(OperationFailure) as ei:
        db.command("getMore", Int64(cid), collection="c")
    assert ei.value.code == 43


def test_batch_size_zero_opens_cursor(coll95):
    db = coll95.database
    r = db.command("find", "c", batchSize=0)
    assert r["cursor"]["firstBatch"] == []
    cid = r["cursor"]["id"]
    assert cid != 0
    r = db.command("getMore", Int64(cid), collection="c", batchSize=1000)
    assert len(r["cursor"]["nextBatch"]) == 95


def test_limit_with_batches(coll95):
    assert [d["_id"] for d in coll95.find(batch_size=4).sort("_id", 1).limit(10)] == list(range(10))


def test_skip_with_batches(coll95):
    assert [d["_id"] for d in coll95.find(batch_size=2).sort("_id", 1).skip(90)] == [90, 91, 92, 93, 94]


def test_sort_on_a_field_the_projection_removes(coll95):
    got = list(coll95.find({}, {"v": 0}, batch_size=10).sort("v", -1))
    assert [d["_id"] for d in got] == list(range(94, -1, -1))
    assert all(set(d) == {"_id"} for d in got)


def test_batches_are_cut_to_fit_a_reply(db):
    """40 documents of 1 MiB: no reply may carry more than 16 MiB of them."""
    blob = "x" * (1024 * 1024)
    for i in range(40):
        db.big.insert_one({"_id": i, "blob": blob})
    r = db.command("find", "big", sort={"_id": 1})
    first = r["cursor"]["firstBatch"]
    assert 0 < len(first) <= 16 and r["cursor"]["id"] != 0
    assert [d["_id"] for d in db.big.find({}, {"_id": 1, "blob": 1}).sort("_id", 1)] == list(range(40))
    assert [d["_id"] for d in db.big.aggregate([{"$sort": {"_id": -1}}])] == list(range(39, -1, -1))


def test_kill_cursors(coll95):
    db = coll95.database
    cur = coll95.find(batch_size=2)
    next(cur)
    cid = cur.cursor_id
    assert cid
    cur.close()  # pymongo sends killCursors
    with pytest.raises(OperationFailure) as ei:
        db.command("getMore", Int64(cid), collection="c")
    assert ei.value.code == 43
    assert ei.value.details["codeName"] == "CursorNotFound"


def test_kill_cursors_reply(coll95):
    db = coll95.database
    cid = db.command("find", "c", batchSize=1)["cursor"]["id"]
    r = db.command("killCursors", "c", cursors=[Int64(cid), Int64(12345)])
    assert r["cursorsKilled"] == [cid]
    assert r["cursorsNotFound"] == [12345]


def test_get_more_wrong_collection(coll95):
    db = coll95.database
    db.other.insert_one({})
    cid = db.command("find", "c", batchSize=1)["cursor"]["id"]
    with pytest.raises(OperationFailure) as ei:
        db.command("getMore", Int64(cid), collection="other")
    assert ei.value.code == 13  # Unauthorized, as MongoDB answers


def test_drop_kills_cursors(coll95):
    db = coll95.database
    cid = db.command("find", "c", batchSize=1)["cursor"]["id"]
    db.drop_collection("c")
    with pytest.raises(OperationFailure) as ei:
        db.command("getMore", Int64(cid), collection="c")
    assert ei.value.code in (43, 175)  # CursorNotFound or QueryPlanKilled


def test_idle_cursor_times_out(coll95):
    db = coll95.database
    r = db.command("find", "c", batchSize=2)
    cid = r["cursor"]["id"]
    assert cid != 0
    # A cursor used within the timeout stays alive...
    time.sleep(CURSOR_TIMEOUT / 3)
    db.command("getMore", Int64(cid), collection="c", batchSize=2)
    # ...and one left idle well past it is closed.
    time.sleep(CURSOR_TIMEOUT + 5)
    with pytest.raises(OperationFailure) as ei:
        db.command("getMore", Int64(cid), collection="c", batchSize=2)
    assert ei.value.code == 43


def test_cursor_sees_writes_consistently(coll95):
    """Documents inserted behind a cursor's position never duplicate ones already
    returned; every document that existed throughout comes back exactly once."""
    cur = coll95.find({}, batch_size=10).sort("_id", 1)
    seen = [next(cur)["_id"] for _ in range(15)]
    coll95.insert_many([{"_id": 1000 + i} for i in range(5)])
    coll95.delete_one({"_id": 0})
    seen += [d["_id"] for d in cur]
    assert len(seen) == len(set(seen))
    assert set(range(95)) <= set(seen)


def test_kill_cursors_only_on_the_named_collection(coll95):
    db = coll95.database
    db.other.insert_one({})
    cid = db.command("find", "c", batchSize=1)["cursor"]["id"]
    r = db.command("killCursors", "other", cursors=[Int64(cid)])
    assert r["cursorsKilled"] == [] and r["cursorsNotFound"] == [cid]
    # Still alive on its own collection.
    assert db.command("getMore", Int64(cid), collection="c", batchSize=1)["cursor"]["nextBatch"]
