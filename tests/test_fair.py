"""Fair shares within a tier (seed 004): user weights, the parallelism limit
P and the gate's figures, through pymongo against a real tierdb. How fair
and how fast it is under load is measured by benchmarks, not here."""
import os
import re
import subprocess
import threading
import time

import urllib.request

import pytest
from pymongo.errors import OperationFailure

from conftest import free_port

PW = "pw"


def metrics_body(port):
    return urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()


@pytest.fixture
def authed(new_server):
    t = new_server(env={"TIERDB_ADMIN_PASSWORD": PW},
                   extra_args=["--admin-user", "admin", "--enable-test-commands", "--parallelism", "1"]).start()
    admin = t.client(username="admin", password=PW)
    yield t, admin
    admin.close()
    t.cleanup()


def test_weight_is_set_shown_checked_and_kept(authed):
    t, admin = authed
    admin.admin.command("createUser", "gold", pwd="g", roles=[{"role": "readWrite", "db": "app"}], weight=4)
    admin.admin.command("createUser", "plain", pwd="p", roles=[{"role": "readWrite", "db": "app"},
                                                              {"role": "userAdmin", "db": "admin"}])
    info = {u["user"]: u for u in admin.admin.command("usersInfo", ["gold", "plain"])["users"]}
    assert info["gold"]["weight"] == 4 and info["plain"]["weight"] == 1
    admin.admin.command("updateUser", "gold", weight=2.5)
    for bad in (0, -1, "heavy", 1e9, float("nan")):
        with pytest.raises(OperationFailure) as e:
            admin.admin.command("updateUser", "gold", weight=bad)
        assert e.value.code == 2, bad
    # A user administrator without QoS privileges cannot hand out shares.
    plain = t.client(username="plain", password="p")
    try:
        with pytest.raises(OperationFailure) as e:
            plain.admin.command("updateUser", "gold", weight=100)
        assert e.value.code == 13
        with pytest.raises(OperationFailure) as e:
            plain.admin.command("createUser", "x", pwd="x", roles=[], weight=100)
        assert e.value.code == 13
    finally:
        plain.close()
    assert admin.admin.command("usersInfo", "gold")["users"][0]["weight"] == 2.5
    # Weights survive a restart (they are stored with the user).
    admin.close()
    t.stop()
    t.start()
    admin2 = t.client(username="admin", password=PW)
    try:
        assert admin2.admin.command("usersInfo", "gold")["users"][0]["weight"] == 2.5
    finally:
        admin2.close()


def test_requests_queue_per_user_beyond_parallelism(authed):
    t, admin = authed
    for name, w in (("greedy", 1), ("polite", 3)):
        admin.admin.command("createUser", name, pwd=name, roles=[{"role": "readWrite", "db": "app"}], weight=w)
    greedy = t.client(username="greedy", password="greedy", maxPoolSize=10)
    polite = t.client(username="polite", password="polite")
    errors = []

    def sleep(c, ms):
        try:
            c.app.command("sleep", millis=ms)
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    # P = 1: one request holds the only slot; the others wait in their
    # users' queues at the gate.
    threads = [threading.Thread(target=sleep, args=(admin, 1500))]
    threads[0].start()
    time.sleep(0.3)
    threads += [threading.Thread(target=sleep, args=(greedy, 10)) for _ in range(4)]
    threads += [threading.Thread(target=sleep, args=(polite, 10))]
    for th in threads[1:]:
        th.start()
    deadline = time.time() + 10
    while True:
        fair = admin.admin.command("qosStatus")["fair"]
        users = {u["user"]: u for u in fair["tiers"]["normal"]["users"]}
        if users.get("admin.greedy", {}).get("waiting") == 4 and users.get("admin.polite", {}).get("waiting") == 1:
            break
        assert time.time() < deadline, fair
        time.sleep(0.05)
    assert fair["parallelism"] == 1
    assert users["admin.polite"]["weight"] == 3 and users["admin.greedy"]["weight"] == 1
    assert fair["tiers"]["normal"]["inProcess"] == 1
    for th in threads:
        th.join(30)
    assert not errors
    fair = admin.admin.command("qosStatus")["fair"]
    normal = fair["tiers"]["normal"]
    assert normal["waiting"] == 0 and normal["inProcess"] == 0
    # The ζ control's figures (measured once two users waited in a window)
    for key in ("unfairness", "latencyCV", "zeta"):
        assert isinstance(normal[key], float) and normal[key] >= 0, normal
    greedy.close()
    polite.close()


