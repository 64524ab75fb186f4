"""Multi-document transactions, retryable writes and logical sessions,
through pymongo against a real tierdb on its embedded PostgreSQL."""
import re
import signal
import threading
import time
import urllib.request
import uuid

import bson
import pytest
import rawwire
from conftest import free_port
from bson.binary import Binary, UUID_SUBTYPE
from pymongo import MongoClient, ReturnDocument
from pymongo.errors import DuplicateKeyError, OperationFailure
from pymongo.read_concern import ReadConcern
from pymongo.write_concern import WriteConcern


def lsid():
    return {"id": Binary(uuid.uuid4().bytes, UUID_SUBTYPE)}


class Raw:
    """Commands sent as written: pymongo would replace a command's lsid
    with one of its own sessions."""

    def __init__(self, server):
        self.sock = rawwire.connect(server)
        self.n = 0

    def __call__(self, db, cmd):
        self.n += 1
        reply = rawwire.command(self.sock, {**cmd, "$db": db}, request_id=self.n)
        if reply.get("ok") != 1:
            raise OperationFailure(reply.get("errmsg"), reply.get("code"), reply)
        return reply

    def close(self):
        self.sock.close()


@pytest.fixture
def raw(server):
    r = Raw(server)
    yield r
    r.close()


# --- transactions -----------------------------------------------------------

def test_commit_makes_writes_visible_together(client, db):
    db.create_collection("acct")
    db.acct.insert_many([{"_id": "a", "bal": 100}, {"_id": "b", "bal": 0}])
    with client.start_session() as s:
        with s.start_transaction():
            db.acct.update_one({"_id": "a"}, {"$inc": {"bal": -30}}, session=s)
            db.acct.update_one({"_id": "b"}, {"$inc": {"bal": 30}}, session=s)
            db.acct.insert_one({"_id": "log1", "amount": 30}, session=s)
            # Inside: the transaction sees its own writes ...
            assert db.acct.find_one({"_id": "a"}, session=s)["bal"] == 70
            # ... outside, nobody does before the commit.
            assert db.acct.find_one({"_id": "a"})["bal"] == 100
            assert db.acct.find_one({"_id": "log1"}) is None
    assert {d["_id"]: d.get("bal") for d in db.acct.find()} == {"a": 70, "b": 30, "log1": None}


def test_abort_discards_every_write(client, db):
    db.create_collection("c")
    db.c.insert_one({"_id": 1, "n": 1})
    with client.start_session() as s:
        s.start_transaction()
        db.c.insert_one({"_id": 2}, session=s)
        db.c.update_one({"_id": 1}, {"$set": {"n": 99}}, session=s)
        db.c.delete_one({"_id": 1}, session=s)
        s.abort_transaction()
    assert list(db.c.find()) == [{"_id": 1, "n": 1}]


def test_with_transaction_helper_commits_and_returns(client, db):
    db.create_collection("orders")

    def work(s):
        db.orders.insert_one({"_id": 1, "item": "tea"}, session=s)
        db.orders.insert_one({"_id": 2, "item": "cake"}, session=s)
        return db.orders.count_documents({}, session=s)

    with client.start_session() as s:
        assert s.with_transaction(work) == 2
    assert db.orders.count_documents({}) == 2


def test_snapshot_reads_ignore_later_commits(client, db):
    db.create_collection("snap")
    db.snap.insert_one({"_id": 1, "v": 1})
    with client.start_session() as s:
        with s.start_transaction(read_concern=ReadConcern("snapshot")):
            assert db.snap.find_one({"_id": 1}, session=s)["v"] == 1
            db.snap.update_one({"_id": 1}, {"$set": {"v": 2}})  # outside, committed
            db.snap.insert_one({"_id": 2})
            assert db.snap.find_one({"_id": 1}, session=s)["v"] == 1
            assert db.snap.count_documents({}, session=s) == 1
    assert db.snap.find_one({"_id": 1})["v"] == 2


def test_server_status_counts_transactions(client, db):
    before = client.admin.command("serverStatus")["transactions"]
    with client.start_session() as s:
        with s.start_transaction():
            db.st.insert_one({"_id": 1}, session=s)
        s.start_transaction()
        db.st.insert_one({"_id": 2}, session=s)
        s.abort_transaction()
    after = client.admin.command("serverStatus")["transactions"]
    assert after["totalStarted"] - before["totalStarted"] == 2
    assert after["totalCommitted"] - before["totalCommitted"] == 1
    assert after["totalAborted"] - before["totalAborted"] == 1


