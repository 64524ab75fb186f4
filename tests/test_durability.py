"""Acknowledged writes survive kill -9 of tierdb and of its PostgreSQL.

Each test owns its servers (the `new_server` fixture); the data directory is
kept across stop/start of the same Tierdb object.
"""
import os
import signal
import time

import pytest
from pymongo import WriteConcern
from pymongo.errors import ConnectionFailure, OperationFailure

N = 2000


def postmaster_pid(t):
    with open(os.path.join(t.data_dir, "pg", "postmaster.pid")) as f:
        return int(f.readline())


def kill9(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass  # already gone with its parent


def wait_gone(pid, timeout=30):
    """Wait until pid no longer exists, so a restart cannot race a dying process."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} did not exit")


def write_workload(db):
    """Acknowledged writes of several kinds; returns what must be there afterwards."""
    c = db.c
    c.insert_many([{"_id": i, "v": i, "tag": "orig"} for i in range(N)])
    for i in range(0, 50):
        c.insert_one({"_id": N + i, "v": N + i, "tag": "single"})
    c.update_many({"_id": {"$lt": 500}}, {"$set": {"tag": "updated"}, "$inc": {"v": 1000000}})
    c.update_one({"_id": 1999}, {"$set": {"last": True}})
    c.delete_many({"_id": {"$gte": 1900, "$lt": 1950}})
    c.create_index("v")
    c.with_options(write_concern=WriteConcern(w="majority", j=True)).insert_one({"_id": "majority"})
    c.with_options(write_concern=WriteConcern(w=1, j=True)).insert_one({"_id": "journaled"})


def check_workload(db):
    c = db.c
    ints = [d for d in c.find({"_id": {"$type": "number"}}).sort("_id", 1)]
    expected_ids = [i for i in range(N + 50) if not 1900 <= i < 1950]
    assert [d["_id"] for d in ints] == expected_ids
    for d in ints:
        i = d["_id"]
        if i < 500:
            assert (d["tag"], d["v"]) == ("updated", i + 1000000), d
        elif i < N:
            assert (d["tag"], d["v"]) == ("orig", i), d
        else:
            assert (d["tag"], d["v"]) == ("single", i), d
    assert c.find_one({"_id": 1999})["last"] is True
    assert c.find_one({"_id": "majority"}) is not None
    assert c.find_one({"_id": "journaled"}) is not None
    assert "v_1" in c.index_information()
    assert c.count_documents({"v": {"$gte": 1000000}}) == 500  # through the index


@pytest.mark.parametrize("first", ["tierdb", "postgres"])
def test_acknowledged_writes_survive_kill_9_of_both(new_server, first):
    t = new_server()
    t.start()
    client = t.client()
    write_workload(client.dur)
    client.close()

    pg = postmaster_pid(t)
    if first == "tierdb":
        t.stop(signal.SIGKILL)
        kill9(pg)
    else:
        kill9(pg)
        t.stop(signal.SIGKILL)
    wait_gone(pg)

    t.start()
    client = t.client()
    try:
        check_workload(client.dur)
        client.dur.c.insert_one({"_id": "after"})  # and it still takes writes
        assert client.dur.c.find_one({"_id": "after"}) == {"_id": "after"}
    finally:
        client.close()


def test_plain_restart_keeps_data(new_server):
    t = new_server()
    t.start()
    client = t.client()
    write_workload(client.dur)
    client.close()
    t.stop(signal.SIGTERM)
    assert t.proc.returncode == 0, t.read_log()
    # A clean shutdown takes its PostgreSQL down with it.
    assert not os.path.exists(os.path.join(t.data_dir, "pg", "postmaster.pid"))

    t.start()
    client = t.client()
    try:
        check_workload(client.dur)
    finally:
        client.close()


def alive_postmaster(t):
    try:
        pid = postmaster_pid(t)
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def test_server_recovers_when_its_postgres_is_killed(new_server):
    t = new_server()
    t.start()
    # No driver retries, and a socket timeout turns a hang into a failure.
    client = t.client(retryWrites=False, retryReads=False, socketTimeoutMS=20000)
    try:
        c = client.dur.c
        c.insert_many([{"_id": i} for i in range(100)])
        old = postmaster_pid(t)
        kill9(old)

        # Orphaned backends may still answer for a moment, then requests fail
        # until tierdb has restarted PostgreSQL. Keep going until a new
        # postmaster runs and 20 requests in a row succeeded.
        acked, errors, streak, restarted = [], [], 0, False
        deadline = time.time() + 60  # a liveness bound, far above the few seconds expected
        i = 0
        while time.time() < deadline and not (restarted and streak >= 20):
            i += 1
            restarted = restarted or alive_postmaster(t) not in (None, old)
            try:
                c.insert_one({"_id": f"probe{i}"})
                acked.append(f"probe{i}")
                assert c.find_one({"_id": 5}) == {"_id": 5}
                streak += 1
            except OperationFailure as e:
                errors.append(e)  # a MongoDB error: what clients should get
                streak = 0
                time.sleep(0.2)
        assert restarted and streak >= 20, f"not back within 60s; last errors: {errors[-3:]}\n{t.read_log()}"
        for e in errors:
            assert isinstance(e.code, int) and e.code != 0, e.details

        # Nothing acknowledged was lost, before or during the crash.
        assert c.count_documents({"_id": {"$type": "number"}}) == 100
        found = {d["_id"] for d in c.find({"_id": {"$regex": "^probe"}})}
        assert set(acked) <= found
    except ConnectionFailure as e:
        pytest.fail(f"connection-level failure instead of a MongoDB error: {e!r}\n{t.read_log()}")
    finally:
        client.close()


def test_write_concerns(db):
    c = db.c
    c.with_options(write_concern=WriteConcern(w="majority", wtimeout=1000)).insert_one({"_id": 1})
    c.with_options(write_concern=WriteConcern(j=True)).insert_one({"_id": 2})
    assert c.count_documents({}) == 2
    with pytest.raises(OperationFailure) as ei:
        db.command("insert", "c", documents=[{"_id": 3}], writeConcern={"w": 2})
    # UnsatisfiableWriteConcern, refused before the write: without
    # --replicas there is one member.
    assert ei.value.code == 100
    assert c.find_one({"_id": 3}) is None


def test_j_false_writes_commit_without_waiting_for_the_flush(db):
    """j:false (on w:1) takes the asynchronous commit; every other write
    concern, the default included, stays synchronous. serverStatus counts
    the asynchronous commits (the storage tests check the setting itself)."""
    def async_commits():
        return db.command("serverStatus")["tierdb"]["asyncCommits"]

    fast = db.get_collection("c", write_concern=WriteConcern(w=1, j=False))
    for write in [
        lambda: fast.insert_one({"_id": 1, "v": 1}),
        lambda: fast.insert_many([{"_id": 2}, {"_id": 3}]),
        lambda: fast.update_one({"_id": 1}, {"$inc": {"v": 1}}),
        lambda: fast.delete_one({"_id": 3}),
        lambda: fast.find_one_and_update({"_id": 2}, {"$set": {"v": 7}}),
        # Nothing to wait for on standbys either: no replicas here.
        lambda: db.command({"insert": "c", "documents": [{"_id": 9}], "writeConcern": {"w": 0, "j": False}}),
        lambda: db.command({"insert": "c", "documents": [{"_id": 10}], "writeConcern": {"w": "majority", "j": False}}),
    ]:
        before = async_commits()
        write()
        assert async_commits() > before

    before = async_commits()
    db.c.insert_one({"_id": 4})  # the driver's default
    db.get_collection("c", write_concern=WriteConcern(w=1, j=True)).insert_one({"_id": 5})
    db.get_collection("c", write_concern=WriteConcern(w=1)).insert_one({"_id": 6})
    db.command({"insert": "c", "documents": [{"_id": 7}], "writeConcern": {"w": 1, "j": False, "fsync": True}})
    db.get_collection("c", write_concern=WriteConcern(w=1)).update_one({"_id": 4}, {"$set": {"v": 4}})
    assert async_commits() == before
    assert list(db.c.find().sort("_id", 1)) == [
        {"_id": 1, "v": 2}, {"_id": 2, "v": 7}, {"_id": 4, "v": 4}, {"_id": 5}, {"_id": 6}, {"_id": 7},
        {"_id": 9}, {"_id": 10}]

    with pytest.raises(OperationFailure) as e:
        db.command({"insert": "c", "documents": [{"_id": 8}], "writeConcern": {"w": 1, "j": "no"}})
    assert e.value.code == 14  # TypeMismatch; nothing written
    assert db.c.find_one({"_id": 8}) is None