def test_parallelism_changes_at_run_time_and_bad_values_change_nothing(authed):
    t, admin = authed
    r = admin.admin.command("setQoSConfig", parallelism=6, restricted=2)
    assert (r["parallelism"], r["restricted"]) == (6, 2)
    for bad in ({"parallelism": -1}, {"restricted": "x"}, {"parallelism": 2.5}):
        with pytest.raises(OperationFailure) as e:
            admin.admin.command("setQoSConfig", **bad)
        assert e.value.code == 2
    fair = admin.admin.command("qosStatus")["fair"]
    assert (fair["parallelism"], fair["restricted"]) == (6, 2)


def test_fair_share_settings_change_at_run_time_and_bad_values_change_nothing(authed):
    t, admin = authed
    r = admin.admin.command("setQoSConfig", fairAnticipationMS=0.3, fairUnfairness=0.2, fairCV=2, zeta=3)
    assert (r["fairAnticipationMS"], r["fairUnfairness"], r["fairCV"]) == (pytest.approx(0.3), 0.2, 2)
    fair = admin.admin.command("qosStatus")["fair"]
    assert fair["autoAnticipation"] is False and (fair["unfairnessBound"], fair["cvBound"]) == (0.2, 2)
    for tier in ("normal", "low"):
        assert fair["tiers"][tier]["unfairnessLong"] == 0  # nothing measured yet
        assert fair["tiers"][tier]["anticipationMS"] == pytest.approx(0.3)
        assert fair["tiers"][tier]["zeta"] == 3  # nothing waits, so the control has not moved it
    bad = (
        {"zeta": 0}, {"zeta": -1}, {"zeta": 2.5}, {"zeta": "x"},
        {"fairUnfairness": 0}, {"fairUnfairness": -1}, {"fairUnfairness": float("nan")}, {"fairCV": "x"},
        {"fairAnticipationMS": "soon"}, {"fairAnticipationMS": -1}, {"fairAnticipationMS": 5000},
        {"fairUnfairness": 0.5, "zeta": 0},  # one bad field: the good one is not applied either
        {"zeta": 5, "fairCV": 0},
        {"fairZeta": 2},
    )
    for fields in bad:
        with pytest.raises(OperationFailure) as e:
            admin.admin.command("setQoSConfig", **fields)
        assert e.value.code == 2, fields
    fair = admin.admin.command("qosStatus")["fair"]
    assert (fair["unfairnessBound"], fair["cvBound"], fair["autoAnticipation"]) == (0.2, 2, False), fair
    assert fair["tiers"]["normal"]["zeta"] == 3 and fair["tiers"]["normal"]["anticipationMS"] == pytest.approx(0.3)
    r = admin.admin.command("setQoSConfig", fairAnticipationMS="auto")
    assert r["fairAnticipationMS"] == "auto"
    fair = admin.admin.command("qosStatus")["fair"]
    assert fair["autoAnticipation"] is True and fair["tiers"]["normal"]["anticipationMS"] == 0
    admin.admin.command("setQoSConfig", fairUnfairness=0.1, fairCV=1, zeta=8)  # the defaults, for the next tests


def test_fair_metrics_are_exported(new_server):
    port = free_port()
    t = new_server(extra_args=["--parallelism", "4", "--metrics-listen", f"127.0.0.1:{port}"]).start()
    try:
        c = t.client()
        c.app.c.insert_one({"x": 1})
        body = metrics_body(port)
        assert "tierdb_fair_parallelism 4" in body
        assert 'tierdb_fair_zeta{tier="normal"}' in body
        assert 'tierdb_fair_unfairness_long{tier="normal"} 0' in body  # nothing measured yet
        assert 'tierdb_fair_anticipation_seconds{tier="low"} 0' in body  # found by tierdb: none held yet
        assert 'tierdb_fair_user_weight{tier="normal",user="peer 127.0.0.1"} 1' in body
        c.close()
    finally:
        t.cleanup()


