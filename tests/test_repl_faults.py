"""Replication faults (issue 12): repeated step-downs under majority write
load, a member that cannot rejoin, majority counted over configured members,
and tierdb starting whatever state the set was left in."""
import shutil
import signal
import threading
import time

import pytest
from pymongo.errors import PyMongoError, WriteConcernError
from pymongo.write_concern import WriteConcern


def healthy_members(c, n, timeout=60):
    deadline = time.time() + timeout
    while True:
        st = c.admin.command("replSetGetStatus")
        if len(st["members"]) == n and all(m["health"] == 1 for m in st["members"]):
            return st
        assert time.time() < deadline, st
        time.sleep(0.2)


def test_repeated_stepdowns_under_majority_writes_keep_three_members(new_server):
    t = new_server(extra_args=["--replicas", "2", "--staleness-poll", "5ms"]).start(timeout=180)
    c = t.client()
    try:
        coll = c.rf.c.with_options(write_concern=WriteConcern(w="majority", wtimeout=20000))
        acked, stop = [], threading.Event()

        def writer(w):
            wc = t.client()
            wcoll = wc.rf.c.with_options(write_concern=WriteConcern(w="majority", wtimeout=20000))
            i = 0
            while not stop.is_set():
                try:
                    wcoll.insert_one({"_id": f"{w}-{i}"})
                    acked.append(f"{w}-{i}")
                except PyMongoError:
                    time.sleep(0.05)
                i += 1
            wc.close()

        threads = [threading.Thread(target=writer, args=(w,)) for w in range(3)]
        for th in threads:
            th.start()
        for target in ("node1", "node2", "node0", "node1"):
            time.sleep(1)
            c.admin.command("replSetStepDown", 60, to=target)
            st = healthy_members(c, 3)
            assert st["members"][0]["name"] == target and st["members"][0]["stateStr"] == "PRIMARY"
        time.sleep(0.5)
        stop.set()
        for th in threads:
            th.join(60)
        present = {d["_id"] for d in coll.find()}
        missing = [a for a in acked if a not in present]
        assert acked and not missing, f"{len(missing)} acknowledged majority writes lost: {missing[:5]}"
        # Every member follows: a write all three apply is acknowledged.
        coll.with_options(write_concern=WriteConcern(w=3, wtimeout=20000)).insert_one({"_id": "last"})
    finally:
        c.close()
        t.cleanup()


def test_majority_counts_configured_members_and_restart_is_degraded_not_refused(new_server):
    t = new_server(extra_args=["--replicas", "2", "--write-concern-timeout", "2s"]).start(timeout=180)
    c = t.client()
    c.rf.c.insert_one({"_id": 0})
    c.close()
    t.stop()
    # node1's data is destroyed: it is rebuilt from a base backup at start.
    shutil.rmtree(f"{t.data_dir}/node1/pg")
    # node2's directory is replaced by a file: not even a rebuild can go
    # there, and tierdb must start without it.
    shutil.rmtree(f"{t.data_dir}/node2")
    with open(f"{t.data_dir}/node2", "w") as f:
        f.write("not a directory")
    t.start(timeout=180)
    c = t.client()
    try:
        log = t.read_log()
        assert "running without it" in log
        assert c.rf.c.count_documents({}) == 1  # the primary serves
        st = c.admin.command("replSetGetStatus")
        assert sorted(m["name"] for m in st["members"]) == ["node0", "node1"]
        # Majority of the three configured members: node1 suffices.
        c.rf.c.with_options(write_concern=WriteConcern(w="majority", wtimeout=10000)).insert_one({"_id": 1})
        # w: 3 counts the missing member: applied on the primary, not
        # acknowledged as replicated to three.
        with pytest.raises(WriteConcernError) as e:
            c.rf.c.with_options(write_concern=WriteConcern(w=3, wtimeout=1000)).insert_one({"_id": 2})
        assert e.value.code == 64
        assert c.rf.c.count_documents({}) == 3
    finally:
        c.close()
        t.cleanup()