def test_write_conflict_is_transient_and_with_transaction_retries(client, db):
    db.create_collection("hot")
    db.hot.insert_one({"_id": 1, "n": 0})
    s1 = client.start_session()
    s1.start_transaction()
    db.hot.update_one({"_id": 1}, {"$inc": {"n": 1}}, session=s1)
    # A second transaction that read the document before the first commits
    # cannot write it afterwards.
    s2 = client.start_session()
    s2.start_transaction()
    assert db.hot.find_one({"_id": 1}, session=s2)["n"] == 0
    s1.commit_transaction()
    with pytest.raises(OperationFailure) as e:
        db.hot.update_one({"_id": 1}, {"$inc": {"n": 1}}, session=s2)
    assert e.value.code == 112  # WriteConflict
    assert e.value.has_error_label("TransientTransactionError")
    s2.abort_transaction()
    # The helper retries a transient failure from the start.
    attempts = []

    def work(s):
        attempts.append(1)
        doc = db.hot.find_one({"_id": 1}, session=s)
        if len(attempts) == 1:
            db.hot.update_one({"_id": 1}, {"$inc": {"n": 10}})  # a concurrent writer
        db.hot.update_one({"_id": 1}, {"$set": {"n": doc["n"] + 1}}, session=s)

    with client.start_session() as s:
        s.with_transaction(work)
    assert len(attempts) == 2
    assert db.hot.find_one({"_id": 1})["n"] == 12
    s1.end_session()
    s2.end_session()


def test_error_inside_transaction_aborts_it(client, db):
    db.create_collection("u")
    db.u.insert_one({"_id": 1})
    with client.start_session() as s:
        s.start_transaction()
        db.u.insert_one({"_id": 2}, session=s)
        with pytest.raises(OperationFailure) as e:
            db.u.insert_one({"_id": 1}, session=s)
        assert e.value.code == 11000
        with pytest.raises(OperationFailure) as e:
            s.commit_transaction()
        assert e.value.code == 251  # NoSuchTransaction: it was aborted
    assert db.u.find_one({"_id": 2}) is None


def test_commands_outside_the_transaction_language_are_refused(client, db):
    with client.start_session() as s:
        s.start_transaction()
        with pytest.raises(OperationFailure) as e:
            db.command("create", "newcoll", session=s)
        assert e.value.code == 263  # OperationNotSupportedInTransaction
        s.abort_transaction()


def test_commit_retried_after_success_answers_ok(raw, db):
    db.create_collection("r")
    sid = lsid()
    raw(db.name, {"insert": "r", "documents": [{"_id": 1}], "lsid": sid, "txnNumber": bson.Int64(1),
                "startTransaction": True, "autocommit": False})
    commit = {"commitTransaction": 1, "lsid": sid, "txnNumber": bson.Int64(1), "autocommit": False}
    assert raw("admin", commit)["ok"] == 1
    assert raw("admin", commit)["ok"] == 1
    # Abort after commit is refused; the commit stands.
    with pytest.raises(OperationFailure) as e:
        raw("admin", {"abortTransaction": 1, "lsid": sid, "txnNumber": bson.Int64(1), "autocommit": False})
    assert e.value.code == 256  # TransactionCommitted
    assert db.r.count_documents({}) == 1


def test_unknown_transaction_and_stale_numbers(raw, db):
    sid = lsid()
    with pytest.raises(OperationFailure) as e:
        raw(db.name, {"find": "x", "lsid": sid, "txnNumber": bson.Int64(5), "autocommit": False})
    assert e.value.code == 251
    assert e.value.has_error_label("TransientTransactionError")
    raw(db.name, {"find": "x", "lsid": sid, "txnNumber": bson.Int64(5), "autocommit": False, "startTransaction": True})
    with pytest.raises(OperationFailure) as e:
        raw(db.name, {"find": "x", "lsid": sid, "txnNumber": bson.Int64(4), "autocommit": False, "startTransaction": True})
    assert e.value.code == 225  # TransactionTooOld
    raw("admin", {"abortTransaction": 1, "lsid": sid, "txnNumber": bson.Int64(5), "autocommit": False})


