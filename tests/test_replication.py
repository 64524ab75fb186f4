"""Replica set on PostgreSQL streaming replication: write concerns, read
preferences, staleness and failover, through pymongo against a real tierdb
with two embedded hot standbys."""
import os
import signal
import threading
import time

import pymongo
import pytest
from conftest import helper_pid, ionice, node_pids
from pymongo import WriteConcern
from pymongo.errors import OperationFailure, WriteConcernError


class Frozen:
    """Stops every process of a standby (SIGSTOP) until the block ends: the
    node neither replays nor answers, as when it is lost."""

    def __init__(self, data_dir, node):
        self.pids = node_pids(os.path.join(data_dir, node))

    def __enter__(self):
        for p in self.pids:
            os.kill(p, signal.SIGSTOP)
        return self

    def __exit__(self, *exc):
        for p in self.pids:
            try:
                os.kill(p, signal.SIGCONT)
            except ProcessLookupError:
                pass


@pytest.fixture(scope="module")
def rs(tierdb_bin):
    import conftest
    t = conftest.Tierdb(tierdb_bin, extra_args=["--replicas", "2", "--staleness-poll", "5ms",
                                                "--write-concern-timeout", "3s", "--balance-period", "1s"]).start()
    yield t
    t.cleanup()


@pytest.fixture
def rdb(rs):
    c = rs.client()
    name = "r_" + os.urandom(6).hex()
    yield c[name]
    c.drop_database(name)
    c.close()


def find_on(db, coll, flt, mode, batchSize=101, **pref):
    pref["mode"] = mode
    cmd = {"find": coll, "filter": flt, "batchSize": batchSize, "$readPreference": pref}
    return db.command(cmd)["cursor"]["firstBatch"]


def status(db):
    return db.client.admin.command("replSetGetStatus")


def served(db):
    return {m["name"]: m["readsServed"] for m in status(db)["members"]}


def test_status_lists_primary_and_standbys(rdb):
    # A new standby replays what the primary wrote at start first; until it
    # has, its freshness is unknown and reported as null.
    deadline = time.time() + 20
    while time.time() < deadline:
        st = status(rdb)
        if all(m["stalenessMillis"] is not None for m in st["members"]):
            break
        time.sleep(0.1)
    names = [m["name"] for m in st["members"]]
    assert names == ["node0", "node1", "node2"]
    assert [m["stateStr"] for m in st["members"]] == ["PRIMARY", "SECONDARY", "SECONDARY"]
    for m in st["members"][1:]:
        assert m["health"] == 1
        # An idle standby is caught up: its staleness is about the poll interval.
        assert m["stalenessMillis"] is not None and m["stalenessMillis"] < 1000, repr(st["members"])
    assert 0 < st["readBalancer"]["fraction"] <= 0.9
    with pytest.raises(OperationFailure) as ei:
        rdb.command("replSetGetStatus")
    assert ei.value.code == 13


def test_server_status_and_metrics_show_replication(new_server):
    import urllib.request
    import conftest
    mport = conftest.free_port()
    t = new_server(extra_args=["--replicas", "1", "--metrics-listen", f"127.0.0.1:{mport}"]).start()
    c = t.client()
    c.r.c.with_options(write_concern=WriteConcern(w=2)).insert_one({"_id": 1})
    find_on(c.r, "c", {}, "secondary")
    repl = c.admin.command("serverStatus")["repl"]
    assert repl["primary"] == "node0" and repl["hosts"] == ["node0", "node1"]
    sb = repl["standbys"][0]
    assert sb["name"] == "node1" and sb["up"] is True and sb["readsServed"] == 1
    assert sb["stalenessMillis"] is not None and sb["lagBytes"] >= 0
    assert 0 < repl["readBalancer"]["fraction"] <= 0.9
    text = urllib.request.urlopen(f"http://127.0.0.1:{mport}/metrics", timeout=5).read().decode()
    assert 'tierdb_repl_reads_total{node="node1"} 1' in text
    assert 'tierdb_repl_staleness_seconds{node="node1"}' in text
    assert "tierdb_read_balance_fraction " in text
    c.close()


def test_w3_is_visible_on_every_standby_at_once(rdb):
    c = rdb.c.with_options(write_concern=WriteConcern(w=3))
    for i in range(20):
        c.insert_one({"_id": i})
        for node in ("node1", "node2"):
            assert find_on(rdb, "c", {"_id": i}, "secondary", tags=[{"node": node}]) == [{"_id": i}], node