class UpdateLoad:
    """Threads that upsert-increment 50 documents back to back until stopped."""

    def __init__(self, client, threads):
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self.run, args=(client.app[f"load{i % 2}"],)) for i in range(threads)]
        for th in self.threads:
            th.start()

    def run(self, coll):
        n = 0
        while not self.stop.is_set():
            coll.update_one({"_id": n % 50}, {"$inc": {"n": 1}}, upsert=True)
            n += 1

    def end(self):
        self.stop.set()
        for th in self.threads:
            th.join(30)


def test_recalibration_samples_three_parallelisms_and_sets_p(new_server):
    t = new_server(extra_args=["--parallelism", "0"]).start()  # no automatic calibration
    c = t.client(maxPoolSize=20)
    load = UpdateLoad(c, 8)
    try:
        r = c.admin.command("setQoSConfig", recalibrate=True, calibrationWindowMS=400)
        assert r["calibrating"] is True
        with pytest.raises(OperationFailure) as e:  # one at a time
            c.admin.command("setQoSConfig", recalibrate=True, calibrationWindowMS=400)
        assert e.value.code == 117
        with pytest.raises(OperationFailure) as e:  # P belongs to the calibration meanwhile
            c.admin.command("setQoSConfig", parallelism=3)
        assert e.value.code == 117
        deadline = time.time() + 30
        while True:
            fair = c.admin.command("qosStatus")["fair"]
            cal = fair["calibration"]
            if not cal["running"]:
                break
            assert time.time() < deadline, cal
            time.sleep(0.1)
        ps = [s["p"] for s in cal["samples"]]
        assert ps[0] == 2 and ps[0] < ps[1] < ps[2], ps
        assert all(s["opsPerSec"] > 0 for s in cal["samples"]), cal
        measured = cal["samples"] + ([cal["check"]] if "check" in cal else [])
        if "check" in cal:  # Eq. 2's matching point, when no sample had it
            assert cal["fitted"] and cal["check"]["p"] == cal["predicted"] not in ps, cal
        # P is the smallest measured point within the margin of the most
        # throughput (0: only the largest sample, no limit, reached it): 5 %,
        # or the noise (how far one P's slices lie from their median), up to 15 %
        assert cal["noise"] >= 0, cal
        margin = min(max(0.05, cal["noise"]), 0.15)
        peak = max(s["opsPerSec"] for s in measured)
        best = min(s["p"] for s in measured if s["opsPerSec"] >= (1 - margin) * peak)
        assert cal["parallelism"] == (0 if best == ps[2] else best), cal
        assert fair["parallelism"] == cal["parallelism"]
        # a limit that no limit was as fast as only serves fairness: it holds
        # while two or more users have requests
        no_limit_as_fast = cal["samples"][2]["opsPerSec"] >= (1 - margin) * peak
        assert cal["forFairness"] is (cal["parallelism"] > 0 and no_limit_as_fast), cal
        assert fair["parallelismWhileShared"] is cal["forFairness"], fair
        with pytest.raises(OperationFailure) as e:
            c.admin.command("setQoSConfig", recalibrate=True, calibrationWindowMS=5)
        assert e.value.code == 2
    finally:
        load.end()
        c.close()
        t.cleanup()