def test_session_fields_are_checked(raw, db):
    with pytest.raises(OperationFailure) as e:
        raw(db.name, {"find": "x", "lsid": {"id": "not-a-uuid"}})
    assert e.value.code == 14  # TypeMismatch
    with pytest.raises(OperationFailure) as e:
        raw(db.name, {"find": "x", "lsid": "nope"})
    assert e.value.code == 14
    with pytest.raises(OperationFailure) as e:
        raw(db.name, {"find": "x", "lsid": lsid(), "txnNumber": bson.Int64(1)})
    assert e.value.code == 50768  # txnNumber on a command that is not a retryable write
    with pytest.raises(OperationFailure) as e:
        raw(db.name, {"insert": "x", "documents": [{}], "lsid": lsid(), "txnNumber": 1})  # int32
    assert e.value.code == 14
    with pytest.raises(OperationFailure) as e:
        raw(db.name, {"find": "x", "lsid": lsid(), "txnNumber": bson.Int64(1), "autocommit": True})
    assert e.value.code == 72


def test_transaction_lifetime_limit_aborts_and_frees_the_backend(new_server):
    # The low tier has one PostgreSQL backend: a forgotten low-tier
    # transaction holds it until its lifetime ends.
    t = new_server(extra_args=["--transaction-lifetime", "2s"]).start()
    c = t.client()
    try:
        coll = c.test.life
        coll.insert_one({"_id": 0})
        s = c.start_session()
        s.start_transaction()
        c.admin.command("setClientPriority", "low")  # pymongo's pool has one connection here
        coll.insert_one({"_id": 1}, session=s)
        time.sleep(3.5)
        with pytest.raises(OperationFailure) as e:
            s.commit_transaction()
        assert e.value.code == 251
        assert coll.find_one({"_id": 1}) is None
        # The low tier's backend is free again: a low-tier write goes through.
        coll.insert_one({"_id": 2})
        assert coll.count_documents({}) == 2
        s.end_session()
    finally:
        c.close()
        t.cleanup()


def test_end_sessions_aborts_open_transaction(raw, db):
    db.create_collection("e")
    sid = lsid()
    raw(db.name, {"insert": "e", "documents": [{"_id": 1}], "lsid": sid, "txnNumber": bson.Int64(1),
                "startTransaction": True, "autocommit": False})
    raw("admin", {"endSessions": [sid]})
    with pytest.raises(OperationFailure) as e:
        raw("admin", {"commitTransaction": 1, "lsid": sid, "txnNumber": bson.Int64(1), "autocommit": False})
    assert e.value.code == 251
    assert db.e.count_documents({}) == 0


def test_start_refresh_kill_sessions(raw, db):
    r = raw("admin", {"startSession": 1})
    sid = r["id"]
    assert isinstance(sid["id"], (uuid.UUID, Binary)) and r["timeoutMinutes"] >= 1
    assert raw("admin", {"refreshSessions": [sid]})["ok"] == 1
    raw(db.name, {"insert": "k", "documents": [{"_id": 1}], "lsid": sid, "txnNumber": bson.Int64(1),
                "startTransaction": True, "autocommit": False})
    raw("admin", {"killAllSessions": []})
    with pytest.raises(OperationFailure):
        raw("admin", {"commitTransaction": 1, "lsid": sid, "txnNumber": bson.Int64(1), "autocommit": False})
    assert db.k.count_documents({}) == 0


# --- retryable writes ---------------------------------------------------------

def test_same_txn_number_applies_once(raw, client, db):
    db.create_collection("w")
    db.w.insert_one({"_id": 1, "n": 0, "a": []})
    sid = lsid()
    cmd = {"update": "w", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 1}, "$push": {"a": "x"}}}],
           "lsid": sid, "txnNumber": bson.Int64(7)}
    retried = client.admin.command("serverStatus")["transactions"]["retriedCommandsCount"]
    first = raw(db.name, cmd)
    again = raw(db.name, cmd)
    assert client.admin.command("serverStatus")["transactions"]["retriedCommandsCount"] == retried + 1
    assert (first["n"], first["nModified"]) == (again["n"], again["nModified"]) == (1, 1)
    assert db.w.find_one({"_id": 1}) == {"_id": 1, "n": 1, "a": ["x"]}
    # The next number runs; an older one is refused.
    raw(db.name, {**cmd, "txnNumber": bson.Int64(8)})
    assert db.w.find_one({"_id": 1})["n"] == 2
    with pytest.raises(OperationFailure) as e:
        raw(db.name, {**cmd, "txnNumber": bson.Int64(7)})
    assert e.value.code == 225


