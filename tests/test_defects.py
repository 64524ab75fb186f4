"""Defects found under hostile and large input (issue 12), through pymongo."""
import time

import bson
import pytest
from bson.decimal128 import Decimal128
from bson.raw_bson import RawBSONDocument
from pymongo.errors import OperationFailure

import rawwire


def test_iterating_160000_small_documents_gets_them_all(db):
    # Small documents: the batch array's per-element overhead (type byte,
    # decimal index key) is a large part of each reply.
    pad = "x" * 80
    for start in range(0, 160_000, 20_000):
        db.small.insert_many([{"_id": i, "s": pad} for i in range(start, start + 20_000)])
    n, last = 0, -1
    for d in db.small.find().batch_size(0):
        assert d["_id"] > last
        last = d["_id"]
        n += 1
    assert n == 160_000


def test_a_document_with_two_ids_is_refused(server, db):
    body = bson.encode({"_id": 1, "a": 1})[4:-1] + b"\x10_id\x00" + (2).to_bytes(4, "little")  # a second _id
    doc = (len(body) + 5).to_bytes(4, "little") + body + b"\x00"
    s = rawwire.connect(server)
    try:
        reply = rawwire.command(s, {"insert": "two", "$db": db.name}, sequences=[("documents", [doc])])
    finally:
        s.close()
    assert reply["ok"] == 1 and reply["n"] == 0
    assert reply["writeErrors"][0]["code"] == 2
    assert db.two.count_documents({}) == 0


def test_sum_and_avg_count_decimals_exactly(db):
    db.dec.insert_many([{"g": 1, "v": Decimal128("0.1")} for _ in range(10)] +
                       [{"g": 2, "v": 1}, {"g": 2, "v": Decimal128("2.5")}, {"g": 3, "v": 1}, {"g": 3, "v": 2}])
    got = {d["_id"]: d for d in db.dec.aggregate([{"$group": {"_id": "$g", "s": {"$sum": "$v"}, "a": {"$avg": "$v"}}}])}
    assert got[1]["s"] == Decimal128("1.0")          # exact: a double would give 0.9999999999999999
    assert got[1]["a"].to_decimal() == Decimal128("0.1").to_decimal()
    assert got[2]["s"] == Decimal128("3.5") and got[2]["a"] == Decimal128("1.75")
    assert got[3]["s"] == 3 and got[3]["a"] == 1.5   # no decimal: int and double as before
    assert db.dec.count_documents({}) == 14


# --- hostile frames and connections -------------------------------------------

def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def frame_header(length, request_id=1, opcode=rawwire.OP_MSG):
    return rawwire.HEADER.pack(length, request_id, 0, opcode)


def test_stalled_large_frames_hold_only_the_budget(new_server):
    """Ten connections each declare a 48 MB message, send 20 MB of it and
    stall. tierdb holds what arrived, within --max-incoming-mb: past it the
    message is refused and its connection closed; the rest stay bounded,
    and the stalled ones are cut off after --frame-timeout."""
    t = new_server(extra_args=["--max-incoming-mb", "64", "--frame-timeout", "8s"]).start()
    socks = []
    try:
        before = rss_mb(t.proc.pid)
        chunk = b"\0" * (1 << 20)
        for i in range(10):
            s = rawwire.connect(t, timeout=30)
            s.sendall(frame_header(48_000_000, i))
            try:
                for _ in range(20):
                    s.sendall(chunk)
            except OSError:
                pass  # refused: the server closed it
            socks.append(s)
        time.sleep(1)
        held = rss_mb(t.proc.pid) - before
        assert held < 64 + 10 * 2 + 60, f"tierdb grew by {held:.0f} MB holding stalled frames"
        # Past the frame timeout every stalled connection is closed.
        time.sleep(9)
        for s in socks:
            s.settimeout(5)
            assert rawwire.closed_by_peer(s)
        c = t.client()
        assert c.admin.command("ping")["ok"] == 1
        c.close()
    finally:
        for s in socks:
            s.close()
        t.cleanup()


def test_idle_connections_are_closed_but_running_requests_are_not(new_server):
    t = new_server(extra_args=["--idle-timeout", "1s", "--enable-test-commands"]).start()
    try:
        idle = rawwire.connect(t)
        busy = rawwire.connect(t)
        # A request running longer than the idle timeout keeps its connection.
        reply = rawwire.command(busy, {"sleep": 1, "millis": 2500, "$db": "admin"})
        assert reply["ok"] == 1
        time.sleep(0.2)
        idle.settimeout(5)
        assert rawwire.closed_by_peer(idle)
        # A driver reconnects transparently.
        c = t.client()
        c.admin.command("ping")
        time.sleep(1.5)
        assert c.admin.command("ping")["ok"] == 1
        c.close()
        idle.close()
        busy.close()
    finally:
        t.cleanup()


def test_sequence_duplicating_a_body_field_keeps_its_code(server):
    s = rawwire.connect(server)
    try:
        reply = rawwire.command(s, {"insert": "x", "documents": [], "$db": "test"}, sequences=[("documents", [{"a": 1}])])
    finally:
        s.close()
    assert reply["ok"] == 0 and reply["code"] == 40433, reply


