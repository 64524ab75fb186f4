"""Priority tiers: the priority channel, nice levels, CPU pools and I/O
priority of PostgreSQL backends, run-time configuration, and --qos=off.

Checked from the outside: through pymongo and through /proc."""
import ctypes
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import pymongo
import pytest
from pymongo.errors import ExecutionTimeout, OperationFailure

from conftest import Tierdb, helper_pid, ionice
from rawwire import op_msg

POOLS = "priority=0-1;standard=0-1;restricted=1"


@pytest.fixture(scope="module")
def qserver(tierdb_bin):
    metrics_port = _free_port()
    t = Tierdb(tierdb_bin, extra_args=[
        "--enable-test-commands", "--cpu-pools", POOLS, "--metrics-listen", f"127.0.0.1:{metrics_port}",
    ]).start()
    t.metrics_port = metrics_port
    yield t
    t.cleanup()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tier_client(server, tier):
    c = server.client(maxPoolSize=1)
    c.admin.command("setClientPriority", tier)
    return c


def nice_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[16])


def session_nice_of(pid):
    """The nice level of the autogroup of pid's session ("/autogroup-7 nice 5")."""
    with open(f"/proc/{pid}/autogroup") as f:
        return int(f.read().split()[2])


def autogroups_enabled():
    try:
        with open("/proc/sys/kernel/sched_autogroup_enabled") as f:
            return f.read().strip() == "1"
    except OSError:
        return False


AUTOGROUPS = autogroups_enabled()