def test_retried_insert_reports_success_not_duplicate(raw, db):
    sid = lsid()
    cmd = {"insert": "ins", "documents": [{"_id": 1}, {"_id": 2}], "lsid": sid, "txnNumber": bson.Int64(1)}
    assert raw(db.name, cmd)["n"] == 2
    again = raw(db.name, cmd)
    assert again["n"] == 2 and "writeErrors" not in again
    assert db.ins.count_documents({}) == 2


def test_retried_find_and_modify_returns_first_result(raw, db):
    db.create_collection("fam")
    db.fam.insert_one({"_id": 1, "n": 0})
    sid = lsid()
    cmd = {"findAndModify": "fam", "query": {"_id": 1}, "update": {"$inc": {"n": 1}}, "new": True,
           "lsid": sid, "txnNumber": bson.Int64(3)}
    first = raw(db.name, cmd)
    again = raw(db.name, cmd)
    assert first["value"] == again["value"] == {"_id": 1, "n": 1}
    assert db.fam.find_one({"_id": 1})["n"] == 1


def test_ordered_batch_error_is_recorded_with_its_writes(raw, db):
    db.create_collection("ob")
    db.ob.insert_one({"_id": 2})
    sid = lsid()
    cmd = {"insert": "ob", "documents": [{"_id": 1}, {"_id": 2}, {"_id": 3}], "lsid": sid, "txnNumber": bson.Int64(1)}
    first = raw(db.name, cmd)
    assert first["n"] == 1 and first["writeErrors"][0]["index"] == 1
    assert raw(db.name, cmd) == first
    assert sorted(d["_id"] for d in db.ob.find()) == [1, 2]


def test_retry_answers_first_reply_whatever_changed_since(raw, db):
    # The number is checked when the write commits, so a retry runs again first:
    # neither what its rerun meets nor what it would create may show.
    sid = lsid()
    cmd = {"insert": "gone", "documents": [{"_id": 1}], "lsid": sid, "txnNumber": bson.Int64(1)}
    assert raw(db.name, cmd)["n"] == 1
    db.drop_collection("gone")
    assert raw(db.name, cmd)["n"] == 1
    assert "gone" not in db.list_collection_names()  # the retry created nothing
    # A view in its place since refuses the rerun; the retry still gets the first reply.
    ins = {"insert": "now_view", "documents": [{"_id": 1}], "lsid": sid, "txnNumber": bson.Int64(2)}
    first = raw(db.name, ins)
    db.drop_collection("now_view")
    db.command("create", "now_view", viewOn="other", pipeline=[])
    with pytest.raises(OperationFailure):
        raw(db.name, {**ins, "txnNumber": bson.Int64(3)})  # a new write is refused
    assert raw(db.name, ins) == first


def test_retry_after_kill_9_is_not_applied_twice(new_server):
    t = new_server().start()
    c = t.client()
    sid = lsid()
    c.test.k9.insert_one({"_id": 1, "n": 0, "a": []})
    c.close()
    cmd = {"update": "k9", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 1}, "$push": {"a": 1}}}],
           "lsid": sid, "txnNumber": bson.Int64(1)}
    raw = Raw(t)
    first = raw("test", cmd)
    # A transaction committed before the crash: its retried commit is ok.
    raw("test", {"insert": "k9", "documents": [{"_id": 2}], "lsid": sid, "txnNumber": bson.Int64(2),
                 "startTransaction": True, "autocommit": False})
    commit = {"commitTransaction": 1, "lsid": sid, "txnNumber": bson.Int64(2), "autocommit": False}
    raw("admin", commit)
    raw.close()
    t.stop(sig=signal.SIGKILL)
    t.start()
    raw = Raw(t)
    c = t.client()
    try:
        assert raw("admin", commit)["ok"] == 1
        with pytest.raises(OperationFailure) as e:  # txnNumber 1 is older than the transaction's
            raw("test", cmd)
        assert e.value.code == 225
        cmd3 = {**cmd, "txnNumber": bson.Int64(3)}
        again = None
        first = raw("test", cmd3)
        raw.close()
        t.stop(sig=signal.SIGKILL)
        t.start()
        raw = Raw(t)
        again = raw("test", cmd3)
        assert (again["n"], again["nModified"]) == (first["n"], first["nModified"]) == (1, 1)
        c.close()
        c = t.client()
        assert c.test.k9.find_one({"_id": 1}) == {"_id": 1, "n": 2, "a": [1, 1]}
        assert c.test.k9.count_documents({}) == 2
    finally:
        raw.close()
        c.close()
        t.cleanup()


