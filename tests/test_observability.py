"""Metrics, the slow-operation log, health checks and the status page,
through a real tierdb (with one replica) and its PostgreSQL.

The status page is checked in a real headless browser: Debian's chromium
driven by selenium through chromium-driver (`make deps-tools` installs
both)."""
import json
import os
import re
import shutil
import signal
import struct
import tempfile
import threading
import time
import urllib.error
import urllib.request
import zlib

import pytest

import conftest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SECRET = "S3CRET-VALUE-1f9d"


@pytest.fixture(scope="module")
def obs(tierdb_bin):
    mport = conftest.free_port()
    t = conftest.Tierdb(tierdb_bin, extra_args=[
        "--replicas", "1", "--metrics-listen", f"127.0.0.1:{mport}", "--log-format", "json", "--slow-ms", "1",
        "--enable-test-commands",
    ]).start()
    t.url = f"http://127.0.0.1:{mport}"
    yield t
    t.cleanup()


def get(url, timeout=10):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def scrape(t):
    """(types by family, samples as {name{labels}: value})."""
    status, body = get(t.url + "/metrics")
    assert status == 200
    types, samples = {}, {}
    for line in body.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, typ = line.split(" ", 3)
            types[name] = typ
        elif line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            samples[name] = float(value)
    return types, samples


def tier_client(t, tier, **kw):
    c = t.client(maxPoolSize=1, **kw)
    c.admin.command("setClientPriority", tier)
    return c


def test_metric_names_and_types(obs):
    c = obs.client()
    c.m.c.insert_one({"x": 1})
    c.m.c.find_one({"x": 1})
    types, samples = scrape(obs)
    for name in ("tierdb_request_duration_seconds", "tierdb_command_duration_seconds", "tierdb_qos_wait_seconds",
                 "tierdb_fair_wait_seconds", "tierdb_long_poll_duration_seconds", "tierdb_write_concern_wait_seconds"):
        assert types.get(name) == "histogram", (name, types.get(name))
    # No quantile gauges are left: every quantile is a histogram's to compute.
    assert not [s for s in samples if "quantile=" in s and s.startswith("tierdb_")]
    assert types["tierdb_qos_in_process"] == "gauge" and types["tierdb_qos_admitted_total"] == "counter"
    for name, typ in types.items():
        if name.startswith("tierdb_") and typ == "counter":
            assert name.endswith("_total"), name
    # Go runtime and process collectors, build information.
    for name in ("go_goroutines", "go_gc_duration_seconds", "go_memstats_heap_alloc_bytes",
                 "process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds"):
        assert name in types, name
    info = [s for s in samples if s.startswith("tierdb_build_info{")]
    assert len(info) == 1 and samples[info[0]] == 1
    for label in ("version=", "commit=", "goversion=", "compat=\"6.0.0\""):
        assert label in info[0], info[0]
    # Per-command and per-tier latency; the command label is the table's
    # canonical name (isMaster counts as hello).
    assert samples['tierdb_command_duration_seconds_count{command="insert",tier="normal"}'] >= 1
    assert samples['tierdb_command_duration_seconds_count{command="find",tier="normal"}'] >= 1
    assert samples['tierdb_request_duration_seconds_count{tier="normal"}'] >= 2
    commands = set(c.admin.command("listCommands")["commands"])
    for s in samples:
        m = re.search(r'[{,]command="([^"]*)"', s)
        if m and s.startswith("tierdb_"):
            assert m.group(1) in commands, s
    c.close()


def test_unknown_commands_add_no_label_values(obs):
    c = obs.client()
    for i in range(3):
        with pytest.raises(Exception):
            c.admin.command(f"noSuchCommand{i}")
    _, samples = scrape(obs)
    assert not [s for s in samples if "noSuchCommand" in s]
    c.close()


def test_hello_long_polls_are_not_request_latency(obs):
    # A driver monitor with a 500 ms heartbeat sends awaitable hellos that
    # the server holds for 500 ms each.
    c = obs.client(heartbeatFrequencyMS=500)
    c.admin.command("ping")
    deadline = time.time() + 20
    while time.time() < deadline:
        _, samples = scrape(obs)
        if samples.get('tierdb_long_poll_duration_seconds_count{command="hello"}', 0) >= 3:
            break
        time.sleep(0.5)
    polls = samples['tierdb_long_poll_duration_seconds_count{command="hello"}']
    assert polls >= 3
    assert samples['tierdb_long_poll_duration_seconds_sum{command="hello"}'] >= 0.3 * polls
    # Every hello in the latency histogram answered at once.
    total = samples['tierdb_command_duration_seconds_count{command="hello",tier="normal"}']
    fast = samples['tierdb_command_duration_seconds_bucket{command="hello",tier="normal",le="0.25"}']
    assert total >= 1 and fast == total
    # And the tier's latency is not made of waits: its mean stays far
    # below a long-poll's 500 ms.
    n = samples['tierdb_request_duration_seconds_count{tier="normal"}']
    assert samples['tierdb_request_duration_seconds_sum{tier="normal"}'] / n < 0.1
    c.close()