def test_parallelism_auto_is_the_default_and_calibrates_while_users_share_until_set_by_hand(new_server):
    # The load below runs in this process, on tierdb's CPUs: to tierdb it is
    # another program, and with the high tier's automatic slice tierdb's
    # threads preempt it as they wake. Requests then spend less time in
    # tierdb, and the gate's demand (requests in it, averaged over 2 s) can
    # stay under the level that starts a calibration (a quarter of the
    # backends). The slice is fixed here so that the demand is this load's.
    t = new_server(env={"TIERDB_ADMIN_PASSWORD": PW}, extra_args=["--admin-user", "admin", "--slice", "high=0"]).start()
    admin = t.client(username="admin", password=PW)
    clients, loads = [], []
    try:
        fair = admin.admin.command("qosStatus")["fair"]
        assert fair["autoParallelism"] is True and "samples" not in fair["calibration"], fair
        for name in ("u1", "u2"):
            admin.admin.command("createUser", name, pwd=name, roles=[{"role": "readWrite", "db": "app"}])
            clients.append(t.client(username=name, password=name, maxPoolSize=40))
        # One user alone, however busy, is not calibrated for: two 2 s
        # windows of demand pass without a calibration starting.
        loads.append(UpdateLoad(clients[0], 16))
        time.sleep(4.5)
        cal = admin.admin.command("qosStatus")["fair"]["calibration"]
        assert not cal["running"] and "samples" not in cal, cal
        # A second user shares the normal tier: a 2 s window, then the samples.
        loads.append(UpdateLoad(clients[1], 16))
        deadline = time.time() + 60
        while True:
            cal = admin.admin.command("qosStatus")["fair"]["calibration"]
            if "samples" in cal and not cal["running"]:
                break
            assert time.time() < deadline, cal
            time.sleep(0.2)
        assert [s["p"] for s in cal["samples"]][0] == 2, cal
        admin.admin.command("setQoSConfig", parallelism=3)
        fair = admin.admin.command("qosStatus")["fair"]
        assert fair["autoParallelism"] is False and fair["parallelism"] == 3, fair
        assert fair["parallelismWhileShared"] is False, fair  # by hand: it always holds
    finally:
        for load in loads:
            load.end()
        for c in clients:
            c.close()
        admin.close()
        t.cleanup()


def test_bad_fair_bound_flags_are_refused(new_server):
    for flag in (["--fair-unfairness", "0"], ["--fair-cv", "-1"], ["--fair-unfairness", "nan"]):
        t = new_server(extra_args=flag)
        with pytest.raises(RuntimeError) as e:
            t.start()
        assert "bound must be in" in str(e.value), flag


def test_a_bad_parallelism_flag_is_refused(new_server):
    t = new_server(extra_args=["--parallelism", "many"])
    with pytest.raises(RuntimeError) as e:
        t.start()
    assert "--parallelism must be a number" in str(e.value)


def test_round_anticipation_is_found_by_default_fixed_by_flag_and_bad_values_refused(new_server):
    t = new_server().start()
    try:
        c = t.client()
        fair = c.admin.command("qosStatus")["fair"]
        assert fair["autoAnticipation"] is True, fair
        # Nobody waits: the control holds no slot.
        assert fair["tiers"]["normal"]["anticipationMS"] == 0 and fair["tiers"]["low"]["anticipationMS"] == 0, fair
        c.close()
    finally:
        t.cleanup()
    port = free_port()
    t = new_server(extra_args=["--fair-anticipation", "300us", "--metrics-listen", f"127.0.0.1:{port}"]).start()
    try:
        c = t.client()
        fair = c.admin.command("qosStatus")["fair"]
        assert fair["autoAnticipation"] is False, fair
        assert fair["tiers"]["normal"]["anticipationMS"] == pytest.approx(0.3), fair
        body = metrics_body(port)
        assert 'tierdb_fair_anticipation_seconds{tier="normal"} 0.0003' in body
        c.close()
    finally:
        t.cleanup()
    for bad in ("soon", "-1ms"):
        t = new_server(extra_args=["--fair-anticipation", bad])
        with pytest.raises(RuntimeError) as e:
            t.start()
        assert "--fair-anticipation must be a duration" in str(e.value)


