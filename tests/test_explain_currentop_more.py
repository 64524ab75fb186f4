"""explain's executionStats (documents and keys examined), $currentOp's idle
cursors, and the lsid and txnNumber of a transaction's change events."""
import hashlib
import time

import pytest
from pymongo import monitoring
from pymongo.errors import OperationFailure

from test_admin_commands import authsrv  # noqa: F401 (a fixture)
from test_change_streams import next_events


class Sent(monitoring.CommandListener):
    """Remembers the commands a client sent."""

    def __init__(self):
        self.cmds = []

    def started(self, event):
        self.cmds.append(event.command)

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass


def test_transaction_events_carry_lsid_and_txn_number(server, db):
    sent = Sent()
    client = server.client(event_listeners=[sent])
    coll = client[db.name].c
    db.create_collection("c")
    with db.c.watch(max_await_time_ms=200) as s:
        coll.insert_one({"_id": 0})  # a retryable write: no transaction
        with client.start_session() as sess:
            def work(session):
                coll.insert_one({"_id": 1}, session=session)
                coll.update_one({"_id": 0}, {"$set": {"a": 1}}, session=session)
            sess.with_transaction(work)
            lsid = sess.session_id
        plain, ins, upd = next_events(s, 3)
    client.close()
    commit = [c for c in sent.cmds if "commitTransaction" in c][-1]
    retryable = [c for c in sent.cmds if c.get("insert") == "c" and "startTransaction" not in c][0]
    assert "txnNumber" in retryable  # a retryable write, yet its event has neither field
    assert "lsid" not in plain and "txnNumber" not in plain
    # Without authentication the uid is the SHA-256 digest of nothing.
    uid = hashlib.sha256(b"").digest()
    for ev in (ins, upd):
        assert ev["lsid"] == {"id": lsid["id"], "uid": uid}
        assert ev["txnNumber"] == commit["txnNumber"]


def idle_cursors(client, **opts):
    stage = {"$currentOp": {"idleCursors": True, "idleSessions": False, **opts}}
    return [o for o in client.admin.aggregate([stage]) if o["type"] == "idleCursor"]


def test_idle_cursors_are_listed(client, db):
    db.c.insert_many([{"_id": i} for i in range(10)])
    with client.start_session() as sess:
        cur = db.c.find({"_id": {"$gte": 0}}, batch_size=2, session=sess)
        next(cur)  # the first batch: 2 documents
        before = time.time()
        (mine,) = [o for o in idle_cursors(client) if o["cursor"]["cursorId"] == cur.cursor_id]
        assert mine["ns"] == f"{db.name}.c"
        assert mine["lsid"]["id"] == sess.session_id["id"]
        c = mine["cursor"]
        assert (c["nDocsReturned"], c["nBatchesReturned"]) == (2, 1)
        assert (c["tailable"], c["awaitData"], c["noCursorTimeout"]) == (False, False, False)
        assert c["originatingCommand"]["find"] == "c"
        assert c["originatingCommand"]["filter"] == {"_id": {"$gte": 0}}
        assert c["createdDate"] <= c["lastAccessDate"]
        for _ in range(2):
            next(cur)  # the third document needs a getMore of 2
        (mine,) = [o for o in idle_cursors(client) if o["cursor"]["cursorId"] == cur.cursor_id]
        assert (mine["cursor"]["nDocsReturned"], mine["cursor"]["nBatchesReturned"]) == (4, 2)
        assert mine["cursor"]["lastAccessDate"].timestamp() >= before - 1
        cur.close()
    assert not [o for o in idle_cursors(client) if o["cursor"]["cursorId"] == cur.cursor_id]


