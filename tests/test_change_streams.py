"""Change streams (watch()) from PostgreSQL logical decoding: events shaped
as MongoDB's, resume tokens that survive a restart of tierdb, $match on the
stream, and MongoDB's privileges."""
import threading
import time

import pytest
from bson import Timestamp
from pymongo.errors import OperationFailure


def next_events(stream, n, timeout=15):
    """The next n events of a stream (getMores wait up to their await time)."""
    out = []
    deadline = time.time() + timeout
    while len(out) < n and time.time() < deadline:
        ev = stream.try_next()
        if ev is not None:
            out.append(ev)
    assert len(out) == n, f"got {len(out)} of {n} events: {out}"
    return out


def test_events_for_each_operation(db):
    db.create_collection("c")
    with db.c.watch(max_await_time_ms=200) as s:
        db.c.insert_one({"_id": 1, "a": 1, "sub": {"x": 1, "y": 2}})
        db.c.update_one({"_id": 1}, {"$set": {"a": 2, "sub.y": 3}, "$unset": {"sub.x": ""}})
        db.c.delete_one({"_id": 1})
        ins, upd, dele = next_events(s, 3)
    assert ins["operationType"] == "insert"
    assert ins["fullDocument"] == {"_id": 1, "a": 1, "sub": {"x": 1, "y": 2}}
    assert ins["ns"] == {"db": db.name, "coll": "c"}
    assert ins["documentKey"] == {"_id": 1}
    assert set(ins) >= {"_id", "clusterTime", "wallTime"}
    assert upd["operationType"] == "update"
    assert "fullDocument" not in upd
    assert upd["updateDescription"]["updatedFields"] == {"a": 2, "sub.y": 3}
    assert upd["updateDescription"]["removedFields"] == ["sub.x"]
    assert dele["operationType"] == "delete"
    assert dele["documentKey"] == {"_id": 1}
    # Tokens increase: ordered as strings, like MongoDB's.
    assert ins["_id"]["_data"] < upd["_id"]["_data"] < dele["_id"]["_data"]


def test_replace_events(db):
    db.c.insert_many([{"_id": 1, "a": 1}, {"_id": 2, "a": 1}])
    with db.c.watch(max_await_time_ms=200) as s:
        db.c.replace_one({"_id": 1}, {"b": 2})
        db.c.find_one_and_replace({"_id": 2}, {"c": 3})
        db.c.update_one({"_id": 1}, {"$set": {"b": 3}})
        r1, r2, u = next_events(s, 3)
    assert (r1["operationType"], r1["fullDocument"], r1["documentKey"]) == ("replace", {"_id": 1, "b": 2}, {"_id": 1})
    assert "updateDescription" not in r1
    assert (r2["operationType"], r2["fullDocument"]) == ("replace", {"_id": 2, "c": 3})
    assert u["operationType"] == "update"


def test_index_build_is_not_a_change(db):
    # Building an index writes a key into every stored row; no document
    # changes, so no event (a large document's unchanged bytes are not even
    # sent by PostgreSQL, which once broke the stream), and the stream gets
    # past it however many rows it wrote (more than one read of the slot
    # asks for once held every stream before it).
    db.c.insert_many([{"_id": 1, "k": 1}, {"_id": 2, "k": 2, "big": "x" * 100000}])
    db.c.insert_many([{"_id": 10 + i, "k": 10 + i} for i in range(3000)])
    with db.c.watch(max_await_time_ms=200) as s:
        db.c.create_index("k")
        db.c.create_index([("k", -1)], unique=True)
        db.c.insert_one({"_id": 3, "k": 3})
        evs = next_events(s, 1)
        assert s.try_next() is None
    assert [(e["operationType"], e["documentKey"]) for e in evs] == [("insert", {"_id": 3})]


def test_events_after_a_large_transaction(db):
    # One insert of 3000 documents is one transaction of more rows than a
    # read of the slot asks for; the stream gets it all, then what follows
    # (it once got nothing more).
    with db.c.watch(max_await_time_ms=200, batch_size=5000) as s:
        db.c.insert_many([{"_id": i} for i in range(3000)])
        assert len(next_events(s, 3000, timeout=60)) == 3000
        db.c.insert_one({"_id": "after"})
        (ev,) = next_events(s, 1)
    assert ev["documentKey"] == {"_id": "after"}