def test_latency_objectives_are_set_checked_and_reported(authed):
    t, admin = authed
    admin.admin.command("createUser", "ls", pwd="ls", roles=[{"role": "readWrite", "db": "app"}], slo={"p999Ms": 20})
    assert admin.admin.command("usersInfo", "ls")["users"][0]["slo"] == {"p999Ms": 20}
    for bad in ({"p999Ms": 0}, {"p99Ms": 5}, {"p999Ms": "fast"}, 7):
        with pytest.raises(OperationFailure) as e:
            admin.admin.command("updateUser", "ls", slo=bad)
        assert e.value.code == 2, bad
    admin.admin.command("createUser", "ua", pwd="ua", roles=[{"role": "userAdmin", "db": "admin"}])
    ua = t.client(username="ua", password="ua")
    try:
        with pytest.raises(OperationFailure) as e:
            ua.admin.command("updateUser", "ls", slo={"p999Ms": 1})
        assert e.value.code == 13
    finally:
        ua.close()
    ls = t.client(username="ls", password="ls")
    try:
        for i in range(50):
            ls.app.c.insert_one({"i": i})
        deadline = time.time() + 10
        while True:
            slos = {s["user"]: s for s in admin.admin.command("qosStatus")["fair"]["slos"]}
            if "admin.ls" in slos and slos["admin.ls"]["p999Ms"] > 0:
                break
            assert time.time() < deadline, slos
            time.sleep(0.2)
        s = slos["admin.ls"]
        assert s["p999ObjectiveMs"] == 20 and s["state"] in ("met", "missed", "cannot be met")
        assert 0 < s["urgentAfterMs"] <= 20 and s["ahead"] >= 0
        assert 0 < s["serviceP999Ms"] <= s["p999Ms"], s  # the latency less the gate's wait
    finally:
        ls.close()
    admin.admin.command("updateUser", "ls", slo={})
    assert admin.admin.command("usersInfo", "ls")["users"][0]["slo"] == {}


def io_priority_of(pid):
    """The I/O priority as tierdb writes it ("best-effort/4", "idle")."""
    out = subprocess.run(["ionice", "-p", str(pid)], capture_output=True, text=True, check=True).stdout.strip()
    cls, _, level = out.partition(": prio ")
    return cls if cls in ("idle", "none") else f"{cls}/{level}"


def nice_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[16])


def test_priority_inheritance_boosts_the_holder_of_a_row_lock(new_server):
    """A low-tier transaction holds a row lock; a high-tier update of that
    row waits for it. While it waits, the low-tier backend runs at the high
    tier's nice level; once the lock is released it is back at its own (0,
    the low tier's level while the high tier is idle)."""
    port = free_port()
    t = new_server(extra_args=["--priority-inheritance", "5ms", "--metrics-listen", f"127.0.0.1:{port}"]).start()
    c = t.client()
    try:
        coll = c.app.hot
        coll.insert_one({"_id": 1, "n": 0})
        status = c.admin.command("qosStatus")
        want = {"high": status["tiers"]["high"]["nice"], "high io": status["tiers"]["high"]["ioPriority"],
                "low io": status["tiers"]["low"]["ioPriority"]}
        assert want["high io"] != want["low io"], status["tiers"]
        s = c.start_session()
        s.start_transaction()
        c.admin.command("setClientPriority", "low")  # the client's one connection: the session's statements run low
        coll.update_one({"_id": 1}, {"$inc": {"n": 1}}, session=s)
        low_pids = c.admin.command("qosStatus")["tiers"]["low"]["backends"]
        assert len(low_pids) == 1 and nice_of(low_pids[0]) == 0, "the high tier is idle: the low tier runs at 0"
        hi = t.client()
        hi.admin.command("setClientPriority", "high")
        result = {}

        def blocked_update():
            result["r"] = hi.app.hot.update_one({"_id": 1}, {"$inc": {"n": 10}})

        th = threading.Thread(target=blocked_update)
        th.start()
        deadline = time.time() + 10
        while nice_of(low_pids[0]) != want["high"]:
            assert time.time() < deadline, "the lock holder never inherited the high tier's priority"
            time.sleep(0.01)
        if c.admin.command("qosStatus")["osPriorities"]["sessionNice"]:
            with open(f"/proc/{low_pids[0]}/autogroup") as f:
                assert int(f.read().split()[2]) == want["high"], "the holder's session kept its own level"
        assert low_pids[0] in c.admin.command("qosStatus")["osPriorities"]["inheriting"]
        assert io_priority_of(low_pids[0]) == want["high io"], "the holder kept its own I/O priority"
        s.commit_transaction()
        th.join(10)
        assert result["r"].modified_count == 1
        deadline = time.time() + 10
        while nice_of(low_pids[0]) != 0:
            assert time.time() < deadline, "the holder kept the high tier's priority after the wait"
            time.sleep(0.01)
        assert io_priority_of(low_pids[0]) == want["low io"], "the holder kept the high tier's I/O priority"
        assert c.admin.command("qosStatus")["osPriorities"]["inheritances"] >= 1
        inherited = re.search(r"^tierdb_qos_inheritances_total (\S+)$", metrics_body(port), re.M)
        assert inherited and float(inherited.group(1)) >= 1
        assert coll.find_one({"_id": 1})["n"] == 11
        s.end_session()
        hi.close()
    finally:
        c.close()
        t.cleanup()


