"""The admin commands tools and ODMs call (dbStats, collStats, $collStats,
validate, renameCollection, currentOp, $currentOp, killOp, getParameter,
usersInfo) and the argument checks of every read (maxTimeMS, skip, limit,
batchSize), checked against MongoDB's documented replies and codes."""
import os
import subprocess
import threading
import time
import uuid

import bson
import pymongo
import pytest
from bson.son import SON
from pymongo.errors import OperationFailure

from conftest import Tierdb


def code_of(fn):
    with pytest.raises(OperationFailure) as e:
        fn()
    return e.value.code


def bson_size(doc):
    return len(bson.encode(doc))


# --- dbStats, collStats, $collStats -----------------------------------------

def fill(db):
    a = [{"_id": i, "x": i, "s": "v" * (i % 50), "tags": [i, i + 1]} for i in range(300)]
    b = [{"_id": i, "y": "w" * 10} for i in range(20)]
    db.a.insert_many(a)
    db.b.insert_many(b)
    db.a.create_index("x")
    db.a.create_index("tags", unique=False)
    return sum(map(bson_size, a)), sum(map(bson_size, b))


def test_db_stats_counts_and_sizes(db):
    size_a, size_b = fill(db)
    st = db.command("dbStats")
    assert st["ok"] == 1 and st["db"] == db.name
    assert st["collections"] == 2 and st["views"] == 0
    assert st["objects"] == 320
    assert st["dataSize"] == size_a + size_b, "dataSize is the sum of the documents' BSON sizes"
    assert st["avgObjSize"] == pytest.approx((size_a + size_b) / 320)
    assert st["indexes"] == 4  # two _id indexes, x_1, tags_1
    assert st["storageSize"] > 0 and st["indexSize"] > 0
    assert st["totalSize"] == st["storageSize"] + st["indexSize"]
    assert st["scaleFactor"] == 1
    kb = db.command("dbStats", scale=1024)
    assert kb["dataSize"] == (size_a + size_b) // 1024
    assert kb["scaleFactor"] == 1024
    assert kb["objects"] == 320, "counts are not scaled"


def test_db_stats_counts_views_apart(db):
    db.a.insert_many([{"_id": i} for i in range(5)])
    db.create_collection("v1", viewOn="a", pipeline=[{"$match": {"_id": {"$gt": 2}}}])
    db.create_collection("v2", viewOn="v1", pipeline=[])
    st = db.command("dbStats")
    assert (st["collections"], st["views"], st["objects"]) == (1, 2, 5), "views hold no documents of their own"
    db.v2.drop()
    assert (db.command("dbStats")["views"], db.command("dbStats")["collections"]) == (1, 1)
    # A non-integer scale counts its integer part; freeStorage is refused
    # unless 0 (tierdb does not measure free space).
    assert db.command("dbStats", scale=1023.999)["scaleFactor"] == 1023
    assert db.command("dbStats", freeStorage=0)["ok"] == 1
    assert code_of(lambda: db.command("dbStats", freeStorage=1)) == 238


def test_db_stats_of_a_missing_database_is_zero(client):
    st = client["nothing_" + uuid.uuid4().hex[:8]].command("dbStats")
    assert (st["collections"], st["objects"], st["dataSize"], st["indexes"]) == (0, 0, 0, 0)


def test_db_stats_scale_must_be_positive(db):
    assert code_of(lambda: db.command("dbStats", scale=0)) == 51024
    assert code_of(lambda: db.command("dbStats", scale=-5)) == 51024
    assert code_of(lambda: db.command("dbStats", scale="big")) == 14


def test_coll_stats(db):
    size_a, _ = fill(db)
    st = db.command("collStats", "a")
    assert st["ns"] == f"{db.name}.a"
    assert st["count"] == 300 and st["size"] == size_a
    assert st["avgObjSize"] == size_a // 300
    assert st["nindexes"] == 3
    assert set(st["indexSizes"]) == {"_id_", "x_1", "tags_1"}
    assert all(v > 0 for v in st["indexSizes"].values())
    assert st["totalIndexSize"] == sum(st["indexSizes"].values())
    assert st["totalSize"] == st["storageSize"] + st["totalIndexSize"]
    assert st["capped"] is False
    scaled = db.command("collStats", "a", scale=1024)
    assert scaled["size"] == size_a // 1024
    assert scaled["indexSizes"]["x_1"] == st["indexSizes"]["x_1"] // 1024
    assert scaled["scaleFactor"] == 1024
    assert code_of(lambda: db.command("collStats", "a", scale=0)) == 51024


def test_coll_stats_of_a_missing_collection_is_zero(db):
    st = db.command("collStats", "missing")
    assert (st["count"], st["size"], st["nindexes"], st["totalSize"]) == (0, 0, 0, 0)