def test_full_document_update_lookup(db):
    db.c.insert_one({"_id": 1, "n": 0})
    with db.c.watch(full_document="updateLookup", max_await_time_ms=200) as s:
        db.c.update_one({"_id": 1}, {"$inc": {"n": 1}})
        (ev,) = next_events(s, 1)
    assert ev["operationType"] == "update"
    assert ev["fullDocument"] == {"_id": 1, "n": 1}


def test_before_change_images(db):
    db.c.insert_one({"_id": 1, "n": 0})
    with db.c.watch(full_document="whenAvailable", full_document_before_change="required", max_await_time_ms=200) as s:
        db.c.update_one({"_id": 1}, {"$inc": {"n": 5}})
        db.c.delete_one({"_id": 1})
        upd, dele = next_events(s, 2)
    assert upd["fullDocument"] == {"_id": 1, "n": 5}
    assert upd["fullDocumentBeforeChange"] == {"_id": 1, "n": 0}
    assert dele["fullDocumentBeforeChange"] == {"_id": 1, "n": 5}


def test_drop_and_rename_invalidate_collection_streams(db):
    db.c.insert_one({"_id": 0})
    with db.c.watch(max_await_time_ms=200) as s:
        db.c.drop()
        drop, inv = next_events(s, 2)
        assert drop["operationType"] == "drop" and drop["ns"] == {"db": db.name, "coll": "c"}
        assert inv["operationType"] == "invalidate"
        assert not s.alive
    # resumeAfter cannot pass an invalidate; startAfter starts a new stream after it.
    with pytest.raises(OperationFailure) as e:
        db.c.watch(resume_after=inv["_id"])
    assert e.value.code == 260
    with db.c.watch(start_after=inv["_id"], max_await_time_ms=200) as s:
        db.c.insert_one({"_id": "new"})
        (ev,) = next_events(s, 1)
        assert ev["operationType"] == "insert" and ev["documentKey"] == {"_id": "new"}


def test_drop_database_invalidates_database_streams(db, client):
    db.a.insert_one({"_id": 0})
    db.b.insert_one({"_id": 0})
    with db.watch(max_await_time_ms=200) as s, client.watch(max_await_time_ms=200) as cs:
        client.drop_database(db.name)
        evs = next_events(s, 4)
        assert sorted((e["operationType"], e["ns"].get("coll")) for e in evs[:2]) == [("drop", "a"), ("drop", "b")]
        assert evs[2]["operationType"] == "dropDatabase" and evs[2]["ns"] == {"db": db.name}
        assert evs[3]["operationType"] == "invalidate"
        assert not s.alive
        evs = [e for e in next_events(cs, 3) if e["ns"]["db"] == db.name]
        assert [e["operationType"] for e in evs] == ["drop", "drop", "dropDatabase"]


def test_changes_before_a_drop_keep_their_collection(new_server):
    """A collection this tierdb's change streams never saw created, changed
    then dropped before the stream reads: its changes still name it (they
    were silently left out once the catalog had forgotten the table)."""
    t = new_server().start()
    try:
        c = t.client()
        c.d.c.insert_one({"_id": 1})  # before any stream: the hub never sees c created
        with c.d.watch(max_await_time_ms=200) as s:
            c.d.c.insert_one({"_id": 2})
            c.d.c.drop()
            evs = next_events(s, 2)
        assert [(e["operationType"], e["ns"]["coll"]) for e in evs] == [("insert", "c"), ("drop", "c")]
        assert evs[0]["documentKey"] == {"_id": 2}
        c.close()
    finally:
        t.stop()


def test_rename_event(db, client):
    db.d.insert_one({"_id": 0})
    with db.d.watch(max_await_time_ms=200) as s:
        client.admin.command("renameCollection", f"{db.name}.d", to=f"{db.name}.e")
        ren, inv = next_events(s, 2)
    assert ren["operationType"] == "rename"
    assert ren["to"] == {"db": db.name, "coll": "e"}
    assert inv["operationType"] == "invalidate"


def test_database_and_cluster_streams(db, client):
    with db.watch(max_await_time_ms=200) as dbs, client.watch(max_await_time_ms=200) as cs:
        db.x.insert_one({"_id": "x"})
        db.y.insert_one({"_id": "y"})
        evs = next_events(dbs, 2)
        assert [(e["ns"]["coll"], e["documentKey"]["_id"]) for e in evs] == [("x", "x"), ("y", "y")]
        evs = [e for e in next_events(cs, 2) if e["ns"]["db"] == db.name]
        assert [e["documentKey"]["_id"] for e in evs] == ["x", "y"]