def test_majority_is_visible_on_at_least_one_standby(rdb):
    c = rdb.c.with_options(write_concern=WriteConcern(w="majority"))
    for i in range(20):
        c.insert_one({"_id": i})
        seen = [find_on(rdb, "c", {"_id": i}, "secondary", tags=[{"node": n}]) for n in ("node1", "node2")]
        assert [{"_id": i}] in seen


def test_j_false_with_standbys_to_wait_for_still_commits_synchronously(rdb):
    # The standbys' wait is for the primary's flushed WAL, which must hold
    # the write; an asynchronous commit could end that wait too early.
    def async_commits():
        return rdb.command("serverStatus")["tierdb"]["asyncCommits"]

    before = async_commits()
    for w in (3, "majority"):
        c = rdb.c.with_options(write_concern=WriteConcern(w=w, j=False))
        c.insert_one({"_id": w})
        seen = [find_on(rdb, "c", {"_id": w}, "secondary", tags=[{"node": n}]) for n in ("node1", "node2")]
        assert [{"_id": w}] in seen
    assert async_commits() == before
    rdb.c.with_options(write_concern=WriteConcern(w=1, j=False)).insert_one({"_id": 1})
    assert async_commits() == before + 1


def test_unsatisfiable_and_unknown_write_concerns_are_refused_before_writing(rdb):
    with pytest.raises(OperationFailure) as ei:
        rdb.command("insert", "c", documents=[{"_id": 1}], writeConcern={"w": 4})
    assert ei.value.code == 100
    with pytest.raises(OperationFailure) as ei:
        rdb.command("insert", "c", documents=[{"_id": 1}], writeConcern={"w": "dc1"})
    assert ei.value.code == 79
    assert rdb.c.count_documents({}) == 0


def test_wtimeout_with_a_standby_lost_keeps_the_write(rs, rdb):
    with Frozen(rs.data_dir, "node2"):
        t = time.monotonic()
        with pytest.raises(WriteConcernError) as ei:
            rdb.c.with_options(write_concern=WriteConcern(w=3, wtimeout=300)).insert_one({"_id": "w3"})
        assert ei.value.code == 64
        assert ei.value.details["errInfo"]["wtimeout"] is True
        assert time.monotonic() - t < 2.5
        # The write itself stays, as in MongoDB.
        assert rdb.c.find_one({"_id": "w3"}) == {"_id": "w3"}
        # Losing a standby blocks neither w:1 nor a majority the rest can make.
        t = time.monotonic()
        rdb.c.insert_one({"_id": "w1"})
        rdb.c.with_options(write_concern=WriteConcern(w="majority", wtimeout=2000)).insert_one({"_id": "maj"})
        assert time.monotonic() - t < 1.5
        # Without wtimeout the server's cap (--write-concern-timeout 3s) ends
        # the wait with a writeConcernError instead of a hang.
        with pytest.raises(WriteConcernError):
            rdb.c.with_options(write_concern=WriteConcern(w=3)).insert_one({"_id": "nocap"})
        # The frozen standby grows stale and bounded reads avoid it.
        time.sleep(0.3)
        st = {m["name"]: m for m in status(rdb)["members"]}
        assert st["node2"]["health"] == 0 or st["node2"]["stalenessMillis"] > 250
        with pytest.raises(OperationFailure) as ei:
            find_on(rdb, "c", {}, "secondary", tags=[{"node": "node2"}], maxStalenessMS=250)
        assert ei.value.code == 133
        before = served(rdb)
        assert find_on(rdb, "c", {"_id": "w1"}, "secondary", maxStalenessMS=250) == [{"_id": "w1"}]
        after = served(rdb)
        assert after["node1"] == before["node1"] + 1 and after["node2"] == before["node2"]


def test_read_preferences_choose_the_node(rdb):
    rdb.c.with_options(write_concern=WriteConcern(w=3)).insert_one({"_id": 1})
    cases = [
        ("primary", {}, "node0"),
        ("nearest", {}, None),
        ("primaryPreferred", {}, "node0"),
        ("secondary", {"tags": [{"node": "node2"}]}, "node2"),
        ("secondaryPreferred", {"tags": [{"node": "node1"}]}, "node1"),
        ("secondary", {"maxStalenessSeconds": 5}, None),
    ]
    for mode, extra, want in cases:
        before = served(rdb)
        assert find_on(rdb, "c", {"_id": 1}, mode, **extra) == [{"_id": 1}]
        after = served(rdb)
        changed = [n for n in after if after[n] != before.get(n, 0)]
        if want is None:
            assert len(changed) == 1, (mode, changed)
        else:
            assert changed == [want], (mode, changed)
    with pytest.raises(OperationFailure) as ei:
        find_on(rdb, "c", {}, "fastest")
    assert ei.value.code == 9