def test_coll_stats_unique_index_counts_its_entries(db):
    db.u.insert_many([{"_id": i, "e": f"user{i}@x"} for i in range(200)])
    db.u.create_index("e", unique=True)
    st = db.command("collStats", "u")
    assert st["indexSizes"]["e_1"] > 0
    assert st["totalSize"] == st["storageSize"] + st["totalIndexSize"]
    assert st["totalIndexSize"] > st["indexSizes"]["_id_"] + st["indexSizes"]["e_1"] // 2


def test_coll_stats_stage(db):
    size_a, _ = fill(db)
    docs = list(db.a.aggregate([{"$collStats": {"storageStats": {}, "count": {}}}]))
    assert len(docs) == 1
    d = docs[0]
    assert d["ns"] == f"{db.name}.a" and "host" in d and "localTime" in d
    assert d["count"] == 300
    assert d["storageStats"]["count"] == 300 and d["storageStats"]["size"] == size_a
    assert set(d["storageStats"]["indexSizes"]) == {"_id_", "x_1", "tags_1"}
    scaled = list(db.a.aggregate([{"$collStats": {"storageStats": {"scale": 1024}}}]))[0]
    assert scaled["storageStats"]["size"] == size_a // 1024 and "count" not in scaled
    # later stages run on the stage's document
    assert list(db.a.aggregate([{"$collStats": {"count": {}}}, {"$project": {"_id": 0, "count": 1}}])) == [{"count": 300}]
    # what mongosh's coll.stats() sends
    assert list(db.a.aggregate([{"$collStats": {"storageStats": {"scale": 1}}},
                                {"$group": {"_id": None, "v": {"$sum": "$storageStats.count"}}}]))[0]["v"] == 300


def test_coll_stats_stage_refusals(db):
    db.a.insert_one({"_id": 1})
    assert code_of(lambda: list(db.missing.aggregate([{"$collStats": {"storageStats": {}}}]))) == 26
    assert code_of(lambda: list(db.missing.aggregate([{"$collStats": {"count": {}}}]))) == 26
    db.command("create", "view", viewOn="a", pipeline=[])
    assert code_of(lambda: list(db.view.aggregate([{"$collStats": {"count": {}}}]))) == 166  # not NamespaceNotFound
    assert code_of(lambda: db.command("collStats", "view")) == 166
    assert code_of(lambda: list(db.a.aggregate([{"$collStats": {"latencyStats": {}}}]))) == 238
    assert code_of(lambda: list(db.a.aggregate([{"$match": {}}, {"$collStats": {"count": {}}}]))) == 40602
    assert code_of(lambda: list(db.a.aggregate([{"$collStats": {"bogus": {}}}]))) == 40415
    assert code_of(lambda: list(db.a.aggregate([{"$collStats": None}]))) == 5447000
    assert code_of(lambda: list(db.a.aggregate([{"$collStats": {"storageStats": {"scale": -1000}}}]))) == 51024
    assert code_of(lambda: list(db.a.aggregate([{"$collStats": {"storageStats": {"scale": "big"}}}]))) == 14
    # an empty spec is the namespace, host and time only
    assert set(list(db.a.aggregate([{"$collStats": {}}]))[0]) == {"ns", "host", "localTime"}
    assert list(db.a.aggregate([{"$collStats": {"storageStats": {"scale": 42.42}}}]))[0]["storageStats"]["scaleFactor"] == 42


# --- validate -----------------------------------------------------------------

def test_validate_a_sound_collection(db):
    db.v.insert_many([{"_id": i, "x": i % 7, "tags": [1, 2, 3] if i % 2 else "one", "e": i} for i in range(100)])
    db.v.create_index("x")
    db.v.create_index("tags")
    db.v.create_index("e", unique=True)
    r = db.command("validate", "v", full=True)
    assert r["ok"] == 1 and r["valid"] is True, r
    assert r["ns"] == f"{db.name}.v"
    assert r["nrecords"] == 100 and r["nInvalidDocuments"] == 0
    assert r["nIndexes"] == 4
    assert r["errors"] == [] and r["repaired"] is False
    # MongoDB counts one key per indexed value: 50 arrays of 3 plus 50 strings
    assert r["keysPerIndex"] == {"_id_": 100, "x_1": 100, "tags_1": 50 * 3 + 50, "e_1": 100}
    assert all(d["valid"] for d in r["indexDetails"].values())


def test_validate_and_stats_with_text_sparse_and_partial_indexes(db):
    db.k.insert_many([{"_id": i, "t": f"red fox number{i}", "s": i} if i % 2 else {"_id": i, "t": "blue"} for i in range(20)])
    db.k.create_index([("t", "text")])
    db.k.create_index("s", sparse=True)
    db.k.create_index([("t", 1)], name="odd", partialFilterExpression={"s": {"$exists": True}})
    r = db.command("validate", "k")
    assert r["valid"] is True, r["errors"]
    assert r["keysPerIndex"]["s_1"] == 10, "a sparse index holds keys of the documents that have the field"
    assert r["keysPerIndex"]["odd"] == 10, "a partial index holds keys of the documents its filter takes"
    # "red", "fox" and one "numberN" term per odd document, "blue" per even one
    assert r["keysPerIndex"]["t_text"] == 10 * 3 + 10
    st = db.command("collStats", "k")
    assert set(st["indexSizes"]) == {"_id_", "t_text", "s_1", "odd"}
    assert all(v > 0 for v in st["indexSizes"].values())
    assert st["totalSize"] == st["storageSize"] + st["totalIndexSize"]