def standby_processes(data_dir, kind):
    """PIDs of the given helper (e.g. startup) of the standbys under data_dir."""
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                title = f.read().decode(errors="replace")
            if not title.startswith("postgres") or f" {kind}" not in title:
                continue
            with open(f"/proc/{pid}/stat") as f:
                ppid = f.read().rsplit(")", 1)[1].split()[1]
            with open(f"/proc/{ppid}/cmdline", "rb") as f:
                parent = f.read().decode(errors="replace")
        except OSError:
            continue
        if data_dir in parent:
            pids.append(int(pid))
    return pids


def test_priority_inheritance_boosts_the_standby_replay_while_high_tier_writes(new_server):
    """With priority inheritance on, a standby's startup process (which
    replays the WAL a majority write waits for) runs at the high tier's nice
    level while high-tier requests are in process, and at 0 again after."""
    t = new_server(extra_args=["--replicas", "1", "--priority-inheritance", "5ms"]).start()
    c = t.client()
    try:
        want_high = c.admin.command("qosStatus")["tiers"]["high"]["nice"]
        startup = standby_processes(t.data_dir, "startup")
        assert len(startup) == 1, startup
        assert nice_of(startup[0]) == 0
        hi = t.client(w="majority")
        hi.admin.command("setClientPriority", "high")
        stop = threading.Event()

        def writes():
            i = 0
            while not stop.is_set():
                hi.app.w.insert_one({"i": i})
                i += 1

        th = threading.Thread(target=writes)
        th.start()
        try:
            deadline = time.time() + 10
            while nice_of(startup[0]) != want_high:
                assert time.time() < deadline, "the standby's replay never got the high tier's nice level"
                time.sleep(0.01)
        finally:
            stop.set()
            th.join(10)
        deadline = time.time() + 10
        while nice_of(startup[0]) != 0:
            assert time.time() < deadline, "the standby's replay kept the high tier's nice level"
            time.sleep(0.01)
        hi.close()
    finally:
        c.close()
        t.cleanup()


def test_an_objective_at_the_high_tier_holds_the_lower_tiers(authed):
    # A high-tier request never waits at the gate, so its user's objective
    # steers the channel's anticipation instead (qos/slo.go): missed, it
    # grows; taken away, the objective is forgotten and nothing grows it.
    t, admin = authed
    admin.admin.command("createUser", "ts", pwd="ts", slo={"p999Ms": 0.001},
                        roles=[{"role": "readWrite", "db": "app"}, {"role": "tierHigh", "db": "admin"}])
    ts = t.client(username="ts", password="ts", maxPoolSize=1)
    try:
        ts.admin.command("setClientPriority", "high")
        deadline = time.time() + 20
        while True:
            for i in range(20):
                ts.app.c.insert_one({"i": i})
            st = admin.admin.command("qosStatus")
            if st["anticipation"]["forObjectivesMS"] >= 0.4:
                break
            assert time.time() < deadline, st["anticipation"]
            time.sleep(0.1)
        slo = {s["user"]: s for s in st["fair"]["slos"]}["admin.ts"]
        assert slo["steers"] == "anticipation" and slo["state"] in ("missed", "cannot be met"), slo
        assert st["anticipationMS"] == 0, "the configured anticipation is not the objectives'"
        periods = st["anticipation"]["periods"]
        ts.app.c.insert_one({"i": -1})
        assert admin.admin.command("qosStatus")["anticipation"]["periods"] > periods, \
            "a high-tier request's end starts an anticipation period"
        admin.admin.command("updateUser", "ts", slo={})
        ts.app.c.insert_one({"i": -2})
        st = admin.admin.command("qosStatus")
        assert "admin.ts" not in {s["user"] for s in st["fair"]["slos"]}, st["fair"]["slos"]
        deadline = time.time() + 10  # the controller's next period, with no high-tier objective
        while admin.admin.command("qosStatus")["anticipation"]["forObjectivesMS"] != 0:
            assert time.time() < deadline, "the objectives' anticipation outlived the last objective"
            time.sleep(0.1)
    finally:
        ts.close()