def test_idle_cursors_of_other_users_need_inprog(authsrv):
    a = authsrv.admin
    a.shop.command("createUser", "curs", pwd="pw-curs", roles=["readWrite"])
    c = authsrv.client(username="curs", password="pw-curs", authSource="shop")
    try:
        a.shop.cc.insert_many([{"_id": i} for i in range(10)])
        theirs = a.shop.cc.find(batch_size=2)
        next(theirs)
        mine = c.shop.cc.find(batch_size=3)
        next(mine)
        own = idle_cursors(c)
        assert [o["cursor"]["cursorId"] for o in own] == [mine.cursor_id]
        with pytest.raises(OperationFailure) as e:
            idle_cursors(c, allUsers=True)
        assert e.value.code == 13
        every = {o["cursor"]["cursorId"] for o in idle_cursors(a, allUsers=True)}
        assert {mine.cursor_id, theirs.cursor_id} <= every
        mine.close()
        theirs.close()
    finally:
        c.close()
        a.shop.command("dropUser", "curs")
        a.shop.cc.drop()


def stats(db, cmd, verbosity="executionStats"):
    r = db.command("explain", cmd, verbosity=verbosity)
    if "stages" in r:
        return r["stages"][0]["$cursor"]["executionStats"]
    return r["executionStats"]


def pg_stage(stage):
    while stage["stage"] != "POSTGRESQL":
        stage = stage["inputStage"]
    return stage


def test_unindexed_filter_examines_every_document(db):
    db.c.insert_many([{"_id": i, "b": i} for i in range(1000)])
    s = stats(db, {"find": "c", "filter": {"b": {"$lt": 50}}})
    assert s["nReturned"] == 50
    assert s["totalDocsExamined"] == 1000
    f = s["executionStages"]
    assert f["stage"] == "FILTER" and f["nReturned"] == 50
    assert f["docsExamined"] == 1000 and f["rechecked"] == 1000
    pg = pg_stage(f)
    assert pg["docsExamined"] == 1000 and pg["nReturned"] == 1000
    assert sum(x["docsExamined"] for x in pg["scans"]) == 1000
    # count: the same read, counted
    c = stats(db, {"count": "c", "query": {"b": {"$lt": 50}}}, "allPlansExecution")
    assert (c["nReturned"], c["executionStages"]["nCounted"], c["totalDocsExamined"]) == (0, 50, 1000)
    # an empty count is PostgreSQL's count(*): tierdb reads no rows
    e = stats(db, {"count": "c", "query": {}})
    assert e["executionStages"]["stage"] == "COUNT" and e["executionStages"]["nCounted"] == 1000
    assert e["executionStages"]["inputStage"]["stage"] == "POSTGRESQL"
    # a limit reads what the limit needs
    lim = stats(db, {"find": "c", "filter": {}, "limit": 5})
    assert lim["nReturned"] == 5 and lim["totalDocsExamined"] <= 6


def test_indexed_filter_examines_about_the_matches(db):
    # The index comes before the documents, so that it holds no entries of
    # dead row versions (an index built later sets its column in every row).
    db.c.create_index("a")
    db.c.insert_many([{"_id": i, "a": i % 1000, "pad": "x" * 100} for i in range(5000)])
    for cmd in ({"find": "c", "filter": {"a": 7}},
                {"aggregate": "c", "pipeline": [{"$match": {"a": 7}}, {"$group": {"_id": None, "n": {"$sum": 1}}}], "cursor": {}},
                {"distinct": "c", "key": "a", "query": {"a": 7}}):
        s = stats(db, cmd)
        assert s["nReturned"] == 5, cmd
        assert 5 <= s["totalKeysExamined"] <= 10, s
        assert 5 <= s["totalDocsExamined"] <= 10, s
        scans = pg_stage(s["executionStages"])["scans"]
        assert any(x.get("indexName") == "a_1" for x in scans), scans
    q = db.command("explain", {"distinct": "c", "key": "a", "query": {"a": 7}}, verbosity="queryPlanner")
    assert "executionStats" not in q and q["queryPlanner"]["winningPlan"]["stage"] == "POSTGRESQL"
    for cmd in ({"distinct": "c", "key": "a"}, {"count": "c"}, {"find": "c"}):
        planned = db.command("explain", cmd, verbosity="queryPlanner")["queryPlanner"]
        assert planned["parsedQuery"] == {}, (cmd, planned["parsedQuery"])