def test_validate_refusals(db):
    assert code_of(lambda: db.command("validate", "missing")) == 26
    db.v.insert_one({"_id": 1})
    assert code_of(lambda: db.command("validate", "v", repair=True)) == 238
    assert code_of(lambda: db.command("validate", "v", bogus=1)) == 40415


def psql(server, sql):
    with open(os.path.join(server.data_dir, "postgres.socketdir")) as f:
        socket_dir = f.read().strip()
    r = subprocess.run(["psql", "-h", socket_dir, "-p", "5432", "-U", "postgres", "-d", "tierdb", "-Atqc", sql],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_validate_finds_corruption(server, db):
    """Damage the stored rows behind tierdb's back: validate must say so."""
    db.v.insert_many([{"_id": i, "x": i} for i in range(10)])
    db.v.create_index("x")
    assert db.command("validate", "v")["valid"] is True
    tbl = psql(server, f"SELECT tbl FROM tierdb.collections WHERE db = '{db.name}' AND name = 'v'")
    col = psql(server, f"SELECT indexes->0->>'column' FROM tierdb.collections WHERE db = '{db.name}' AND name = 'v'")
    # an index key that is not the document's, and a document that is not BSON
    psql(server, f"""UPDATE tierdb_data."{tbl}" SET "{col}" = (SELECT "{col}" FROM tierdb_data."{tbl}" ORDER BY _id DESC LIMIT 1)
                     WHERE _id = (SELECT _id FROM tierdb_data."{tbl}" ORDER BY _id LIMIT 1)""")
    psql(server, f"""UPDATE tierdb_data."{tbl}" SET doc = '\\x0500000001'::bytea
                     WHERE _id = (SELECT _id FROM tierdb_data."{tbl}" ORDER BY _id DESC LIMIT 1)""")
    r = db.command("validate", "v")
    assert r["valid"] is False
    assert r["nInvalidDocuments"] == 1
    assert r["nrecords"] == 10
    assert len(r["errors"]) == 2, r["errors"]
    assert any("x_1" in e for e in r["errors"])


def test_validate_finds_a_lost_unique_index_entry(server, db):
    db.u.insert_many([{"_id": i, "e": f"u{i}"} for i in range(10)])
    db.u.create_index("e", unique=True)
    assert db.command("validate", "u")["valid"] is True
    tbl = psql(server, f"SELECT tbl FROM tierdb.collections WHERE db = '{db.name}' AND name = 'u'")
    col = psql(server, f"SELECT indexes->0->>'column' FROM tierdb.collections WHERE db = '{db.name}' AND name = 'u'")
    entries = f"{tbl}_u{col[1:]}"
    psql(server, f"""DELETE FROM tierdb_data."{entries}" WHERE k = (SELECT k FROM tierdb_data."{entries}" ORDER BY k LIMIT 1)""")
    r = db.command("validate", "u")
    assert r["valid"] is False and r["nInvalidDocuments"] == 0
    assert any("e_1" in e for e in r["errors"]), r["errors"]


# --- renameCollection ---------------------------------------------------------

def test_rename_within_a_database(db):
    db.src.insert_many([{"_id": i, "x": i} for i in range(5)])
    db.src.create_index("x")
    db.src.rename("dst")
    assert "src" not in db.list_collection_names()
    assert sorted(d["_id"] for d in db.dst.find()) == list(range(5))
    assert {ix["name"] for ix in db.dst.list_indexes()} == {"_id_", "x_1"}
    assert db.dst.find_one({"x": 3})["_id"] == 3
    db.dst.insert_one({"_id": 9, "x": 9})  # writes go to the renamed table
    assert db.dst.count_documents({}) == 6


def test_rename_refuses_an_existing_target_unless_drop_target(db):
    db.a.insert_one({"_id": "a"})
    db.b.insert_one({"_id": "b"})
    assert code_of(lambda: db.a.rename("b")) == 48
    assert db.b.find_one()["_id"] == "b"
    db.a.rename("b", dropTarget=True)
    assert [d["_id"] for d in db.b.find()] == ["a"]
    assert db.list_collection_names() == ["b"]


def test_rename_across_databases(client, db):
    other = client["t_other_" + uuid.uuid4().hex[:8]]
    try:
        db.a.insert_many([{"_id": i} for i in range(3)])
        client.admin.command("renameCollection", f"{db.name}.a", to=f"{other.name}.moved")
        assert other.moved.count_documents({}) == 3
        assert "a" not in db.list_collection_names()
    finally:
        client.drop_database(other.name)


def test_rename_refusals(client, db):
    db.a.insert_one({"_id": 1})
    assert code_of(lambda: client.admin.command("renameCollection", f"{db.name}.missing", to=f"{db.name}.x")) == 26
    assert code_of(lambda: client.admin.command("renameCollection", f"{db.name}.a", to=f"{db.name}.a")) == 20
    # only against admin
    assert code_of(lambda: db.command("renameCollection", f"{db.name}.a", to=f"{db.name}.x")) == 13
    assert code_of(lambda: client.admin.command("renameCollection", "nodot", to=f"{db.name}.x")) == 73
    assert code_of(lambda: client.admin.command("renameCollection", f"{db.name}.a")) == 40414


# --- currentOp, $currentOp, killOp, maxTimeMS -----------------------------------

class Blocked:
    """An update that waits in PostgreSQL for a row lock held by an open
    transaction, until the transaction ends or the update is interrupted."""

    def __init__(self, server, db, **cmd_args):
        self.holder = server.client()
        self.session = self.holder.start_session()
        self.session.start_transaction()
        coll = self.holder[db.name].locked
        coll.update_one({"_id": 1}, {"$set": {"by": "txn"}}, session=self.session)
        self.other = server.client(appname="blocked-app")
        self.error = None
        self.done = threading.Event()
        self.name = db.name

        def run():
            try:
                self.other[db.name].command("update", "locked", updates=[{"q": {"_id": 1}, "u": {"$set": {"by": "blocked"}}}],
                                            **cmd_args)
            except OperationFailure as e:
                self.error = e
            finally:
                self.done.set()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def find_op(self, admin, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            ops = admin.command(SON([("currentOp", 1), ("command.update", "locked"), ("ns", f"{self.name}.locked")]))["inprog"]
            if ops:
                return ops[0]
            time.sleep(0.05)
        raise AssertionError("the blocked update never showed in currentOp")

    def close(self):
        self.session.abort_transaction()
        self.session.end_session()
        self.done.wait(30)
        self.holder.close()
        self.other.close()


def test_current_op_shows_a_running_operation_with_its_tier(server, client, db):
    db.locked.insert_one({"_id": 1})
    b = Blocked(server, db, priority="low", comment="find-me")
    try:
        op = b.find_op(client.admin)
        assert isinstance(op["opid"], int) and op["active"] is True
        assert op["ns"] == f"{db.name}.locked" and op["op"] == "update"
        assert op["command"]["update"] == "locked" and op["command"]["comment"] == "find-me"
        assert op["tier"] == "low"
        assert op["secs_running"] >= 0 and op["microsecs_running"] > 0
        assert op["client"].startswith("127.0.0.1:")
        assert op["appName"] == "blocked-app" and op["clientMetadata"]["driver"]["name"].startswith("PyMongo")
        # the filter is a query over the operation documents
        assert client.admin.command(SON([("currentOp", 1), ("tier", "high"), ("command.update", "locked")]))["inprog"] == []
        assert [o["opid"] for o in client.admin.command(SON([("currentOp", 1), ("tier", "low"), ("command.update", "locked")]))["inprog"]] == [op["opid"]]
        staged = list(client.admin.aggregate([{"$currentOp": {"allUsers": True}},
                                              {"$match": {"command.update": "locked"}},
                                              {"$project": {"opid": 1, "tier": 1}}]))
        assert staged == [{"opid": op["opid"], "tier": "low"}]
    finally:
        b.close()
    assert b.error is None, "the update goes on once the lock is released"
    assert db.locked.find_one()["by"] == "blocked"


def test_kill_op_interrupts_the_operation(server, client, db):
    db.locked.insert_one({"_id": 1})
    b = Blocked(server, db)
    try:
        op = b.find_op(client.admin)
        r = client.admin.command("killOp", op=op["opid"])
        assert r["ok"] == 1 and r["info"] == "attempting to kill op"
        assert b.done.wait(20), "the killed operation is still running"
        assert b.error is not None and b.error.code == 11601, b.error
        assert b.error.details["codeName"] == "Interrupted"
    finally:
        b.close()
    assert db.locked.find_one()["_id"] == 1 and "by" not in db.locked.find_one(), "the killed update did not happen"


def test_kill_op_inside_a_transaction_aborts_it(server, client, db):
    db.locked.insert_one({"_id": 1})
    holder, other = server.client(), server.client()
    s1, s2 = holder.start_session(), other.start_session()
    try:
        s1.start_transaction()
        holder[db.name].locked.update_one({"_id": 1}, {"$set": {"by": "first"}}, session=s1)
        s2.start_transaction()
        other[db.name].log.insert_one({"_id": "written in the killed transaction"}, session=s2)
        errors = []

        def blocked():
            try:
                other[db.name].locked.update_one({"_id": 1}, {"$set": {"by": "second"}}, session=s2)
            except OperationFailure as e:
                errors.append(e)

        th = threading.Thread(target=blocked, daemon=True)
        th.start()
        ops = []
        deadline = time.time() + 20
        while not ops and time.time() < deadline:
            ops = client.admin.command(SON([("currentOp", 1), ("command.update", "locked"), ("ns", f"{db.name}.locked")]))["inprog"]
            time.sleep(0.05)
        assert ops, "the blocked statement never showed"
        client.admin.command("killOp", op=ops[0]["opid"])
        th.join(20)
        assert errors and errors[0].code == 11601
        with pytest.raises(OperationFailure) as e:
            s2.commit_transaction()
        assert e.value.code == 251, "the killed statement's transaction is aborted"
        assert db.log.count_documents({}) == 0
        s1.abort_transaction()
        assert db.locked.find_one() == {"_id": 1}
    finally:
        s1.end_session()
        s2.end_session()
        holder.close()
        other.close()


def test_kill_op_arguments(client, db):
    assert client.admin.command("killOp", op=2**31 - 2)["ok"] == 1, "an unknown opid is not an error"
    assert code_of(lambda: db.command("killOp", op=1)) == 13
    assert code_of(lambda: client.admin.command("killOp")) == 4
    assert code_of(lambda: client.admin.command("killOp", op="x")) == 14
    assert code_of(lambda: client.admin.command("killOp", op=bson.int64.Int64(2**63 - 1))) == 26823
    assert code_of(lambda: client.admin.command("killOp", op=1.1)) == 2
    assert code_of(lambda: client.admin.command("killOp", op=1.7976931348623157e308)) == 2
    for opid in [123456.0, 123456, bson.int64.Int64(123456), -5]:
        assert client.admin.command("killOp", op=opid) == {"info": "attempting to kill op", "ok": 1.0}
    assert code_of(lambda: db.command("currentOp")) == 13
    assert code_of(lambda: list(db.c.aggregate([{"$match": {}}, {"$currentOp": {}}]))) == 40602
    assert code_of(lambda: list(client.admin.aggregate([{"$currentOp": {"allUsers": "yes"}}]))) == 9


def test_current_op_idle_connections(server, client):
    idle = server.client()
    idle.admin.command("ping")  # connected, then idle
    try:
        ops = list(client.admin.aggregate([{"$currentOp": {"allUsers": True, "idleConnections": True}}]))
        idle_ops = [o for o in ops if o["active"] is False]
        assert idle_ops and all(o["type"] == "idleConnection" for o in idle_ops)
        assert len({o["connectionId"] for o in ops}) == len(ops), "a connection is listed once"
        # Without authentication every connection is the caller's own.
        own = list(client.admin.aggregate([{"$currentOp": {"idleConnections": True, "idleSessions": False}}]))
        assert any(o["type"] == "idleConnection" for o in own)
        active_only = list(client.admin.aggregate([{"$currentOp": {"allUsers": True, "idleSessions": False}}]))
        assert all(o["active"] for o in active_only)
        assert any(o["active"] is False for o in client.admin.command(SON([("currentOp", 1), ("$all", True)]))["inprog"])
        # idleCursors: tests/test_explain_currentop_more.py
    finally:
        idle.close()


def test_current_op_idle_sessions(client, db):
    # A transaction open between its statements is an idle session:
    # listed by $currentOp (idleSessions is true by default) and by the
    # currentOp command, not with idleSessions: false, and no longer once
    # committed.
    db.c.insert_one({"_id": 0})
    with client.start_session() as s:
        s.start_transaction()
        db.c.insert_one({"_id": 1}, session=s)
        lsid = s.session_id["id"]

        def mine(ops):
            return [o for o in ops if o.get("type") == "idleSession" and o["lsid"]["id"] == lsid]

        (o,) = mine(client.admin.aggregate([{"$currentOp": {}}]))
        assert o["active"] is False and o["desc"] == "inactive transaction"
        params = o["transaction"]["parameters"]
        assert params["autocommit"] is False and params["txnNumber"] >= 1
        assert o["transaction"]["timeOpenMicros"] >= 0
        assert o["transaction"]["expiryTime"] > o["transaction"]["startWallClockTime"]
        assert mine(client.admin.aggregate([{"$currentOp": {"allUsers": True}}]))
        assert not mine(client.admin.aggregate([{"$currentOp": {"idleSessions": False}}]))
        assert mine(client.admin.command("currentOp")["inprog"])
        assert mine(client.admin.command(SON([("currentOp", 1), ("type", "idleSession")]))["inprog"])
        assert not mine(client.admin.command(SON([("currentOp", 1), ("type", "op")]))["inprog"])
        s.commit_transaction()
        assert not mine(client.admin.aggregate([{"$currentOp": {}}]))
    assert db.c.count_documents({}) == 2


def test_current_op_shows_requests_waiting_for_admission(new_server):
    """With one request allowed in PostgreSQL at a time, a second one waits
    at the door: currentOp says so, and killOp takes it out of the queue."""
    t = new_server(extra_args=["--parallelism", "1", "--enable-test-commands"]).start()
    c = t.client()
    results = {}

    def sleeper(name, ms):
        try:
            results[name] = t.client().admin.command("sleep", millis=ms, comment=name)
        except OperationFailure as e:
            results[name] = e

    first = threading.Thread(target=sleeper, args=("first", 60000), daemon=True)
    first.start()
    deadline = time.time() + 20
    while time.time() < deadline and not c.admin.command(SON([("currentOp", 1), ("command.comment", "first")]))["inprog"]:
        time.sleep(0.05)
    second = threading.Thread(target=sleeper, args=("second", 10), daemon=True)
    second.start()
    ops = {}
    while time.time() < deadline and len(ops) < 2:
        ops = {o["command"]["comment"]: o for o in c.admin.command(SON([("currentOp", 1), ("command.sleep", 1)]))["inprog"]}
        time.sleep(0.05)
    assert ops["first"]["waitingForAdmission"] is False
    assert ops["second"]["waitingForAdmission"] is True
    c.admin.command("killOp", op=ops["second"]["opid"])
    second.join(20)
    assert isinstance(results["second"], OperationFailure) and results["second"].code == 11601
    c.admin.command("killOp", op=ops["first"]["opid"])
    first.join(20)
    assert isinstance(results["first"], OperationFailure) and results["first"].code == 11601
    c.close()


def test_max_time_ms_is_honoured(server, db):
    db.locked.insert_one({"_id": 1})
    b = Blocked(server, db, maxTimeMS=300)
    try:
        assert b.done.wait(30)
        assert b.error is not None and b.error.code == 50, b.error
        assert b.error.details["codeName"] == "MaxTimeMSExpired"
    finally:
        b.close()


@pytest.mark.parametrize("kind", ["update", "delete", "insert"])
def test_an_interrupted_retryable_write_fails_with_its_interruption(server, db, kind):
    # A retryable write (lsid and txnNumber, as drivers send) whose second
    # statement waits on a row held by another transaction until maxTimeMS:
    # the command fails with MaxTimeMSExpired (not WriteConflict, as when
    # the interruption travelled as a writeError), nothing of it is
    # recorded, and a retry with the same txnNumber then runs it whole.
    db.c.insert_many([{"_id": 1}, {"_id": 2}])
    holder, other = server.client(), server.client()
    s, s2 = holder.start_session(), other.start_session()
    try:
        s.start_transaction()
        holder[db.name].c.update_one({"_id": 2}, {"$set": {"held": 1}}, session=s)
        holder[db.name].c.insert_one({"_id": 4}, session=s)
        cmd = {
            "update": ("update", "c", {"updates": [{"q": {"_id": 1}, "u": {"$set": {"x": 1}}}, {"q": {"_id": 2}, "u": {"$set": {"x": 1}}}]}),
            "delete": ("delete", "c", {"deletes": [{"q": {"_id": 1}, "limit": 1}, {"q": {"_id": 2}, "limit": 1}]}),
            "insert": ("insert", "c", {"documents": [{"_id": 3}, {"_id": 4}]}),
        }[kind]
        name, coll, args = cmd
        with pytest.raises(OperationFailure) as e:
            other[db.name].command(name, coll, session=s2, txnNumber=bson.int64.Int64(1), maxTimeMS=300, **args)
        assert e.value.code == 50 and e.value.details["codeName"] == "MaxTimeMSExpired", e.value.details
        s.abort_transaction()
        assert sorted(d["_id"] for d in db.c.find({"x": {"$exists": True}})) == []
        r = other[db.name].command(name, coll, session=s2, txnNumber=bson.int64.Int64(1), **args)
        assert r["n"] == 2 and "writeErrors" not in r
        # In a transaction, the interrupted statement fails and aborts it.
        s.start_transaction()
        holder[db.name].c.insert_one({"_id": 9}, session=s)
        with other.start_session() as s3:
            s3.start_transaction()
            with pytest.raises(OperationFailure) as e:
                other[db.name].command("insert", "c", session=s3, documents=[{"_id": 8}, {"_id": 9}], maxTimeMS=300)
            assert e.value.code == 50
            with pytest.raises(OperationFailure) as e:
                s3.commit_transaction()
            assert e.value.code == 251
        s.abort_transaction()
        assert db.c.find_one({"_id": 8}) is None
    finally:
        s.end_session()
        s2.end_session()
        holder.close()
        other.close()


# --- argument checks -----------------------------------------------------------

@pytest.mark.parametrize("value", [-1, -1000, bson.int64.Int64(-5)])
def test_max_time_ms_negative_is_bad_value(db, value):
    assert code_of(lambda: db.command("find", "c", maxTimeMS=value)) == 2
    assert code_of(lambda: db.command("ping", maxTimeMS=value)) == 2


@pytest.mark.parametrize("value", [1.5, "100", 2**31, True])
def test_max_time_ms_must_be_a_whole_number_in_range(db, value):
    assert code_of(lambda: db.command("find", "c", maxTimeMS=value)) == 2


def test_max_time_ms_accepts_whole_numbers(db):
    db.c.insert_one({"_id": 1})
    for v in [0, 5000, 2**31 - 1, 5000.0, bson.int64.Int64(5000)]:
        assert db.command("find", "c", maxTimeMS=v)["cursor"]["firstBatch"] == [{"_id": 1}]


def test_skip_limit_batch_size_codes(db):
    db.c.insert_many([{"_id": i} for i in range(5)])
    for field in ["skip", "limit", "batchSize"]:
        with pytest.raises(OperationFailure) as e:
            db.command("find", "c", **{field: -1})
        assert e.value.code == 51024
        assert f"BSON field '{field}' value must be >= 0" in str(e.value)
        assert code_of(lambda: db.command("find", "c", **{field: "2"})) == 14
    assert code_of(lambda: db.command("aggregate", "c", pipeline=[], cursor={"batchSize": -1})) == 51024
    assert code_of(lambda: db.command("count", "c", skip=-1)) == 51024
    assert db.command("count", "c", limit=-2)["n"] == 2, "count takes a negative limit as its absolute value"
    # a fraction is truncated, as MongoDB's parser does
    assert [d["_id"] for d in db.command("find", "c", skip=1.7, limit=2.2)["cursor"]["firstBatch"]] == [1, 2]
    cur = db.command("find", "c", batchSize=1)["cursor"]
    assert code_of(lambda: db.command("getMore", cur["id"], collection="c", batchSize=-1)) == 2
    # pymongo's own negative limit is a single batch, sent as limit + singleBatch
    assert len(list(db.c.find().limit(-3))) == 3


# --- getParameter --------------------------------------------------------------

def test_get_parameter(client):
    admin = client.admin
    every = admin.command("getParameter", "*")
    assert every["featureCompatibilityVersion"] == {"version": "6.0"}
    assert every["cursorTimeoutMillis"] == 3000
    assert set(every["authenticationMechanisms"]) == {"SCRAM-SHA-1", "SCRAM-SHA-256"}
    same = admin.command("getParameter", {"allParameters": True})
    assert {k: v for k, v in same.items() if k != "ok"} == {k: v for k, v in every.items() if k != "ok"}
    detailed = admin.command("getParameter", {"allParameters": True, "showDetails": True})
    assert detailed["cursorTimeoutMillis"] == {"value": 3000, "settableAtRuntime": False, "settableAtStartup": True}
    one = admin.command("getParameter", 1, cursorTimeoutMillis=1)
    assert set(one) == {"cursorTimeoutMillis", "ok"}
    # unknown names are skipped beside known ones; alone they are InvalidOptions
    assert set(admin.command("getParameter", 1, cursorTimeoutMillis=1, noSuchParameter=1)) == {"cursorTimeoutMillis", "ok"}
    with pytest.raises(OperationFailure) as e:
        admin.command("getParameter", 1, noSuchParameter=1)
    assert e.value.code == 72 and "no option found to get" in str(e.value)
    assert code_of(lambda: admin.command("getParameter", 1)) == 72
    assert code_of(lambda: admin.command("getParameter", {"allParameters": True, "bogus": 1})) == 40415
    # an admin-only command, as in MongoDB
    assert code_of(lambda: client.test.command("getParameter", 1, cursorTimeoutMillis=1)) == 13


# --- usersInfo -----------------------------------------------------------------

ADMIN_PW = "adm-" + uuid.uuid4().hex


@pytest.fixture(scope="module")
def authsrv(tierdb_bin):
    t = Tierdb(tierdb_bin, env={"TIERDB_ADMIN_PASSWORD": ADMIN_PW}, extra_args=["--admin-user", "admin"]).start()
    t.admin = t.client(username="admin", password=ADMIN_PW)
    yield t
    t.admin.close()
    t.cleanup()


def test_users_info_forms(authsrv):
    a = authsrv.admin
    shop = a.shop
    shop.command("createUser", "ann", pwd="pw-ann", roles=["read"], customData={"team": "x"})
    shop.command("createUser", "bob", pwd="pw-bob", roles=["readWrite"])
    try:
        ann = shop.command("usersInfo", "ann")["users"]
        assert len(ann) == 1
        u = ann[0]
        assert u["_id"] == "shop.ann" and u["user"] == "ann" and u["db"] == "shop"
        assert isinstance(u["userId"], (bson.binary.Binary, uuid.UUID)), "MongoDB gives every user a userId UUID"
        assert u["roles"] == [{"role": "read", "db": "shop"}]
        assert u["customData"] == {"team": "x"}
        assert "credentials" not in u
        by_doc = a.admin.command("usersInfo", {"user": "ann", "db": "shop"})["users"]
        assert by_doc[0]["userId"] == u["userId"]
        both = shop.command("usersInfo", [{"user": "bob", "db": "shop"}, "ann", "ann"])["users"]
        assert [x["user"] for x in both] == ["ann", "bob"], "in user name order, each once"
        assert sorted(x["user"] for x in shop.command("usersInfo", 1)["users"]) == ["ann", "bob"]
        every = a.admin.command("usersInfo", {"forAllDBs": True})["users"]
        assert {"ann", "bob", "admin"} <= {x["user"] for x in every}
        assert shop.command("usersInfo", "nobody")["users"] == []
        # options
        assert "customData" not in shop.command("usersInfo", "ann", showCustomData=False)["users"][0]
        priv = shop.command("usersInfo", "ann", showPrivileges=True)["users"][0]
        assert "inheritedPrivileges" in priv and "inheritedRoles" in priv
        assert shop.command("usersInfo", "ann", showAuthenticationRestrictions=True)["users"][0]["authenticationRestrictions"] == []
        filtered = shop.command("usersInfo", 1, filter={"roles.role": "readWrite"})["users"]
        assert [x["user"] for x in filtered] == ["bob"]
        assert code_of(lambda: shop.command("usersInfo", "ann", showCredentials=True)) == 238
        assert code_of(lambda: shop.command("usersInfo", "ann", bogus=1)) == 40415
        assert code_of(lambda: shop.command("usersInfo", 2)) == 2
        for bad in [None, True, [], {"foo": "bar"}, {"user": 123, "db": "shop"}, {"user": "ann", "db": 1},
                    [{"user": "missing_db"}], [{"db": "shop"}], [5]]:
            assert code_of(lambda: shop.command("usersInfo", bad)) == 2, bad
        # a user dropped and created again is another user
        shop.command("dropUser", "bob")
        shop.command("createUser", "bob", pwd="pw-bob2", roles=["read"])
        first_id = [x for x in both if x["user"] == "bob"][0]["userId"]
        assert shop.command("usersInfo", "bob")["users"][0]["userId"] != first_id
    finally:
        for n in ["ann", "bob"]:
            try:
                shop.command("dropUser", n)
            except OperationFailure:
                pass


def test_current_op_of_other_users_needs_inprog(authsrv):
    a = authsrv.admin
    a.shop.command("createUser", "plain", pwd="pw-plain", roles=["readWrite"])
    c = authsrv.client(username="plain", password="pw-plain", authSource="shop")
    try:
        assert code_of(lambda: c.admin.command("currentOp")) == 13
        own = c.admin.command(SON([("currentOp", 1), ("$ownOps", True)]))["inprog"]
        assert own and all(op["effectiveUsers"] == [{"user": "plain", "db": "shop"}] for op in own)
        assert c.admin.command("killOp", op=1)["ok"] == 1, "one's own operations need no killop privilege"
        assert [o["effectiveUsers"] for o in c.admin.aggregate([{"$currentOp": {}}])] == [[{"user": "plain", "db": "shop"}]]
        assert code_of(lambda: list(c.admin.aggregate([{"$currentOp": {"allUsers": True}}]))) == 13
        # Idle sessions: one's own; idle connections, whose users tierdb
        # does not know, only with allUsers.
        with c.start_session() as mine, a.start_session() as theirs:
            mine.start_transaction()
            c.shop.t.insert_one({"_id": 1}, session=mine)
            theirs.start_transaction()
            a.shop.t.insert_one({"_id": 2}, session=theirs)
            idle = [o for o in c.admin.aggregate([{"$currentOp": {}}]) if o["type"] == "idleSession"]
            assert [(o["lsid"]["id"], o["effectiveUsers"]) for o in idle] == [(mine.session_id["id"], [{"user": "plain", "db": "shop"}])]
            every = [o["lsid"]["id"] for o in a.admin.aggregate([{"$currentOp": {"allUsers": True}}]) if o["type"] == "idleSession"]
            assert mine.session_id["id"] in every and theirs.session_id["id"] in every
            mine.abort_transaction()
            theirs.abort_transaction()
        assert code_of(lambda: list(c.admin.aggregate([{"$currentOp": {"idleConnections": True}}]))) == 238
        # $collStats needs collStats (readWrite has it), not find
        a.shop.items.insert_one({"_id": 1})
        assert list(c.shop.items.aggregate([{"$collStats": {"count": {}}}]))[0]["count"] >= 1
        # renameCollection within the database needs renameCollectionSameDB (readWrite has it)
        a.shop.r1.insert_one({"_id": 1})
        c.admin.command("renameCollection", "shop.r1", to="shop.r2")
        assert a.shop.r2.count_documents({}) == 1
        # out of its databases it is refused, and nothing moves
        assert code_of(lambda: c.admin.command("renameCollection", "shop.r2", to="elsewhere.r2")) == 13
        assert a.shop.r2.count_documents({}) == 1
    finally:
        c.close()
        a.shop.command("dropUser", "plain")