def test_match_and_project_on_the_stream(db):
    pipeline = [{"$match": {"operationType": "insert", "fullDocument.keep": True}},
                {"$project": {"fullDocument.keep": 0}}]
    with db.c.watch(pipeline, max_await_time_ms=200) as s:
        db.c.insert_many([{"_id": 1, "keep": False}, {"_id": 2, "keep": True, "v": "b"}])
        db.c.delete_one({"_id": 2})
        db.c.insert_one({"_id": 3, "keep": True})
        evs = next_events(s, 2)
    assert [e["fullDocument"] for e in evs] == [{"_id": 2, "v": "b"}, {"_id": 3}]


def test_modifying_the_token_is_refused(db):
    with db.c.watch([{"$project": {"_id": 0}}], max_await_time_ms=200) as s:
        db.c.insert_one({"_id": 1})
        with pytest.raises(OperationFailure) as e:
            for _ in range(50):
                s.try_next()
        assert e.value.code == 280


def test_await_data_returns_the_event_when_it_comes(db):
    with db.c.watch(max_await_time_ms=10000) as s:
        t = threading.Timer(0.3, lambda: db.c.insert_one({"_id": "late"}))
        t.start()
        ev = s.next()  # one getMore waits for it
        t.join()
    assert ev["documentKey"] == {"_id": "late"}


def test_resume_after_and_start_after(db):
    with db.c.watch(max_await_time_ms=200) as s:
        db.c.insert_many([{"_id": i} for i in range(3)])
        first, _, _ = next_events(s, 3)
    with db.c.watch(resume_after=first["_id"], max_await_time_ms=200) as s:
        assert [e["documentKey"]["_id"] for e in next_events(s, 2)] == [1, 2]
    with db.c.watch(start_after=first["_id"], max_await_time_ms=200) as s:
        assert [e["documentKey"]["_id"] for e in next_events(s, 2)] == [1, 2]


def test_batch_size_zero_returns_the_cursor_only(db):
    with db.c.watch(max_await_time_ms=200) as s:
        db.c.insert_many([{"_id": i} for i in range(3)])
        first, _, _ = next_events(s, 3)
    reply = db.command("aggregate", "c", pipeline=[{"$changeStream": {"resumeAfter": first["_id"]}}],
                       cursor={"batchSize": 0})
    cur = reply["cursor"]
    assert cur["firstBatch"] == [] and cur["id"] != 0
    assert cur["postBatchResumeToken"] == first["_id"]  # nothing passed yet
    more = db.command("getMore", cur["id"], collection="c", maxTimeMS=200)
    assert [e["documentKey"]["_id"] for e in more["cursor"]["nextBatch"]] == [1, 2]
    db.command("killCursors", "c", cursors=[cur["id"]])


@pytest.mark.parametrize("stage,code", [
    ({"$changeStream": {"startAtOperationTime": 1}}, 14),
    ({"$changeStream": {"startAtOperationTime": Timestamp(1, 1), "resumeAfter": {"_data": "T1" + "0" * 24}}}, 2),
    ({"$changeStream": {"bogus": 1}}, 40415),
    ({"$changeStream": {"fullDocument": "sometimes"}}, 2),
    ({"$changeStream": {"showExpandedEvents": True}}, 238),  # DDL events beyond drop/rename are not produced
])
def test_refusals(db, stage, code):
    with pytest.raises(OperationFailure) as e:
        db.command("aggregate", "c", pipeline=[stage], cursor={})
    assert e.value.code == code


def test_a_view_cannot_be_watched(db):
    db.c.insert_one({"_id": 1})
    db.command("create", "v", viewOn="c", pipeline=[])
    with pytest.raises(OperationFailure) as e:
        db.v.watch()  # a stream that could never see a change
    assert e.value.code == 166


def test_group_is_not_permitted(db):
    with pytest.raises(OperationFailure) as e:
        db.command("aggregate", "c", pipeline=[{"$changeStream": {}}, {"$group": {"_id": None}}], cursor={})
    assert e.value.code == 20


def test_not_in_a_transaction(db, client):
    db.c.insert_one({"_id": 0})
    with client.start_session() as s:
        with pytest.raises(OperationFailure) as e:
            with s.start_transaction():
                db.c.find_one({}, session=s)
                db.command("aggregate", "c", pipeline=[{"$changeStream": {}}], cursor={}, session=s)
        assert e.value.code == 263