def test_concurrent_retries_apply_once(server, db):
    db.create_collection("cc")
    db.cc.insert_one({"_id": 1, "n": 0})
    sid = lsid()
    cmd = {"update": "cc", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 1}}}], "lsid": sid, "txnNumber": bson.Int64(1)}
    replies = []

    def send():
        r = Raw(server)
        replies.append(r(db.name, cmd))
        r.close()

    threads = [threading.Thread(target=send) for _ in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(replies) == 6 and all(r["nModified"] == 1 for r in replies)
    assert db.cc.find_one({"_id": 1})["n"] == 1


def test_driver_retryable_writes_work_end_to_end(server, db):
    c = MongoClient(f"mongodb://127.0.0.1:{server.port}/", retryWrites=True)
    try:
        coll = c[db.name].rw
        coll.insert_one({"_id": 1, "n": 0})
        coll.update_one({"_id": 1}, {"$inc": {"n": 5}})
        doc = coll.find_one_and_update({"_id": 1}, {"$inc": {"n": 1}}, return_document=ReturnDocument.AFTER)
        assert doc["n"] == 6
        coll.with_options(write_concern=WriteConcern(w=1, j=False)).insert_one({"_id": 2})
        coll.delete_one({"_id": 2})
        assert coll.count_documents({}) == 1
    finally:
        c.close()


@pytest.mark.parametrize("cache_mb", [64, 0])
def test_a_retryable_write_rides_with_its_commit(new_server, cache_mb):
    # The write's statement waits to go to PostgreSQL with its record and
    # COMMIT: one round trip, or two for an update that reads first (with no
    # version cache). When PostgreSQL refuses it, nothing of it commits and
    # it runs again the ordinary way, whose outcome the client gets.
    mport = free_port()
    t = new_server(extra_args=["--metrics-listen", f"127.0.0.1:{mport}", "--version-cache-mb", str(cache_mb)]).start()
    c = t.client(retryWrites=True)

    def deferred():
        body = urllib.request.urlopen(f"http://127.0.0.1:{mport}/metrics", timeout=10).read().decode()
        return tuple(int(float(re.search(rf"^{name} (\S+)$", body, re.M).group(1)))
                     for name in ("tierdb_deferred_writes_total", "tierdb_deferred_writes_refused_total"))

    try:
        coll = c.test.rides
        coll.insert_one({"_id": 0})  # creates the collection: not deferred
        before = deferred()
        coll.insert_one({"_id": 1, "n": 0})
        coll.update_one({"_id": 1}, {"$inc": {"n": 1}})  # on the version it wrote, or read
        assert deferred() == (before[0] + 2, before[1])
        with pytest.raises(DuplicateKeyError):
            coll.insert_one({"_id": 1, "n": 100})
        assert deferred() == (before[0] + 3, before[1] + 1)
        assert coll.find_one({"_id": 1}) == {"_id": 1, "n": 1}
        # A retry of the update runs again and rolls back with the record's answer.
        raw = Raw(t)
        try:
            cmd = {"update": "rides", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 1}}}],
                   "lsid": lsid(), "txnNumber": bson.Int64(1)}
            assert raw("test", cmd)["nModified"] == 1
            assert raw("test", cmd)["nModified"] == 1
        finally:
            raw.close()
        assert coll.find_one({"_id": 1})["n"] == 2
    finally:
        c.close()
        t.cleanup()


def test_idle_sessions_expire_with_their_records(new_server):
    t = new_server(extra_args=["--session-timeout", "2s", "--transaction-lifetime", "60s"]).start()
    raw = Raw(t)
    try:
        sid = lsid()
        cmd = {"insert": "exp", "documents": [{"_id": 1}], "lsid": sid, "txnNumber": bson.Int64(5)}
        raw("test", cmd)
        with pytest.raises(OperationFailure) as e:  # older than the session's last
            raw("test", {**cmd, "txnNumber": bson.Int64(4), "documents": [{"_id": 2}]})
        assert e.value.code == 225
        # An open transaction of a session that goes idle is aborted with it.
        sid2 = lsid()
        raw("test", {"insert": "exp", "documents": [{"_id": 3}], "lsid": sid2, "txnNumber": bson.Int64(1),
                     "startTransaction": True, "autocommit": False})
        time.sleep(4)
        # Expired: the record is gone, so the older number is a new write.
        raw("test", {**cmd, "txnNumber": bson.Int64(4), "documents": [{"_id": 2}]})
        with pytest.raises(OperationFailure) as e:
            raw("admin", {"commitTransaction": 1, "lsid": sid2, "txnNumber": bson.Int64(1), "autocommit": False})
        assert e.value.code == 251
        c = t.client()
        assert sorted(d["_id"] for d in c.test.exp.find()) == [1, 2]
        c.close()
    finally:
        raw.close()
        t.cleanup()