def test_cursor_stays_on_its_node(rdb):
    rdb.c.with_options(write_concern=WriteConcern(w=3)).insert_many([{"_id": i} for i in range(250)])
    res = rdb.command({"find": "c", "batchSize": 10, "$readPreference": {"mode": "secondary", "tags": [{"node": "node2"}]}})
    docs = res["cursor"]["firstBatch"]
    cid = res["cursor"]["id"]
    while cid:
        more = rdb.command({"getMore": cid, "collection": "c", "batchSize": 100})
        docs += more["cursor"]["nextBatch"]
        cid = more["cursor"]["id"]
    assert [d["_id"] for d in docs] == list(range(250))


def test_adaptive_reads_split_by_the_balance_fraction(rdb):
    rdb.c.with_options(write_concern=WriteConcern(w=3)).insert_one({"_id": 1})
    before = served(rdb)
    n = 400
    for _ in range(n):
        assert find_on(rdb, "c", {"_id": 1}, "adaptive", maxStalenessMS=1000) == [{"_id": 1}]
    after = served(rdb)
    to_primary = after["node0"] - before["node0"]
    to_standbys = n - to_primary
    # The fraction is between 10% and 90%: both sides get reads.
    assert to_primary > 0 and to_standbys > 0
    # A tag set {tierdb: adaptive} is the same request in a form drivers pass
    # through, here with a driver's own read preference.
    c = rdb.c.with_options(read_preference=pymongo.read_preferences.Nearest(
        tag_sets=[{"tierdb": "adaptive", "maxStalenessMS": "1000"}]))
    before = served(rdb)
    for _ in range(100):
        assert c.find_one({"_id": 1}) == {"_id": 1}
    after = served(rdb)
    assert sum(after.values()) - sum(before.values()) == 100
    assert after["node0"] - before["node0"] < 100  # some went to standbys
    with pytest.raises(OperationFailure) as ei:
        find_on(rdb, "c", {}, "nearest", tags=[{"tierdb": "fast"}])
    assert ei.value.code == 9


def test_adaptive_bound_defaults_and_zero_is_refused(rdb):
    # w:3, since a read within a 10 s bound may rightly miss a newer write.
    rdb.c.with_options(write_concern=WriteConcern(w=3)).insert_one({"_id": 1})
    # -1 means no explicit bound: the server's default for the tier applies.
    assert find_on(rdb, "c", {"_id": 1}, "adaptive", maxStalenessMS=-1) == [{"_id": 1}]
    assert find_on(rdb, "c", {"_id": 1}, "adaptive") == [{"_id": 1}]
    for bad in ({"maxStalenessMS": 0}, {"maxStalenessSeconds": -5}):
        with pytest.raises(OperationFailure) as ei:
            find_on(rdb, "c", {}, "adaptive", **bad)
        assert ei.value.code == 2
    with pytest.raises(OperationFailure) as ei:
        find_on(rdb, "c", {}, "primary", maxStalenessSeconds=5)
    assert ei.value.code == 2


@pytest.mark.parametrize("journal", [None, False], ids=["default", "j_false"])
def test_bounded_reads_never_see_data_older_than_the_bound(rs, rdb, journal):
    """The S workload in miniature: a writer stamps the time, readers on
    standbys with a 250 ms bound must never see a stamp older than the
    newest acknowledged one by more than the bound. With j:false every
    write is acknowledged before its WAL flush, and still counts."""
    wc = WriteConcern(w=1, j=journal)
    stop = threading.Event()
    acked = []
    errors = []

    def writer():
        c = rs.client()
        coll = c[rdb.name].get_collection("s", write_concern=wc)
        while not stop.is_set():
            now = time.time()
            coll.replace_one({"_id": "s"}, {"_id": "s", "t": now}, upsert=True)
            acked.append((time.time(), now))
        c.close()

    def noise():
        c = rs.client()
        coll = c[rdb.name].get_collection("noise", write_concern=wc)
        i = 0
        while not stop.is_set():
            coll.insert_many([{"x": "y" * 200} for _ in range(50)])
            i += 1
        c.close()

    threads = [threading.Thread(target=writer), threading.Thread(target=noise)]
    for th in threads:
        th.start()
    violations = 0
    reads = 0
    try:
        deadline = time.time() + 4
        while time.time() < deadline:
            started = time.time()
            # Every stamp acknowledged before the read started must be visible
            # unless it is younger than the bound.
            must_see = [stamp for (ack, stamp) in list(acked) if ack < started - 0.25]
            try:
                got = find_on(rdb, "s", {"_id": "s"}, "secondary", maxStalenessMS=250)
            except OperationFailure as e:
                assert e.code == 133
                continue
            reads += 1
            if must_see and (not got or got[0]["t"] < must_see[-1]):
                violations += 1
    finally:
        stop.set()
        for th in threads:
            th.join()
    assert reads > 20
    assert violations == 0