def test_history_lost(db):
    with pytest.raises(OperationFailure) as e:
        db.command("aggregate", "c", pipeline=[{"$changeStream": {"resumeAfter": {"_data": "T1" + "0" * 16 + "0" * 8}}}], cursor={})
    assert e.value.code == 286


def test_resume_after_restart(new_server):
    t = new_server().start()
    try:
        c = t.client()
        coll = c.d.c
        with coll.watch(max_await_time_ms=200) as s:
            coll.insert_one({"_id": 1})
            (ev,) = next_events(s, 1)
            token = ev["_id"]
            coll.insert_one({"_id": 2})
        c.close()
        t.stop()
        t.start()
        c = t.client()
        c.d.c.insert_one({"_id": 3})
        with c.d.c.watch(resume_after=token, max_await_time_ms=200) as s:
            assert [e["documentKey"]["_id"] for e in next_events(s, 2)] == [2, 3]
        # The token resumes database and deployment streams too.
        with c.d.watch(resume_after=token, max_await_time_ms=200) as s:
            assert [e["documentKey"]["_id"] for e in next_events(s, 2)] == [2, 3]
        with c.watch(start_after=token, max_await_time_ms=200) as s:
            assert [e["documentKey"]["_id"] for e in next_events(s, 2) if e["ns"] == {"db": "d", "coll": "c"}] == [2, 3]
        c.close()
    finally:
        t.stop()


def test_privileges(new_server):
    t = new_server(env={"TIERDB_ADMIN_PASSWORD": "pw"}, extra_args=["--admin-user", "admin"]).start()
    try:
        admin = t.client(username="admin", password="pw")
        admin.shop.command("createRole", "writer", privileges=[
            {"resource": {"db": "shop", "collection": "c"}, "actions": ["find", "insert"]}], roles=[])
        admin.shop.command("createUser", "reader", pwd="r", roles=["read"])
        admin.shop.command("createUser", "w", pwd="w", roles=["writer"])
        reader = t.client(username="reader", password="r", authSource="shop")
        with reader.shop.c.watch(max_await_time_ms=200) as s:
            admin.shop.c.insert_one({"_id": 1})
            next_events(s, 1)
        w = t.client(username="w", password="w", authSource="shop")
        with pytest.raises(OperationFailure) as e:
            w.shop.c.watch()
        assert e.value.code == 13  # find without changeStream
        with pytest.raises(OperationFailure) as e:
            reader.watch()  # the deployment needs privileges on every database
        assert e.value.code == 13
    finally:
        t.stop()


def test_a_stream_not_read_holds_up_no_other(new_server):
    # One stream is opened and not read; another reads every event. Past
    # the shared buffer (10,000 changes) the unread stream is left behind
    # instead of holding the other (its cursor does not time out here:
    # the server keeps cursors 10 minutes). Read later, it reads its
    # events from the slot on its own, in order, none lost.
    t = new_server().start()
    try:
        c = t.client()
        coll = c.d.c
        n = 25000
        unread = coll.watch(max_await_time_ms=200)
        with coll.watch(max_await_time_ms=200, batch_size=1000) as fast:
            for i in range(0, n, 5000):
                coll.insert_many([{"_id": j} for j in range(i, i + 5000)])
            got = [e["documentKey"]["_id"] for e in next_events(fast, n, timeout=120)]
            assert got == list(range(n))
            st = c.admin.command("serverStatus")["tierdb"]["changeStreams"]
            assert st["open"] == 2 and st["lagging"] == 1 and st["lost"] == 0
            assert st["bufferedChanges"] <= st["maxBufferedChanges"]
        got = [e["documentKey"]["_id"] for e in next_events(unread, n, timeout=120)]
        assert got == list(range(n))
        # Caught up, it reads the buffer again.
        coll.insert_one({"_id": "last"})
        assert next_events(unread, 1)[0]["documentKey"]["_id"] == "last"
        assert c.admin.command("serverStatus")["tierdb"]["changeStreams"]["lagging"] == 0
        unread.close()
        c.close()
    finally:
        t.stop()