def test_retryable_write_creating_its_collection_with_one_backend_per_tier(new_server):
    # The write's transaction holds its tier's only backend while it
    # creates the collection: the check that it is not a retry must not
    # wait for a second backend of that tier.
    t = new_server(extra_args=["--backends-per-tier", "1"]).start()
    c = t.client(retryWrites=True, socketTimeoutMS=20000)
    try:
        c.test.one_backend.insert_one({"_id": 1})
        assert c.test.one_backend.count_documents({}) == 1
    finally:
        c.close()


def test_contended_pops_finish_under_the_row_lock(new_server):
    # Many clients pop the lowest seq from one queue (findAndModify with
    # remove and a sort): every document goes to exactly one client, and a
    # pop that loses its compare-and-swap to another takes the row lock of
    # the next match (the metrics count it) rather than swapping again.
    mport = free_port()
    t = new_server(extra_args=["--metrics-listen", f"127.0.0.1:{mport}"]).start()

    def locked_writes():
        body = urllib.request.urlopen(f"http://127.0.0.1:{mport}/metrics", timeout=10).read().decode()
        return int(float(re.search(r"^tierdb_locked_writes_total (\S+)$", body, re.M).group(1)))

    clients = [t.client() for _ in range(16)]
    try:
        total = 320
        clients[0].test.queue.insert_many([{"_id": i, "seq": i} for i in range(total)])
        before = locked_writes()
        popped = [[] for _ in clients]
        errors = []

        def pop(c, out):
            try:
                while (doc := c.test.queue.find_one_and_delete({}, sort=[("seq", 1)])) is not None:
                    assert doc["seq"] == doc["_id"]
                    out.append(doc["_id"])
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=pop, args=(c, out)) for c, out in zip(clients, popped)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert not errors, errors
        everything = sorted(i for out in popped for i in out)
        assert everything == list(range(total)), "a document was popped twice or never"
        assert clients[0].test.queue.count_documents({}) == 0
        assert locked_writes() - before >= 1
    finally:
        for c in clients:
            c.close()
        t.cleanup()


@pytest.mark.parametrize("retry", [True, False])
def test_contended_updates_finish_under_the_row_lock(new_server, retry):
    # Many clients increment one document: each increment applies once, and
    # an update that loses its compare-and-swap takes the row lock (the
    # metrics count both) rather than failing or retrying without end. Once
    # the document has lost a swap it is hot: updates lock it first instead
    # of swapping and losing, so few swaps are lost.
    mport = free_port()
    t = new_server(extra_args=["--metrics-listen", f"127.0.0.1:{mport}"]).start()

    def conflicts():
        body = urllib.request.urlopen(f"http://127.0.0.1:{mport}/metrics", timeout=10).read().decode()
        return tuple(int(float(re.search(rf"^{name} (\S+)$", body, re.M).group(1)))
                     for name in ("tierdb_swaps_lost_total", "tierdb_locked_writes_total"))

    clients = [t.client(retryWrites=retry) for _ in range(16)]
    try:
        clients[0].test.hot.insert_one({"_id": 1, "n": 0})
        before = conflicts()
        each = 30

        def bump(c):
            for _ in range(each):
                assert c.test.hot.update_one({"_id": 1}, {"$inc": {"n": 1}}).modified_count == 1

        threads = [threading.Thread(target=bump, args=(c,)) for c in clients]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert clients[0].test.hot.find_one({"_id": 1})["n"] == each * len(clients)
        lost, locked = (a - b for a, b in zip(conflicts(), before))
        total = each * len(clients)
        assert lost >= 1 and locked >= 1, (lost, locked)
        assert lost * 4 < total, (lost, locked, total)
    finally:
        for c in clients:
            c.close()
        t.cleanup()