def test_failover_keeps_every_majority_write(new_server):
    t = new_server(extra_args=["--replicas", "2", "--staleness-poll", "5ms"]).start()
    c = t.client()
    coll = c.f.c.with_options(write_concern=WriteConcern(w="majority"))
    coll.insert_many([{"_id": i} for i in range(100)])
    c.admin.command("replSetStepDown", 60, to="node1")
    st = c.admin.command("replSetGetStatus")
    assert st["members"][0]["name"] == "node1" and st["members"][0]["stateStr"] == "PRIMARY"
    assert sorted(d["_id"] for d in c.f.c.find()) == list(range(100))
    coll.insert_one({"_id": 100})
    # The other standby and the old primary follow the new primary.
    deadline = time.time() + 30
    while time.time() < deadline:
        st = c.admin.command("replSetGetStatus")
        if len(st["members"]) == 3 and all(m["health"] == 1 for m in st["members"]):
            break
        time.sleep(0.2)
    assert sorted(m["name"] for m in st["members"][1:]) == ["node0", "node2"]
    coll.with_options(write_concern=WriteConcern(w=3, wtimeout=10000)).insert_one({"_id": 101})
    for node in ("node0", "node2"):
        assert len(find_on(c.f, "c", {}, "secondary", tags=[{"node": node}], batchSize=1000)) == 102
    # A restart keeps the promoted node as primary.
    c.close()
    t.stop()
    t.start()
    c = t.client()
    assert c.admin.command("replSetGetStatus")["members"][0]["name"] == "node1"
    assert c.f.c.count_documents({}) == 102
    c.close()


def test_stepdown_errors(rdb):
    with pytest.raises(OperationFailure) as ei:
        rdb.client.admin.command("replSetStepDown", 60, to="node7")
    assert ei.value.code == 2
    with pytest.raises(OperationFailure) as ei:
        rdb.command("replSetStepDown", 60)
    assert ei.value.code == 13


def test_without_replicas_secondary_reads_fail_clearly(db):
    with pytest.raises(OperationFailure) as ei:
        find_on(db, "c", {}, "secondary")
    assert ei.value.code == 133
    assert find_on(db, "c", {}, "secondaryPreferred") == []
    with pytest.raises(OperationFailure) as ei:
        db.client.admin.command("replSetGetStatus")
    assert ei.value.code == 76


def test_session_read_preference_applies_to_reads_without_one(rs, rdb):
    rdb.c.with_options(write_concern=WriteConcern(w=3)).insert_one({"_id": 1})
    c = rs.client(maxPoolSize=1)  # one connection: the session is the connection
    db = c[rdb.name]
    try:
        db.command("setReadPreference", {"mode": "secondary", "tags": [{"node": "node2"}], "maxStalenessMS": 5000})
        before = served(rdb)
        assert db.c.find_one({"_id": 1}) == {"_id": 1}
        after = served(rdb)
        assert after["node2"] == before["node2"] + 1
        # A read's own $readPreference still wins.
        assert find_on(db, "c", {"_id": 1}, "secondary", tags=[{"node": "node1"}]) == [{"_id": 1}]
        assert served(rdb)["node1"] == after["node1"] + 1
        db.command("setReadPreference", None)
        before = served(rdb)
        db.c.find_one({"_id": 1})
        assert served(rdb)["node0"] == before["node0"] + 1
        for bad, code in (({"mode": "fastest"}, 9), ({"mode": "primary", "maxStalenessMS": 100}, 2)):
            with pytest.raises(OperationFailure) as ei:
                db.command("setReadPreference", bad)
            assert ei.value.code == code
        with pytest.raises(OperationFailure) as ei:
            db.command("setReadPreference", "secondary")
        assert ei.value.code == 14
    finally:
        c.close()