def slow_lines(t):
    out = []
    for line in t.read_log().splitlines():
        line = line.strip()
        if line.startswith("{") and '"slow operation"' in line:
            out.append(json.loads(line))
    return out


def test_slow_operations_are_logged_as_json_without_document_contents(obs):
    c = obs.client()
    coll = c.slowdb.items
    coll.insert_many([{"_id": i, "v": i % 50, "secret": f"{SECRET}-{i}"} for i in range(20000)])
    for _ in range(3):
        list(coll.find({"v": 7, "secret": SECRET}).sort("v", -1))
    coll.update_many({"secret": SECRET}, {"$set": {"note": SECRET}})
    high = tier_client(obs, "high")
    high.admin.command("sleep", 1, millis=30)
    time.sleep(0.5)
    lines = slow_lines(obs)
    finds = [l for l in lines if l["command"] == "find" and l.get("collection") == "items"]
    assert finds, lines[-5:]
    f = finds[-1]
    assert f["level"] == "INFO" and f["db"] == "slowdb" and f["tier"] == "normal"
    assert f["user"] == "(unauthenticated)" and f["client"].startswith("127.0.0.1:")
    assert f["duration_ms"] >= 1
    assert f["plan_summary"].startswith("COLLSCAN") and "SORT" in f["plan_summary"]
    assert any(l["command"] == "insert" and l.get("collection") == "items" for l in lines)
    assert any(l["command"] == "update" and "plan_summary" in l for l in lines)
    sleeps = [l for l in lines if l["command"] == "sleep"]
    assert sleeps and sleeps[-1]["tier"] == "high" and sleeps[-1]["duration_ms"] >= 30
    # Every log line is JSON, and no document value reaches the log.
    for line in obs.read_log().splitlines():
        if line.strip():
            json.loads(line)
    assert SECRET not in obs.read_log()
    _, samples = scrape(obs)
    assert samples['tierdb_slow_operations_total{tier="normal"}'] >= 3
    assert samples['tierdb_slow_operations_total{tier="high"}'] >= 1
    # The status page lists them, newest first, with the same fields.
    _, body = get(obs.url + "/status.json")
    ops = json.loads(body)["slowOps"]
    assert ops and ops[0]["time"] >= ops[-1]["time"] and SECRET not in body
    assert len(ops) <= 100
    high.close()
    c.close()


def test_slow_log_off_and_bad_flags(new_server):
    t = new_server(extra_args=["--slow-ms", "0", "--enable-test-commands"]).start()
    c = t.client()
    c.admin.command("sleep", 1, millis=50)
    assert "slow operation" not in t.read_log()
    c.close()
    t.stop()
    for args, msg in ((["--log-format", "xml"], "--log-format"), (["--slow-ms", "-1"], "--slow-ms")):
        b = new_server(extra_args=args)
        with pytest.raises(RuntimeError) as e:
            b.start(timeout=20)
        assert msg in str(e.value)


def test_write_concern_wait_is_its_own_histogram(obs):
    from pymongo import WriteConcern
    c = obs.client()
    c.wc.c.with_options(write_concern=WriteConcern(w=2)).insert_one({"x": 1})
    _, samples = scrape(obs)
    assert samples["tierdb_write_concern_wait_seconds_count"] >= 1
    c.close()


def test_dashboard_queries_name_metrics_that_exist(obs):
    """Every metric the Grafana dashboard queries exists on a live tierdb
    (QoS on, one replica, after some traffic)."""
    from pymongo import WriteConcern
    c = obs.client()
    c.dash.c.with_options(write_concern=WriteConcern(w=2)).insert_one({"x": 1})
    c.dash.c.find_one()
    with pytest.raises(Exception):
        c.dash.command("find", 1)  # a failure, so failures have a series
    with open(os.path.join(ROOT, "deploy", "grafana-dashboard.json")) as f:
        dash = json.load(f)
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    assert len(exprs) >= 15
    names = set()
    for e in exprs:
        names |= set(re.findall(r"\b((?:tierdb|go|process)_[a-z0-9_]+)", e))
    types, _ = scrape(obs)
    missing = []
    for n in sorted(names):
        base = re.sub(r"_(bucket|sum|count)$", "", n)
        if n not in types and not (base in types and types[base] in ("histogram", "summary")):
            missing.append(n)
    assert not missing, missing
    # The scrape config scrapes the path the metrics are served on.
    with open(os.path.join(ROOT, "deploy", "prometheus.yml")) as f:
        prom = f.read()
    assert "job_name: tierdb" in prom and "metrics_path: /metrics" in prom
    assert all('job="$job"' in e for e in exprs)
    c.close()