def test_explain_of_a_missing_collection_examines_nothing(db):
    s = stats(db, {"aggregate": "nothing", "pipeline": [{"$match": {"a": 1}}], "cursor": {}})
    assert (s["nReturned"], s["totalDocsExamined"], s["totalKeysExamined"]) == (0, 0, 0)


def test_count_explain_counts_what_count_counts(db):
    db.c.insert_many([{"_id": i, "a": i % 3} for i in range(100)])
    for cmd in ({"count": "c", "query": {"a": 1}, "skip": 2, "limit": 5},
                {"count": "c", "query": {"a": 1}, "limit": -4},
                {"count": "c", "query": {}, "limit": 5},
                {"count": "c", "query": {"a": 2}, "skip": 30}):
        n = db.command(cmd)["n"]
        s = stats(db, cmd)
        assert s["executionStages"]["nCounted"] == n, (cmd, n, s)


def test_explain_on_views(db):
    db.c.insert_many([{"_id": i, "a": i % 3} for i in range(30)])
    db.command("create", "v", viewOn="c", pipeline=[{"$match": {"a": {"$ne": 0}}}])
    for cmd in ({"find": "v", "filter": {"a": 1}},
                {"count": "v", "query": {"a": 2}, "limit": 4},
                {"distinct": "v", "key": "a", "query": {}}):
        planned = db.command("explain", cmd, verbosity="queryPlanner")
        assert "stages" in planned and "executionStats" not in planned["stages"][0]["$cursor"], cmd
        s = stats(db, cmd)
        assert s["totalDocsExamined"] == 30, (cmd, s)
    assert db.command("distinct", "v", key="a")["values"] == [1, 2]


def test_explain_is_bounded_by_the_explained_commands_max_time(db):
    """Drivers put maxTimeMS inside the explained command; executionStats
    runs the command, so that bound applies."""
    db.c.insert_many([{"_id": i, "s": "x" * 200 + str(i)} for i in range(20000)])
    slow = {"s": {"$regex": "(x+x+)+y"}}
    with pytest.raises(OperationFailure) as e:
        db.command("explain", {"find": "c", "filter": slow, "maxTimeMS": 1}, verbosity="executionStats")
    assert e.value.code == 50
    with pytest.raises(OperationFailure) as e:
        db.command("explain", {"count": "c", "query": slow, "maxTimeMS": 1}, verbosity="executionStats")
    assert e.value.code == 50


def test_current_op_truncates_as_asked(client):
    # The currentOp command shows commands over 1 KB truncated; $currentOp shows
    # them whole unless truncateOps is true (mongosh's db.currentOp() asks with
    # truncateOps: false and expects whole commands).
    long = "x" * 3000

    def mine(ops):
        return [op for op in ops if op.get("command", {}).get("comment") == long]

    cmd = client.admin.command("currentOp", comment=long)["inprog"]
    shown = [op["command"] for op in cmd if "$truncated" in op.get("command", {})]
    assert shown and shown[0]["comment"] == "command larger than 1 KB"
    whole = list(client.admin.aggregate([{"$currentOp": {"truncateOps": False}}], comment=long))
    assert [op["command"]["comment"] for op in mine(whole)] == [long]
    default = list(client.admin.aggregate([{"$currentOp": {}}], comment=long))
    assert [op["command"]["comment"] for op in mine(default)] == [long]
    cut = list(client.admin.aggregate([{"$currentOp": {"truncateOps": True}}], comment=long))
    assert not mine(cut)
    assert any('"aggregate"' in op["command"].get("$truncated", "") for op in cut)
    with pytest.raises(OperationFailure) as e:
        list(client.admin.aggregate([{"$currentOp": {"backtrace": True}}]))
    assert e.value.code == 238  # NotImplemented
    assert list(client.admin.aggregate([{"$currentOp": {"backtrace": False}}, {"$limit": 1}]))