def cpus_of(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Cpus_allowed_list:"):
                return line.split(":", 1)[1].strip()


def slice_of(tid):
    """The CPU time slice the kernel gives a thread, in µs (sched_getattr)."""
    attr = ctypes.create_string_buffer(56)  # struct sched_attr
    if ctypes.CDLL(None, use_errno=True).syscall(315, tid, attr, 56, 0) != 0:  # SYS_sched_getattr, x86-64
        raise OSError(ctypes.get_errno(), f"sched_getattr({tid})")
    return int.from_bytes(attr.raw[24:32], "little") // 1000


KEEPS_SLICES = tuple(int(x) for x in os.uname().release.split(".")[:2]) >= (6, 12)


def status(server):
    """qosStatus through a connection of its own (tier clients may be busy)."""
    with server.client() as c:
        return c.admin.command("qosStatus")


def backends(client, tier):
    return client.admin.command("qosStatus")["tiers"][tier]["backends"]


def wait_until(cond, timeout=5.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


def run_in_thread(fn):
    out = {}

    def target():
        try:
            out["result"] = fn()
        except Exception as e:  # noqa: BLE001 - reported by the caller
            out["error"] = e
        out["end"] = time.monotonic()

    th = threading.Thread(target=target)
    th.start()
    return th, out


def hold_high(server, high, millis):
    """Keep one high-tier request in process for millis (the sleep test
    command), and return once the channel counts it."""
    th, out = run_in_thread(lambda: high.admin.command("sleep", 1, millis=millis))
    assert wait_until(lambda: status(server)["tiers"]["high"]["inProcess"] == 1)
    return th, out


def test_set_client_priority_and_connection_status(qserver):
    c = qserver.client(maxPoolSize=1)
    assert c.admin.command("connectionStatus")["priority"] == "normal"
    reply = c.admin.command("setClientPriority", "low")
    assert reply["was"] == "normal" and reply["priority"] == "low"
    assert c.admin.command("connectionStatus")["priority"] == "low"
    assert c.admin.command("qosStatus")["caller"]["priority"] == "low"
    with pytest.raises(OperationFailure) as e:
        c.admin.command("setClientPriority", "gold")
    assert e.value.code == 2 and "high" in str(e.value) and "low" in str(e.value)
    assert c.admin.command("connectionStatus")["priority"] == "low", "a refused change keeps the tier"
    with pytest.raises(OperationFailure) as e:
        c.test.command("find", "x", priority=1)
    assert e.value.code == 2
    c.close()


def test_backends_run_at_their_tier_nice_level(qserver):
    """The high tier's backends run at -19. A lower tier's positive nice
    level applies only while the high tier is active (a request in process,
    or one that ended within --restricted-hold); otherwise its backends run
    at 0, as with QoS off: where they share a cgroup with tierdb, at 19 they
    would yield to tierdb's own threads, which their requests need too.
    Where the kernel shares the CPU between sessions (autogroups), each
    backend leads a session of its own, and its session gets the level too:
    that is the level that ranks it there."""
    clients = {t: tier_client(qserver, t) for t in ("high", "normal", "low")}
    for c in clients.values():
        c.test.warm.find_one()
    pids = {t: backends(c, t) for t, c in clients.items()}
    assert all(pids.values()), pids
    sessions = AUTOGROUPS and os.geteuid() == 0
    assert status(qserver)["osPriorities"]["sessionNice"] is sessions

    def nices(tier):
        got = {nice_of(p) for p in pids[tier]}
        if sessions:
            assert {session_nice_of(p) for p in pids[tier]} == got, f"{tier}: sessions apart from the backends"
        return got

    assert nices("high") == {-19}
    assert wait_until(lambda: nices("low") == {0}), "the low tier kept nice 19 with the high tier idle"
    assert nices("normal") == {0}
    assert status(qserver)["osPriorities"]["lowerTiersNiced"] is False
    th, _ = hold_high(qserver, clients["high"], 1000)
    try:
        assert wait_until(lambda: nices("low") == {19}), "the low tier did not yield while the high tier was active"
        assert nices("normal") == {10} and nices("high") == {-19}
        assert status(qserver)["osPriorities"]["lowerTiersNiced"] is True
    finally:
        th.join()
    assert wait_until(lambda: nices("low") == {0} and nices("normal") == {0}), "the lower tiers stayed niced after the high tier went idle"
    assert status(qserver)["osPriorities"]["lowerTiersNiced"] is False
    for c in clients.values():
        c.close()


def test_one_high_tier_backend_waits_ready_before_any_high_tier_request(new_server):
    """A time-sensitive client's first request does not pay for a backend's
    start: one high-tier backend is opened with the server, at the high
    tier's level, and kept."""
    t = new_server().start()
    try:
        c = t.client()  # the default tier: nothing runs at the high tier
        assert wait_until(lambda: len(backends(c, "high")) == 1), backends(c, "high")
        pid = backends(c, "high")[0]
        assert nice_of(pid) == -19
        high = tier_client(t, "high")
        high.test.warm.find_one()
        assert backends(c, "high") == [pid], "the first high-tier request opened a backend of its own"
        high.close()
        c.close()
    finally:
        t.cleanup()


def test_collections_wait_while_the_high_tier_is_active(new_server):
    """Go's collector gets four times its headroom while a high-tier request
    is in process and for a second after (serverStatus.tierdb.gc), so that
    its collections fall in the high tier's pauses; then the usual again."""
    t = new_server(extra_args=["--enable-test-commands"]).start()
    try:
        c = t.client()

        def gc():
            return c.admin.command("serverStatus")["tierdb"]["gc"]

        before = gc()
        assert before["paced"] and before["headroomMiB"] == 128, before
        assert not before["deferredForHighTier"] and before["deferrals"] == 0, before
        for i in range(100):  # the default tier defers nothing
            c.test.gc.insert_one({"i": i})
        assert gc()["deferrals"] == 0
        high = tier_client(t, "high")
        th, out = hold_high(t, high, 2500)
        during = gc()
        assert during["deferredForHighTier"] and during["deferrals"] == 1, during
        assert during["headroomMiB"] == 512, during
        time.sleep(1.5)
        assert gc()["deferredForHighTier"], "the deferral ended while a high-tier request ran"
        th.join()
        assert "error" not in out, out
        assert wait_until(lambda: not gc()["deferredForHighTier"], timeout=5)
        assert time.monotonic() - out["end"] >= 0.8, "the deferral ended before its hold"
        after = gc()
        assert after["headroomMiB"] == 128 and after["deferrals"] == 1, after
        # The percentage follows the headroom (both from about the same live heap).
        assert after["gogc"] < during["gogc"], (during, after)
        high.close()
        c.close()
    finally:
        t.cleanup()


def test_gc_defer_false_keeps_the_usual_pacing_for_the_high_tier(new_server):
    """--gc-defer=false: a high-tier request defers nothing."""
    t = new_server(extra_args=["--enable-test-commands", "--gc-defer=false"]).start()
    try:
        c = t.client()
        high = tier_client(t, "high")
        th, out = hold_high(t, high, 500)
        g = c.admin.command("serverStatus")["tierdb"]["gc"]
        assert g["paced"] and not g["deferredForHighTier"] and g["headroomMiB"] == 128, g
        th.join()
        assert "error" not in out, out
        assert c.admin.command("serverStatus")["tierdb"]["gc"]["deferrals"] == 0
        high.close()
        c.close()
    finally:
        t.cleanup()


@pytest.mark.skipif(not KEEPS_SLICES, reason="custom slices need Linux 6.12 (EEVDF)")
def test_slices_of_backends_and_of_tierdb_itself(qserver):
    high, normal = tier_client(qserver, "high"), tier_client(qserver, "normal")
    high.test.warm.find_one()
    normal.test.warm.find_one()
    default = slice_of(os.getpid())
    assert default != 100

    def tierdb_threads():
        return [int(t) for t in os.listdir(f"/proc/{qserver.proc.pid}/task")]

    # By default the high tier's slice follows the host (the next test),
    # the lower tiers' is the kernel's.
    st = status(qserver)
    assert st["tiers"]["high"]["sliceAuto"] is True and st["tiers"]["normal"]["sliceAuto"] is False
    assert st["tiers"]["normal"]["sliceMicros"] == 0
    assert all(slice_of(p) == default for p in backends(normal, "normal"))

    for bad in ({"normal": 5}, {"normal": "auto"}, {"high": "fast"}):
        with pytest.raises(OperationFailure) as e:
            normal.admin.command("setQoSConfig", 1, sliceMicros=bad)
        assert e.value.code == 2 and "slice" in str(e.value)
    assert status(qserver)["tiers"]["high"]["sliceAuto"] is True
    assert all(slice_of(p) == default for p in backends(normal, "normal"))
    try:
        normal.admin.command("setQoSConfig", 1, sliceMicros={"high": 0})
        assert status(qserver)["tiers"]["high"]["sliceAuto"] is False
        assert all(slice_of(p) == default for p in backends(high, "high") + backends(normal, "normal"))
        assert all(slice_of(t) == default for t in tierdb_threads())

        normal.admin.command("setQoSConfig", 1, sliceMicros={"high": 100, "normal": 300})
        assert status(qserver)["tiers"]["high"]["sliceMicros"] == 100
        assert all(slice_of(p) == 100 for p in backends(high, "high"))
        assert all(slice_of(p) == 300 for p in backends(normal, "normal"))
        # tierdb's own threads serve every high-tier request: the high slice.
        assert all(slice_of(t) == 100 for t in tierdb_threads())
        normal.admin.command("setQoSConfig", 1, sliceMicros={"high": 0, "normal": 0})
        assert all(slice_of(p) == default for p in backends(high, "high") + backends(normal, "normal"))
        assert all(slice_of(t) == default for t in tierdb_threads())
    finally:
        normal.admin.command("setQoSConfig", 1, sliceMicros={"high": "auto", "normal": 0})
    assert status(qserver)["tiers"]["high"]["sliceAuto"] is True
    high.close()
    normal.close()


@pytest.mark.skipif(not KEEPS_SLICES, reason="custom slices need Linux 6.12 (EEVDF)")
def test_high_slice_follows_other_programs_on_the_cpus(qserver):
    """With the default high=auto, busy loops of another program on every
    CPU give the high tier's backends and tierdb's threads a 100 µs slice,
    which high-tier traffic beside them keeps (its backends wait long for a
    CPU, and tierdb reports how long); once they stop, the kernel's default
    comes back."""
    high = tier_client(qserver, "high")
    high.test.warm.find_one()
    default = slice_of(os.getpid())
    threads = lambda: [int(t) for t in os.listdir(f"/proc/{qserver.proc.pid}/task")]

    def in_force(want):
        # Looked at three times a second: this process's own polling is
        # "another program" to tierdb, and must not keep the host busy.
        time.sleep(0.3)
        st = status(qserver)
        host = st["osPriorities"]["host"]
        return (host["watching"] and host["contended"] is (want == 100)
                and st["tiers"]["high"]["sliceMicros"] == (100 if want == 100 else 0)
                and all(slice_of(p) == want for p in backends(high, "high"))
                and all(slice_of(t) == want for t in threads()))

    assert wait_until(lambda: in_force(default), timeout=10), status(qserver)["osPriorities"]["host"]
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
             for _ in range(os.cpu_count())]
    try:
        assert wait_until(lambda: in_force(100), timeout=10), status(qserver)["osPriorities"]["host"]
        assert status(qserver)["osPriorities"]["host"]["otherProgramsCPUs"] >= 0.25
        end = time.monotonic() + 3
        while time.monotonic() < end:
            high.test.slicewait.insert_one({})
        host = status(qserver)["osPriorities"]["host"]
        assert host["highTimeslices"] >= 200 and host["highWaitMicros"] > 0, host
        assert wait_until(lambda: in_force(100), timeout=10), status(qserver)["osPriorities"]["host"]
        m = metric_samples(qserver)
        assert m['tierdb_qos_slice_seconds{tier="high"}'] == 0.0001 and m['tierdb_qos_slice_seconds{tier="low"}'] == 0
        assert m["tierdb_host_other_cpus"] >= 0.25 and m["tierdb_host_high_wait_seconds"] >= 0
    finally:
        for p in loops:
            p.kill()
            p.wait()
    assert wait_until(lambda: in_force(default), timeout=15), status(qserver)["osPriorities"]["host"]
    high.close()


def test_high_backends_in_priority_pool_and_lower_tiers_restricted_while_high_runs(qserver):
    high, low = tier_client(qserver, "high"), tier_client(qserver, "low")
    high.test.warm.find_one()
    low.test.warm.find_one()
    for pid in backends(low, "high"):
        assert cpus_of(pid) == "0-1"
    low_pids = backends(low, "low")
    assert all(cpus_of(p) == "0-1" for p in low_pids), "standard pool while no high request runs"
    th, _ = run_in_thread(lambda: high.admin.command("sleep", 1, millis=1500))
    try:
        assert wait_until(lambda: all(cpus_of(p) == "1" for p in low_pids)), "restricted pool while a high request runs"
        assert low.admin.command("qosStatus")["cpuPools"]["lowerTiersIn"] == "restricted"
    finally:
        th.join()
    assert wait_until(lambda: all(cpus_of(p) == "0-1" for p in low_pids)), "back to the standard pool"
    high.close()
    low.close()


def test_no_lower_tier_request_is_processed_while_a_high_one_is(qserver):
    high, normal, low = (tier_client(qserver, t) for t in ("high", "normal", "low"))
    for c in (high, normal, low):
        c.test.order.find_one()
    th_high, out_high = hold_high(qserver, high, millis=1000)
    th_low, out_low = run_in_thread(lambda: low.test.order.find_one())
    th_norm, out_norm = run_in_thread(lambda: normal.test.order.find_one())
    for th in (th_high, th_low, th_norm):
        th.join()
    for out in (out_high, out_low, out_norm):
        assert "error" not in out, out
    # The ends are taken by the client threads, each when it next runs: on a
    # busy machine the high one's can come a few ms after the server let the
    # others through. A request processed during the 1 s hold would end
    # about a second early.
    slack = 0.05
    assert out_low["end"] >= out_high["end"] - slack, "a low request finished while the high one was in process"
    assert out_norm["end"] >= out_high["end"] - slack, "a normal request finished while the high one was in process"
    st = status(qserver)["tiers"]
    assert st["low"]["waited"] >= 1 and st["normal"]["waited"] >= 1
    for c in (high, normal, low):
        c.close()


def test_per_request_priority_overrides_the_session_tier(qserver):
    high, low = tier_client(qserver, "high"), tier_client(qserver, "low")
    low.test.order.find_one()
    th, out_high = hold_high(qserver, high, millis=800)
    # The low session asks for high for one request: it does not wait.
    start = time.monotonic()
    low.test.command("find", "order", filter={}, priority="high")
    assert time.monotonic() - start < 0.5
    th.join()
    assert low.admin.command("connectionStatus")["priority"] == "low", "the session tier applies again"
    high.close()
    low.close()


def test_waiting_request_of_a_vanished_client_leaves_the_queue(qserver):
    high = tier_client(qserver, "high")
    th, _ = hold_high(qserver, high, millis=2000)
    before = status(qserver)["tiers"]["low"]["cancelled"]
    s = socket.create_connection(("127.0.0.1", qserver.port), timeout=5)
    s.sendall(op_msg({"setClientPriority": "low", "$db": "admin"}, request_id=1))
    s.recv(65536)
    s.sendall(op_msg({"find": "order", "filter": {}, "$db": "test"}, request_id=2))
    assert wait_until(lambda: status(qserver)["tiers"]["low"]["waiting"] == 1)
    s.close()
    assert wait_until(lambda: status(qserver)["tiers"]["low"]["waiting"] == 0, timeout=1.0), \
        "the waiter of a closed connection must leave at once, not when the high request ends"
    assert status(qserver)["tiers"]["low"]["cancelled"] == before + 1
    th.join()
    st = status(qserver)["tiers"]
    assert all(st[t]["inProcess"] == 0 and st[t]["waiting"] == 0 for t in ("normal", "low"))
    high.close()


def test_max_time_ms_expires_while_waiting(qserver):
    high, low = tier_client(qserver, "high"), tier_client(qserver, "low")
    low.test.order.find_one()
    th, _ = hold_high(qserver, high, millis=1500)
    start = time.monotonic()
    with pytest.raises(ExecutionTimeout) as e:
        low.test.order.find_one({}, max_time_ms=200)
    assert e.value.code == 50
    assert time.monotonic() - start < 1.0
    th.join()
    assert status(qserver)["tiers"]["low"]["waiting"] == 0
    high.close()
    low.close()


def test_threshold_two_lets_normal_run_beside_one_high(qserver):
    admin = qserver.client()
    try:
        assert admin.admin.command("setQoSConfig", 1, threshold=2)["threshold"] == 2
        high, normal = tier_client(qserver, "high"), tier_client(qserver, "normal")
        normal.test.order.find_one()
        th, _ = hold_high(qserver, high, millis=1000)
        start = time.monotonic()
        normal.test.order.find_one()
        assert time.monotonic() - start < 0.5, "one high request is below threshold 2"
        th.join()
        high.close()
        normal.close()
    finally:
        admin.admin.command("setQoSConfig", 1, threshold=1)
        admin.close()


@pytest.mark.parametrize("cmd, args", [
    ("setQoSConfig", {"threshold": 0}),
    ("setQoSConfig", {"threshold": "two"}),
    ("setQoSConfig", {"nice": {"gold": 1}}),
    ("setQoSConfig", {"nice": {"high": -40}}),
    ("setQoSConfig", {"ioPriority": {"low": "slow"}}),
    ("setQoSConfig", {"threshold": 3, "unknownKnob": 1}),
    ("setQoSConfig", {"anticipationMS": -1}),
    ("setQoSConfig", {"anticipationMS": "1ms"}),
    ("setQoSConfig", {"anticipationMS": float("nan")}),
    ("setQoSConfig", {"anticipationMS": 5000}),
    ("setQoSConfig", {"cpuPools": {"priority": "0", "standard": "0-1", "restricted": "64"}}),
    ("setCpuPools", {"priority": "0", "standard": "0-1", "restricted": "9999"}),
    ("setCpuPools", {"priority": "0", "standard": "0-1"}),
    ("setCpuPools", {"priority": "x", "standard": "0-1", "restricted": "1"}),
    ("setCpuPools", {"fast": "0"}),
])
def test_bad_qos_configuration_is_refused_and_changes_nothing(qserver, cmd, args):
    c = qserver.client()
    before = c.admin.command("qosStatus")
    with pytest.raises(OperationFailure) as e:
        if cmd == "setCpuPools":
            c.admin.command(cmd, args)
        else:
            c.admin.command(cmd, 1, **args)
    assert e.value.code == 2 and e.value.details["codeName"] == "BadValue"
    after = c.admin.command("qosStatus")
    for key in ("threshold", "cpuPools", "starvationGuardMS", "anticipationMS"):
        assert after[key] == before[key]
    assert {t: after["tiers"][t]["nice"] for t in after["tiers"]} == {t: before["tiers"][t]["nice"] for t in before["tiers"]}
    c.close()


def test_anticipation_holds_lower_tiers_after_a_high_request(qserver):
    admin = qserver.client()
    high, low = tier_client(qserver, "high"), tier_client(qserver, "low")
    low.test.order.find_one()
    try:
        # Long enough that the low request below surely comes inside it.
        reply = admin.admin.command("setQoSConfig", 1, anticipationMS=1000)
        assert reply["anticipationMS"] == 1000
        before = status(qserver)
        high.test.order.find_one()
        start = time.monotonic()
        low.test.order.find_one()
        assert time.monotonic() - start > 0.5, "the low request must wait out the anticipation period"
        after = status(qserver)
        assert after["tiers"]["low"]["waited"] == before["tiers"]["low"]["waited"] + 1
        assert after["anticipation"]["periods"] > before["anticipation"]["periods"]
        assert after["anticipation"]["expired"] > before["anticipation"]["expired"]
        # Fractions of a millisecond are allowed; 0 turns it off again.
        assert admin.admin.command("setQoSConfig", 1, anticipationMS=0.5)["anticipationMS"] == 0.5
    finally:
        assert admin.admin.command("setQoSConfig", 1, anticipationMS=0)["anticipationMS"] == 0
    waited = status(qserver)["tiers"]["low"]["waited"]
    high.test.order.find_one()
    low.test.order.find_one()
    assert status(qserver)["tiers"]["low"]["waited"] == waited, "off: a low request after a high one goes at once"
    high.close()
    low.close()
    admin.close()


def test_set_cpu_pools_and_nice_at_run_time(qserver):
    c = tier_client(qserver, "low")
    c.test.warm.find_one()
    pids = backends(c, "low")
    try:
        reply = c.admin.command("setCpuPools", {"priority": "0-1", "standard": "1", "restricted": "1"})
        assert reply["standard"] == "1"
        assert wait_until(lambda: all(cpus_of(p) == "1" for p in pids))
        c.admin.command("setQoSConfig", 1, nice={"low": 10})
        assert c.admin.command("qosStatus")["tiers"]["low"]["nice"] == 10
        assert wait_until(lambda: all(nice_of(p) == 0 for p in pids)), "the high tier is idle: the low tier runs at 0"
        high = tier_client(qserver, "high")
        th, _ = hold_high(qserver, high, 500)
        try:
            assert wait_until(lambda: all(nice_of(p) == 10 for p in pids))
        finally:
            th.join()
            high.close()
    finally:
        c.admin.command("setQoSConfig", 1, nice={"low": 19}, cpuPools={"priority": "0-1", "standard": "0-1", "restricted": "1"})
    assert all(cpus_of(p) == "0-1" for p in pids)
    assert wait_until(lambda: all(nice_of(p) == 0 for p in pids))
    c.close()


def test_background_processes_idle_but_wal_writer_best_effort(qserver):
    assert ionice(helper_pid(qserver.data_dir, "checkpointer")) == "idle"
    # Commits wait for the WAL writer's writes: it is not deprioritised.
    assert ionice(helper_pid(qserver.data_dir, "walwriter")) == "best-effort: prio 0"


def metric_samples(server):
    """The /metrics samples by name with their labels, as floats."""
    body = urllib.request.urlopen(f"http://127.0.0.1:{server.metrics_port}/metrics", timeout=5).read().decode()
    samples = {}
    for line in body.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            samples[name] = float(value)
    return samples


def test_metrics_endpoint_exports_tier_figures(qserver):
    c = tier_client(qserver, "low")
    c.test.order.find_one()
    samples = metric_samples(qserver)
    assert samples['tierdb_qos_enabled'] == 1
    assert samples['tierdb_qos_admitted_total{tier="low"}'] >= 1
    assert 'tierdb_qos_waiting{tier="high"}' in samples
    assert samples['tierdb_qos_anticipation_seconds'] == 0 and 'tierdb_qos_anticipation_periods_total' in samples
    assert samples['tierdb_request_duration_seconds_count{tier="low"}'] >= 1
    assert samples['tierdb_command_calls_total{command="find"}'] >= 1
    c.close()


def test_qos_off_has_no_channel(new_server):
    t = new_server(extra_args=["--qos=off", "--enable-test-commands"]).start()
    c = t.client()
    assert c.admin.command("qosStatus")["enabled"] is False
    if KEEPS_SLICES:  # tierdb's threads keep the kernel's default slice
        assert all(slice_of(int(x)) == slice_of(os.getpid()) for x in os.listdir(f"/proc/{t.proc.pid}/task"))
    with pytest.raises(OperationFailure) as e:
        c.admin.command("setQoSConfig", 1, threshold=2)
    assert e.value.code == 20
    high, low = tier_client(t, "high"), tier_client(t, "low")
    low.test.x.find_one()
    th, _ = run_in_thread(lambda: high.admin.command("sleep", 1, millis=1000))
    time.sleep(0.2)
    start = time.monotonic()
    low.test.x.find_one()
    assert time.monotonic() - start < 0.5, "with --qos=off nothing waits"
    th.join()
    for x in (c, high, low):
        x.close()


def test_client_vanishing_while_its_request_is_in_process_leaves_no_count(qserver):
    s = socket.create_connection(("127.0.0.1", qserver.port), timeout=5)
    s.sendall(op_msg({"setClientPriority": "high", "$db": "admin"}, request_id=1))
    s.recv(65536)
    s.sendall(op_msg({"sleep": 1, "millis": 5000, "$db": "admin"}, request_id=2))
    assert wait_until(lambda: status(qserver)["tiers"]["high"]["inProcess"] == 1)
    s.close()
    assert wait_until(lambda: status(qserver)["tiers"]["high"]["inProcess"] == 0, timeout=1.0), \
        "the request of a closed connection must end at once"
    # Lower tiers are admitted again right away.
    low = tier_client(qserver, "low")
    start = time.monotonic()
    low.test.order.find_one()
    assert time.monotonic() - start < 0.5
    low.close()