def test_healthz_and_readyz(obs):
    assert get(obs.url + "/healthz") == (200, "ok\n")
    assert get(obs.url + "/readyz") == (200, "ready\n")
    # A PostgreSQL that stops answering (its processes stopped) makes
    # tierdb not ready while it stays alive; it is ready again after.
    pids = conftest.node_pids(obs.data_dir)
    for p in pids:
        os.kill(p, signal.SIGSTOP)
    try:
        status, body = get(obs.url + "/readyz")
        assert status == 503 and "PostgreSQL primary" in body, body
        assert get(obs.url + "/healthz")[0] == 200
    finally:
        for p in pids:
            os.kill(p, signal.SIGCONT)
    deadline = time.time() + 30
    while get(obs.url + "/readyz")[0] != 200:
        assert time.time() < deadline, "not ready again after PostgreSQL resumed"
        time.sleep(0.2)


# --- the status page in a real browser ---------------------------------

def png_pixels(data):
    """Decode an 8-bit RGB or RGBA non-interlaced PNG: (width, height, rows)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", chunk)
            assert depth == 8 and color in (2, 6) and interlace == 0, (depth, color, interlace)
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(height):
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    chromium = shutil.which("chromium")
    driver = shutil.which("chromedriver")
    if not chromium or not driver:
        pytest.fail("chromium and chromium-driver are not installed: make deps-tools installs them")
    profile = tempfile.mkdtemp(prefix="tierdb-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for a in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync",
              "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--window-size=1400,1500"):
        opts.add_argument(a)
    d = webdriver.Chrome(service=Service(executable_path=driver), options=opts)
    d.set_page_load_timeout(30)
    return d, profile


def test_status_page_in_a_headless_browser(obs, tmp_path):
    from selenium.webdriver.common.by import By
    stop = threading.Event()
    errors = []

    def load(tier, coll):
        try:
            c = tier_client(obs, tier)
            c.page[coll].insert_many([{"_id": i, "v": i} for i in range(200)])
            while not stop.is_set():
                c.page[coll].find_one({"_id": 7})
                c.page[coll].find_one({"v": {"$gt": 150}}, sort=[("v", -1)])
            c.close()
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=load, args=(tier, tier)) for tier in ("high", "low")]
    for th in threads:
        th.start()
    # Some reads go to the replica too.
    rc = obs.client()
    d, profile = browser()
    try:
        d.get(obs.url + "/")
        deadline = time.time() + 30

        def cells(table):
            # One script call: the page replaces its rows every second.
            return d.execute_script(
                "return Array.from(document.querySelectorAll(arguments[0])).map("
                "tr => Array.from(tr.cells).map(td => td.textContent))", f"#{table} tbody tr")

        def num(text):
            return float(text.replace(",", ""))

        def rate(row):  # a tier's admitted/s
            return num(row[3])

        while True:
            rc.page.command({"find": "high", "filter": {"_id": 3}, "$readPreference": {"mode": "secondary"}})
            tiers = {r[0]: r for r in cells("tiers") if r}
            replicas = {r[0]: r for r in cells("replicas") if r}
            users = {(u[0], u[1]): u for u in cells("users")}
            ok = ("high" in tiers and "low" in tiers and rate(tiers["high"]) > 0 and rate(tiers["low"]) > 0
                  and "node1" in replicas and replicas["node1"][6] not in ("", "0")
                  and ("(unauthenticated)", "high") in users and num(users[("(unauthenticated)", "high")][2]) > 0)
            if ok or time.time() > deadline:
                break
            time.sleep(0.5)
        assert not errors, errors
        assert set(tiers) == {"high", "normal", "low"}, tiers
        assert rate(tiers["high"]) > 0 and rate(tiers["low"]) > 0, tiers
        assert int(tiers["high"][8].replace(",", "")) > 0
        assert replicas["node0"][1] == "primary" and replicas["node1"][1] == "standby", replicas
        assert int(replicas["node1"][6].replace(",", "")) > 0, replicas
        # The users' throughput (ops/s) at each tier.
        assert num(users[("(unauthenticated)", "high")][2]) > 0, users
        assert num(users[("(unauthenticated)", "low")][2]) > 0, users
        backends = {r[0]: r for r in cells("backends")}
        assert backends["high"][1] == "-19" and backends["low"][1] == "19", backends
        assert "live" in d.find_element(By.ID, "state").text
        assert cells("slow"), "no slow operations listed"
        shot = tmp_path / "status.png"
        d.save_screenshot(str(shot))
        keep = os.environ.get("TIERDB_SCREENSHOT")
        if keep:
            shutil.copy(shot, keep)
    finally:
        stop.set()
        d.quit()
        shutil.rmtree(profile, ignore_errors=True)
        for th in threads:
            th.join()
        rc.close()
    data = shot.read_bytes()
    assert len(data) > 30_000, len(data)
    width, height, bpp, rows = png_pixels(data)
    assert width >= 1000 and height >= 800
    # Not blank: many colours, and dark text on most of the upper half.
    colours = set()
    inked = 0
    for y in range(0, height // 2, 4):
        row = rows[y]
        dark = False
        for x in range(0, width * bpp, bpp * 3):
            px = row[x:x + 3]
            colours.add(px)
            dark = dark or sum(px) < 200
        inked += dark
    assert len(colours) > 20, len(colours)
    assert inked > (height // 8) // 4, inked
