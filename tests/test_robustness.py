"""Misbehaving clients, many connections, malformed requests, time limits."""
import socket
import struct
import threading
import time

import bson
import pytest
from bson.objectid import ObjectId
from pymongo.errors import DuplicateKeyError, ExecutionTimeout, OperationFailure

import rawwire

BIG = 50000


@pytest.fixture(scope="module")
def bigdb(client):
    """A collection large enough that scanning it takes well over a millisecond."""
    db = client["t_big_" + str(ObjectId())[-8:]]
    db.c.insert_many([{"_id": i, "s": f"item-{i:06d}-" + "abc" * 20, "n": i % 97} for i in range(BIG)])
    yield db
    client.drop_database(db.name)


def slow_find(db_name, request_id=5):
    """A find that must scan and sort the whole collection in memory."""
    return rawwire.op_msg({"find": "c", "filter": {"s": {"$regex": "9-.*c$"}}, "sort": {"s": -1},
                           "$db": db_name}, request_id=request_id)


def current_connections(client):
    return client.admin.command("serverStatus")["connections"]["current"]


def wait_for(cond, what, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


# --- vanishing and misbehaving clients ---------------------------------------------

def test_client_vanishes_mid_request(server, client, bigdb):
    base = current_connections(client)
    for i in range(5):
        s = rawwire.connect(server)
        s.sendall(slow_find(bigdb.name, request_id=i + 1))
        # RST instead of FIN, so the server sees the peer gone at once.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
    assert client.admin.command("ping")["ok"] == 1.0
    assert bigdb.c.count_documents({"n": 3}) == len(range(3, BIG, 97))
    # The abandoned connections (and their requests) go away.
    wait_for(lambda: current_connections(client) <= base, "abandoned connections to close")
    wait_for(lambda: not [op for op in client.admin.command("currentOp")["inprog"] if op.get("ns", "").startswith(bigdb.name + ".")],
             "abandoned requests to stop")


def test_partial_message_then_close(server, client):
    with rawwire.connect(server) as s:
        msg = rawwire.op_msg({"ping": 1, "$db": "admin"})
        s.sendall(msg[: len(msg) // 2])
    with rawwire.connect(server) as s:
        s.sendall(msg[:10])  # not even a whole header
    assert client.admin.command("ping")["ok"] == 1.0


def test_garbage_bytes(server, client):
    with rawwire.connect(server) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert rawwire.closed_by_peer(s)
    assert client.admin.command("ping")["ok"] == 1.0


def test_unsupported_opcode_does_not_hang(server, client):
    with rawwire.connect(server) as s:
        body = struct.pack("<i", 0) + b"db.c\x00" + bson.encode({"x": 1})
        s.sendall(rawwire.frame(3, 2002, body))  # legacy OP_INSERT, gone since MongoDB 6.0
        try:
            _, response_to, _, reply = rawwire.recv_message(s)
            assert response_to == 3 and reply.get("ok") == 0.0
        except ConnectionError:
            pass  # closing the connection is also an answer
    assert client.admin.command("ping")["ok"] == 1.0


def test_pipelined_requests_answered_in_order(server):
    with rawwire.connect(server) as s:
        s.sendall(b"".join(rawwire.op_msg({"ping": 1, "$db": "admin"}, request_id=100 + i) for i in range(50)))
        for i in range(50):
            _, response_to, _, reply = rawwire.recv_message(s)
            assert (response_to, reply["ok"]) == (100 + i, 1.0)


def test_more_to_come_gets_no_reply(server, db):
    with rawwire.connect(server) as s:
        s.sendall(rawwire.op_msg({"insert": "c", "documents": [{"_id": 1}], "writeConcern": {"w": 0}, "$db": db.name},
                                 request_id=1, flags=2))
        r = rawwire.command(s, {"find": "c", "$db": db.name}, request_id=2)  # the next reply is this one's
    assert r["cursor"]["firstBatch"] == [{"_id": 1}]


# --- many connections ----------------------------------------------------------------

def test_500_connections_while_normal_traffic_runs(server, client, db):
    socks = []
    try:
        for _ in range(500):
            socks.append(rawwire.connect(server, timeout=30))
        for i, s in enumerate(socks):
            s.sendall(rawwire.op_msg({"hello": 1, "$db": "admin"}, request_id=i + 1))
        db.c.insert_many([{"_id": i} for i in range(100)])  # normal traffic meanwhile
        assert db.c.count_documents({}) == 100
        for i, s in enumerate(socks):
            _, response_to, _, reply = rawwire.recv_message(s)
            assert response_to == i + 1 and reply["isWritablePrimary"] is True
        assert current_connections(client) >= 500
        assert sorted(d["_id"] for d in db.c.find()) == list(range(100))
    finally:
        for s in socks:
            s.close()
    assert client.admin.command("ping")["ok"] == 1.0


# --- concurrent writers ---------------------------------------------------------------

def run_threads(n, fn):
    errors = []

    def wrap(k):
        try:
            fn(k)
        except Exception as e:  # collected: an exception in a thread must fail the test
            errors.append(e)

    threads = [threading.Thread(target=wrap, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a writer hung"
    assert errors == [], errors[:3]


def test_concurrent_increments_are_not_lost(db):
    db.c.insert_one({"_id": 1, "n": 0})
    run_threads(8, lambda k: [db.c.update_one({"_id": 1}, {"$inc": {"n": 1}}) for _ in range(40)])
    assert db.c.find_one()["n"] == 8 * 40


def test_concurrent_upserts_make_one_document(db):
    def work(k):
        for i in range(30):
            db.c.update_one({"key": i % 3}, {"$inc": {"n": 1}}, upsert=True)

    db.c.create_index("key", unique=True)
    run_threads(6, work)
    docs = sorted((d["key"], d["n"]) for d in db.c.find())
    assert docs == [(0, 60), (1, 60), (2, 60)]


def test_concurrent_inserts_of_one_id(db):
    wins = []

    def work(k):
        try:
            db.c.insert_one({"_id": "same", "by": k})
            wins.append(k)
        except DuplicateKeyError:
            pass

    run_threads(8, work)
    assert len(wins) == 1
    assert db.c.find_one() == {"_id": "same", "by": wins[0]}


def test_concurrent_implicit_collection_creation(db):
    run_threads(8, lambda k: db["fresh"].insert_one({"_id": k}))
    assert db.list_collection_names() == ["fresh"]
    assert sorted(d["_id"] for d in db.fresh.find()) == list(range(8))


def test_concurrent_identical_create_index(db):
    db.c.insert_many([{"a": i} for i in range(100)])
    run_threads(6, lambda k: db.c.create_index("a"))
    assert sorted(ix["name"] for ix in db.c.list_indexes()) == ["_id_", "a_1"]


# --- malformed commands --------------------------------------------------------------

def assert_code(ei, code, name):
    assert ei.value.code == code, ei.value.details
    assert ei.value.details["codeName"] == name


@pytest.mark.parametrize("cmd", [
    {"find": "c", "filter": 5},
    {"find": "c", "sort": "x"},
    {"find": "c", "projection": []},
    {"find": "c", "limit": "x"},
    {"insert": "c", "documents": "x"},
    {"insert": "c", "documents": {"_id": 1}},
    {"update": "c", "updates": 1},
    {"delete": "c", "deletes": "x"},
    {"count": "c", "query": "x"},
    {"aggregate": "c", "pipeline": {}, "cursor": {}},
])
def test_wrong_field_types_are_type_mismatch(server, db, cmd):
    # Raw, because pymongo moves documents/updates/deletes into document
    # sequences and refuses non-documents itself.
    with rawwire.connect(server) as s:
        r = rawwire.command(s, {**cmd, "$db": db.name})
    assert (r["ok"], r.get("code"), r.get("codeName")) == (0.0, 14, "TypeMismatch"), r


def test_collection_name_of_wrong_type(db):
    with pytest.raises(OperationFailure) as ei:
        db.command({"find": 5})
    assert ei.value.code in (2, 14, 73)


def test_write_batch_size_limits(db):
    with pytest.raises(OperationFailure) as ei:
        db.command("insert", "c", documents=[{"_id": i} for i in range(100001)])
    assert_code(ei, 16, "InvalidLength")
    assert db.c.count_documents({}) == 0
    with pytest.raises(OperationFailure) as ei:
        db.command("insert", "c", documents=[])
    assert_code(ei, 16, "InvalidLength")
    r = db.command("insert", "c", documents=[{"_id": i} for i in range(100000)])
    assert r["n"] == 100000
    assert db.c.estimated_document_count() == 100000


def test_unknown_operators(db):
    db.c.insert_one({"_id": 1, "a": 1})
    with pytest.raises(OperationFailure) as ei:
        db.c.find_one({"a": {"$bogus": 1}})
    assert_code(ei, 2, "BadValue")
    with pytest.raises(OperationFailure) as ei:
        list(db.c.aggregate([{"$group": {"_id": None, "x": {"$bogus": 1}}}]))
    assert ei.value.code == 15952
    with pytest.raises(OperationFailure) as ei:
        db.c.update_one({"_id": 1}, {"$bogus": {"a": 1}})
    assert ei.value.code == 9
    assert db.c.find_one() == {"_id": 1, "a": 1}


# --- maxTimeMS ------------------------------------------------------------------------

def test_max_time_ms_expires_on_slow_find(bigdb):
    with pytest.raises(ExecutionTimeout) as ei:
        list(bigdb.c.find({"s": {"$regex": "9-.*c$"}}).sort("s", -1).max_time_ms(1))
    assert_code(ei, 50, "MaxTimeMSExpired")
    # Without the limit the same query completes.
    assert len(list(bigdb.c.find({"s": {"$regex": "99-.*c$"}}, {"_id": 1}).sort("s", -1))) == len(
        [i for i in range(BIG) if f"{i:06d}".endswith("99")])


def test_max_time_ms_expires_on_slow_aggregate(bigdb):
    with pytest.raises(ExecutionTimeout) as ei:
        list(bigdb.c.aggregate([{"$group": {"_id": "$n", "c": {"$sum": 1}}}], maxTimeMS=1))
    assert ei.value.code == 50


def test_max_time_ms_must_be_non_negative(db):
    with pytest.raises(OperationFailure) as ei:
        db.command("find", "c", maxTimeMS=-1)
    assert ei.value.code == 2