def test_user_fields_are_checked_and_objectives_exported_and_kept(new_server):
    """createUser and updateUser refuse a field they do not know (a misspelt
    weight must not be dropped) and an objective too small to keep; the
    objectives' figures reach /metrics with the tiers they are judged at;
    objectives survive a restart."""
    port = free_port()
    t = new_server(env={"TIERDB_ADMIN_PASSWORD": PW},
                   extra_args=["--admin-user", "admin", "--metrics-listen", f"127.0.0.1:{port}"]).start()
    admin = t.client(username="admin", password=PW)
    try:
        def refused(cmd, **fields):
            with pytest.raises(OperationFailure) as e:
                admin.admin.command(cmd, "ls", **fields)
            return e.value

        for cmd in ("createUser", "updateUser"):
            e = refused(cmd, pwd="ls", roles=[], wieght=2)
            assert e.code == 2 and "wieght" in str(e), cmd
            # NotImplemented: never accepted and left unenforced
            assert refused(cmd, pwd="ls", authenticationRestrictions=[{"clientSource": ["10.0.0.0/8"]}]).code == 238
            if cmd == "createUser":
                assert refused(cmd, pwd="ls", roles=[], slo={"p999Ms": 0.0001}).code == 2
                assert admin.admin.command("usersInfo", "ls")["users"] == []  # nothing was created
                admin.admin.command("createUser", "ls", pwd="ls", roles=[{"role": "readWrite", "db": "app"}],
                                    slo={"p999Ms": 20}, authenticationRestrictions=[])
            else:
                assert refused(cmd, slo={"p999Ms": 0.0001}).code == 2
        assert admin.admin.command("usersInfo", "ls")["users"][0]["slo"] == {"p999Ms": 20}  # unchanged
        admin.admin.command("createUser", "ua", pwd="ua", roles=[{"role": "userAdmin", "db": "admin"}])
        ua = t.client(username="ua", password="ua")
        try:
            with pytest.raises(OperationFailure) as e:
                ua.admin.command("createUser", "ls2", pwd="x", roles=[], slo={"p999Ms": 5})
            assert e.value.code == 13
        finally:
            ua.close()
        ls = t.client(username="ls", password="ls")
        try:
            deadline = time.time() + 15
            while True:
                for i in range(20):
                    ls.app.c.insert_one({"i": i})
                body = metrics_body(port)
                if re.search(r'tierdb_slo_p999_seconds\{tiers="lower",user="admin\.ls"\} [0-9.e-]*[1-9]', body):
                    break
                assert time.time() < deadline, body
                time.sleep(0.2)
        finally:
            ls.close()
        assert 'tierdb_slo_objective_seconds{tiers="lower",user="admin.ls"} 0.02' in body, body
        assert re.search(r'tierdb_slo_met\{tiers="lower",user="admin\.ls"\} [01]\n', body), body
        assert re.search(r'tierdb_slo_unmeetable\{tiers="lower",user="admin\.ls"\} [01]\n', body), body
        admin.close()
        t.stop()
        t.start()
        admin = t.client(username="admin", password=PW)
        assert admin.admin.command("usersInfo", "ls")["users"][0]["slo"] == {"p999Ms": 20}
    finally:
        admin.close()
        t.cleanup()