def test_invalid_utf8_in_a_namespace_is_invalid_namespace(server):
    s = rawwire.connect(server)
    try:
        body = bson.encode({"find": "x"})[:-1] + b"\x02$db\x00" + (5).to_bytes(4, "little") + b"a\xffb\x00\x00" + b"\x00"
        body = (len(body)).to_bytes(4, "little") + body[4:]
        reply = rawwire.command(s, body)
        elems = b"\x02find\x00" + (3).to_bytes(4, "little") + b"\xc3(\x00" + bson.encode({"$db": "test"})[4:-1]
        coll = (len(elems) + 5).to_bytes(4, "little") + elems + b"\x00"
        reply2 = rawwire.command(s, coll, request_id=8)
    finally:
        s.close()
    assert reply["ok"] == 0 and reply["code"] == 73, reply
    assert reply2["ok"] == 0 and reply2["code"] == 73, reply2


def test_sort_with_a_limit_keeps_only_the_top(db):
    # 30 MB of documents, sorted on an unindexed field with a limit: the
    # sort keeps the top documents only, and the answer is the true top.
    pad = "y" * 3000
    for start in range(0, 10_000, 2_000):
        db.big.insert_many([{"_id": i, "k": (i * 7919) % 10_000, "pad": pad} for i in range(start, start + 2_000)])
    top = [d["k"] for d in db.big.find({}, {"k": 1}).sort("k", -1).limit(5)]
    assert top == [9999, 9998, 9997, 9996, 9995]
    page = [d["k"] for d in db.big.find({}, {"k": 1}).sort("k", 1).skip(100).limit(3)]
    assert page == [100, 101, 102]


def test_group_and_count_stream(db):
    db.g.insert_many([{"k": i % 5, "v": i} for i in range(20_000)])
    got = {d["_id"]: (d["n"], d["s"]) for d in db.g.aggregate([{"$match": {"v": {"$gte": 0}}}, {"$group": {"_id": "$k", "n": {"$sum": 1}, "s": {"$sum": "$v"}}}])}
    assert got == {k: (4000, sum(range(k, 20_000, 5))) for k in range(5)}
    assert db.g.count_documents({"k": 3}) == 4000
    assert list(db.g.aggregate([{"$sort": {"v": -1}}, {"$limit": 2}, {"$project": {"_id": 0, "v": 1}}])) == [{"v": 19999}, {"v": 19998}]


def test_collation_is_refused_not_ignored(db):
    from pymongo.collation import Collation
    db.city.insert_many([{"n": "Oslo"}, {"n": "oslo"}, {"n": "OSLO"}])
    ci = Collation(locale="en", strength=2)
    for call in (
        lambda: db.city.count_documents({"n": "oslo"}, collation=ci),
        lambda: list(db.city.find({"n": "oslo"}, collation=ci)),
        lambda: list(db.city.aggregate([{"$match": {"n": "oslo"}}], collation=ci)),
        lambda: db.city.update_many({"n": "oslo"}, {"$set": {"x": 1}}, collation=ci),
        lambda: db.city.delete_many({"n": "oslo"}, collation=ci),
        lambda: db.city.find_one_and_update({"n": "oslo"}, {"$set": {"x": 1}}, collation=ci),
        lambda: db.city.create_index("n", collation=ci),
        lambda: db.create_collection("ci", collation=ci),
    ):
        with pytest.raises(OperationFailure) as e:
            call()
        assert e.value.code in (238, 197), e.value.details
    assert db.city.count_documents({"x": 1}) == 0 and db.city.count_documents({}) == 3
    # The simple collation is what tierdb does: accepted.
    assert db.city.count_documents({"n": "oslo"}, collation=Collation(locale="simple")) == 1


def test_large_sorts_counts_and_groups_stay_bounded(new_server):
    """120 MB of documents: counting and grouping them streams (tierdb grows
    far less than the data), and a sort of all of them fails at the 100 MB
    limit without tierdb holding a multiple of it."""
    t = new_server().start()
    try:
        c = t.client()
        coll = c.mem.big
        pad = "z" * 3000
        for start in range(0, 40_000, 2_000):
            coll.insert_many([{"_id": i, "k": i % 7, "r": (i * 7919) % 40_000, "pad": pad} for i in range(start, start + 2_000)])
        before = rss_mb(t.proc.pid)
        assert coll.count_documents({"k": {"$gte": 0}}) == 40_000
        got = {d["_id"]: d["n"] for d in coll.aggregate([{"$match": {"k": {"$gte": 0}}}, {"$group": {"_id": "$k", "n": {"$sum": 1}}}])}
        assert sum(got.values()) == 40_000 and len(got) == 7
        streamed = rss_mb(t.proc.pid) - before
        assert streamed < 60, f"tierdb grew by {streamed:.0f} MB counting and grouping 120 MB"
        with pytest.raises(OperationFailure) as e:
            list(coll.find({}).sort("r", 1))
        assert e.value.code == 292, e.value.details
        sorted_growth = rss_mb(t.proc.pid) - before
        assert sorted_growth < 350, f"tierdb grew by {sorted_growth:.0f} MB refusing a sort over the 100 MB limit"
        assert c.admin.command("ping")["ok"] == 1
        c.close()
    finally:
        t.cleanup()