def test_user_default_read_preference(new_server):
    import conftest
    pw = "s3cret-" + os.urandom(4).hex()
    t = new_server(env={"TIERDB_ADMIN_PASSWORD": pw},
                   extra_args=["--replicas", "1", "--admin-user", "admin",
                               "--user-read-preference", "reporter=secondary:5s"]).start()
    admin = t.client(username="admin", password=pw)
    admin.r.command("createUser", "reporter", pwd="pw-reporter", roles=["read"])
    admin.r.c.with_options(write_concern=WriteConcern(w=2)).insert_one({"_id": 1})
    reporter = t.client(username="reporter", password="pw-reporter", authSource="r")
    before = served(admin.r)
    assert reporter.r.c.find_one({"_id": 1}) == {"_id": 1}
    assert served(admin.r)["node1"] == before["node1"] + 1
    # Other users keep reading the primary.
    assert admin.r.c.find_one({"_id": 1}) == {"_id": 1}
    assert served(admin.r)["node0"] == before["node0"] + 1
    admin.close()
    reporter.close()


def test_external_standbys_get_routed_and_their_wal_path_prioritised(new_server):
    """tierdb on PostgreSQL servers it does not manage (--postgres-url and
    --standby-urls): reads reach the standby, and the helper processes it
    finds through pg_stat_activity get their I/O classes."""
    owner = new_server(extra_args=["--replicas", "1", "--qos", "off"]).start()

    def url(node_dir):
        with open(os.path.join(node_dir, "postgres.socketdir")) as f:
            return f"host={f.read().strip()} port=5432 user=postgres dbname=tierdb sslmode=disable"

    t = new_server(extra_args=["--postgres-url", url(owner.data_dir),
                               "--standby-urls", url(os.path.join(owner.data_dir, "node1"))]).start()
    c = t.client()
    c.x.c.with_options(write_concern=WriteConcern(w=2)).insert_one({"_id": 1})
    assert find_on(c.x, "c", {"_id": 1}, "secondary") == [{"_id": 1}]
    assert [m["name"] for m in status(c.x)["members"]] == ["primary", "standby1"]

    deadline = time.time() + 20
    while time.time() < deadline:
        got = (ionice(helper_pid(owner.data_dir, "checkpointer")),
               ionice(helper_pid(os.path.join(owner.data_dir, "node1"), "startup")),
               ionice(helper_pid(owner.data_dir, "walsender")))
        if got == ("idle", "best-effort: prio 0", "best-effort: prio 0"):
            break
        time.sleep(0.5)
    assert got == ("idle", "best-effort: prio 0", "best-effort: prio 0")
    c.close()


def test_failover_under_write_load_loses_no_acknowledged_write(new_server):
    """Writers keep going through a failover: every write the driver saw
    acknowledged (w:1 and w:majority) is on the new primary afterwards."""
    t = new_server(extra_args=["--replicas", "2", "--staleness-poll", "5ms"]).start()
    stop = threading.Event()
    acked = {1: [], "majority": []}
    failures = []

    def writer(w):
        c = t.client(retryWrites=True)
        coll = c.f.c.with_options(write_concern=WriteConcern(w=w, wtimeout=20000))
        i = 0
        while not stop.is_set():
            doc_id = f"{w}-{i}"
            try:
                coll.insert_one({"_id": doc_id})
                acked[w].append(doc_id)
            except pymongo.errors.PyMongoError as e:  # not acknowledged: may or may not be there
                failures.append(repr(e))
            i += 1
        c.close()

    threads = [threading.Thread(target=writer, args=(w,)) for w in acked]
    for th in threads:
        th.start()
    time.sleep(1)
    c = t.client()
    try:
        c.admin.command("replSetStepDown", 60)
        time.sleep(1)
    finally:
        stop.set()
        for th in threads:
            th.join()
    assert c.admin.command("replSetGetStatus")["members"][0]["name"] != "node0"
    present = {d["_id"] for d in c.f.c.find({}, {"_id": 1})}
    for w, ids in acked.items():
        assert ids, f"no w:{w} write was acknowledged"
        missing = [i for i in ids if i not in present]
        assert not missing, f"w:{w}: {len(missing)} acknowledged writes lost: {missing[:5]}"
    # Writers waited through the failover rather than failing (at most the
    # few that were running on the old primary when it stopped).
    assert len(failures) <= 4, failures
    c.close()