def test_start_at_operation_time(db):
    # A stream open from the start holds the slot, so its history is kept
    # (cluster times count whole seconds: the first event comes a second
    # after the slot was placed).
    with db.c.watch(max_await_time_ms=200) as holder, db.c.watch(max_await_time_ms=200) as s:
        time.sleep(1.1)
        db.c.insert_one({"_id": 1})
        time.sleep(1.1)  # the next events in a later second of cluster time
        db.c.insert_many([{"_id": 2}, {"_id": 3}])
        db.c.insert_one({"_id": 4})
        e1, e2, e3, e4 = next_events(s, 4)
        assert e1["clusterTime"] < e2["clusterTime"]
        assert e2["clusterTime"] > Timestamp(int(time.time()) - 60, 0)
        with db.c.watch(start_at_operation_time=e2["clusterTime"], max_await_time_ms=200) as s2:
            got = [e["documentKey"]["_id"] for e in next_events(s2, 3)]
        assert got == [2, 3, 4]
        # At or after: from the second event of that transaction on.
        with db.c.watch(start_at_operation_time=e3["clusterTime"], max_await_time_ms=200) as s2:
            assert [e["documentKey"]["_id"] for e in next_events(s2, 2)] == [3, 4]
        with db.c.watch(start_at_operation_time=e1["clusterTime"], max_await_time_ms=200) as s2:
            assert [e["documentKey"]["_id"] for e in next_events(s2, 4)] == [1, 2, 3, 4]
        assert [e["documentKey"]["_id"] for e in next_events(holder, 4)] == [1, 2, 3, 4]
    # Long before anything tierdb keeps.
    with pytest.raises(OperationFailure) as e:
        db.c.watch(start_at_operation_time=Timestamp(1, 1)).close()
    assert e.value.code == 286 and "keeps the changes committed since" in str(e.value)
    # A time to come: what is committed from then on.
    later = int(time.time()) + 2
    with db.c.watch(start_at_operation_time=Timestamp(later, 0), max_await_time_ms=200) as s:
        db.c.insert_one({"_id": "now"})
        time.sleep(max(0, later - time.time()) + 0.1)
        db.c.insert_one({"_id": "later"})
        assert next_events(s, 1)[0]["documentKey"]["_id"] == "later"
    # Until its first event, such a stream has no resume token to give
    # (resuming from its position would not pass over the earlier
    # changes): drivers resume with the time.
    later = Timestamp(int(time.time()) + 3600, 0)
    reply = db.command("aggregate", "c", pipeline=[{"$changeStream": {"startAtOperationTime": later}}], cursor={})
    assert "postBatchResumeToken" not in reply["cursor"]
    more = db.command("getMore", reply["cursor"]["id"], collection="c", maxTimeMS=100)
    assert "postBatchResumeToken" not in more["cursor"]
    db.command("killCursors", "c", cursors=[reply["cursor"]["id"]])


def test_database_and_cluster_stream_cursors_can_be_killed(db, client):
    """Their cursors live on '<db>.$cmd.aggregate'; drivers close them with
    killCursors on "$cmd.aggregate" (which once answered InvalidNamespace,
    leaving the cursor open until it timed out)."""
    for target in (db, client.admin):
        pipeline = [{"$changeStream": {"allChangesForCluster": True}}] if target.name == "admin" else [{"$changeStream": {}}]
        reply = target.command("aggregate", 1, pipeline=pipeline, cursor={"batchSize": 0})
        cur = reply["cursor"]
        assert cur["ns"] == f"{target.name}.$cmd.aggregate" and cur["id"] != 0
        killed = target.command("killCursors", "$cmd.aggregate", cursors=[cur["id"]])
        assert killed["cursorsKilled"] == [cur["id"]], killed
        with pytest.raises(OperationFailure) as e:
            target.command("getMore", cur["id"], collection="$cmd.aggregate")
        assert e.value.code == 43  # CursorNotFound
    with pytest.raises(OperationFailure) as e:
        db.command("killCursors", "$cmd.other", cursors=[1])
    assert e.value.code == 73


def test_the_stream_reads_at_the_low_tier(new_server):
    """Reading the replication slot is low-tier work: admitted by the low
    tier's gate while the client itself runs at the normal tier."""
    t = new_server(extra_args=["--ttl-monitor-interval", "0"]).start()
    try:
        c = t.client()
        st = c.admin.command("qosStatus")
        low_before = st["tiers"]["low"]["admitted"]
        with c.d.c.watch(max_await_time_ms=200) as s:
            c.d.c.insert_one({"_id": 1})
            (ev,) = next_events(s, 1)
        assert ev["documentKey"] == {"_id": 1}
        st = c.admin.command("qosStatus")
        assert st["tiers"]["low"]["admitted"] > low_before, st["tiers"]["low"]
        assert c.admin.command("connectionStatus")["priority"] == "normal"
        assert all(u["ops"]["low"] == 0 for u in st["users"]), st["users"]  # no client request ran at low
        c.close()
    finally:
        t.stop()
