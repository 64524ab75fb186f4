"""Operating tierdb (docs/operations.md): `tierdb version`, the example
config file, backup and restore through `tierdb dump`/`restore`, and the
throttling of failed authentications, against real servers and pymongo."""
import base64
import datetime
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.request
import uuid

import bson
import pymongo
import pytest
from bson import Decimal128, Int64, ObjectId
from pymongo.errors import OperationFailure

import rawwire
from conftest import ROOT, Tierdb, free_port
from test_auth import sasl_continue, sasl_start, scram_client_final, scram_client_first

EXAMPLE_CONFIG = os.path.join(ROOT, "deploy", "tierdb.yaml")


def run(binary, *args, check=True, timeout=300):
    p = subprocess.run([binary, *args], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    if check and p.returncode != 0:
        raise AssertionError(f"tierdb {' '.join(args)} exited with {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p


# --- tierdb version ----------------------------------------------------------

def test_version(tierdb_bin):
    out = run(tierdb_bin, "version").stdout
    lines = out.splitlines()
    assert len(lines) == 5, out
    m = re.fullmatch(r"tierdb (\d+\.\d+\.\d+) \(commit (unknown|[0-9a-f]{12}(\+modified)?), (go[\w.]+)\)", lines[0])
    assert m, lines[0]
    assert lines[3] == "mongodb:    6.0.0-compatible, wire versions 0 to 17", out
    # The revision, when stamped (make build does), is a commit of this repository.
    rev = re.match(r"commit:     ([0-9a-f]{40})", lines[1])
    if rev and os.path.isdir(os.path.join(ROOT, ".git")):
        assert subprocess.run(["git", "cat-file", "-e", rev.group(1) + "^{commit}"], cwd=ROOT).returncode == 0, lines[1]
    else:
        assert m.group(2) == "unknown" and "built without VCS information" in lines[1], out
    assert lines[2].startswith("go:         " + m.group(4) + " "), out
    # PostgreSQL as serve finds it: the version its postgres reports.
    bindir = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True).stdout.strip()
    if bindir and os.path.exists(os.path.join(bindir, "postgres")):
        want = subprocess.run([os.path.join(bindir, "postgres"), "--version"], capture_output=True, text=True).stdout
        want = want.split("(PostgreSQL) ", 1)[1].strip()
        assert lines[4] == f"postgresql: {want}, in {bindir}", out
    missing = run(tierdb_bin, "version", "--postgres-bin", "/nonexistent").stdout.splitlines()
    assert missing[4].startswith("postgresql: not found ("), missing


# --- the config file --------------------------------------------------------

def test_config_file_refuses_unknown_keys(tierdb_bin, tmp_path):
    bad = tmp_path / "tierdb.yaml"
    bad.write_text("listen: 127.0.0.1:27017\nmax-incoming: 10\n")
    p = run(tierdb_bin, "serve", "--config", str(bad), "--data-dir", str(tmp_path / "d"), check=False, timeout=30)
    assert p.returncode != 0
    assert 'line 2: unknown setting "max-incoming"' in p.stderr, p.stderr
    assert not (tmp_path / "d").exists()  # refused before anything started


# --- backup and restore ------------------------------------------------------

ADMIN_PW = "adm-" + uuid.uuid4().hex
APP_PW = "app-" + uuid.uuid4().hex


def contents(client):
    """Every document of every collection, and each collection's indexes."""
    out = {}
    for db in ("shop", "audit"):
        for name in sorted(client[db].list_collection_names()):
            docs = list(client[db][name].find({}).sort("_id", 1))
            indexes = {k: (v["key"], v.get("unique", False)) for k, v in client[db][name].index_information().items()}
            out[f"{db}.{name}"] = (docs, indexes)
    return out


def test_backup_round_trip(tierdb_bin, new_server, tmp_path):
    # A tierdb configured by the example file (as the systemd unit does),
    # with an administrator, users, several databases and collections,
    # indexes and every kind of value.
    a = new_server(env={"TIERDB_ADMIN_PASSWORD": ADMIN_PW},
                   extra_args=["--config", EXAMPLE_CONFIG, "--admin-user", "admin"]).start()
    admin = a.client(username="admin", password=ADMIN_PW)
    shop = admin.shop
    shop.orders.insert_many([{"_id": i, "item": f"item{i % 7}", "qty": i * 3, "price": Decimal128(f"{i}.25"),
                              "at": datetime.datetime(2024, 1, 1) + datetime.timedelta(minutes=i),
                              "tags": ["a", {"n": i}], "big": Int64(2**40 + i), "oid": ObjectId(), "raw": bson.Binary(bytes([i % 256]) * 5)}
                             for i in range(300)])
    shop.orders.create_index([("item", 1), ("qty", -1)], name="item_qty")
    shop.customers.insert_many([{"_id": f"c{i}", "email": f"c{i}@example.com"} for i in range(40)])
    shop.customers.create_index("email", unique=True)
    shop.create_collection("empty")
    admin.audit.log.insert_one({"_id": ObjectId(), "event": "created"})
    admin.admin.command("createUser", "app", pwd=APP_PW, roles=[{"role": "readWrite", "db": "shop"}], defaultTier="low")
    admin.shop.command("createRole", "reporter", privileges=[{"resource": {"db": "shop", "collection": ""}, "actions": ["find"]}], roles=[])
    before = contents(admin)
    assert len(before) == 4

    # Online: dumped while tierdb serves (and keeps serving).
    backup = str(tmp_path / "backup")
    out = run(tierdb_bin, "dump", "--data-dir", a.data_dir, "--out", backup).stdout
    assert "dumped 4 collections, 2 secondary indexes, 2 users, 1 roles from the running server" in out, out
    manifest = json.load(open(os.path.join(backup, "tierdb-backup.json")))
    assert manifest["online"] is True and manifest["counts"] == {"collections": 4, "indexes": 2, "users": 2, "roles": 1}, manifest
    assert oct(os.stat(backup).st_mode & 0o777) == "0o700"  # it holds the users' SCRAM keys
    # Written after the dump: not in the backup.
    shop.orders.insert_one({"_id": "after-the-dump"})
    assert admin.admin.command("ping")["ok"] == 1.0
    # A second dump into the same directory is refused, not mixed in.
    p = run(tierdb_bin, "dump", "--data-dir", a.data_dir, "--out", backup, check=False)
    assert p.returncode != 0 and "not empty" in p.stderr, p.stderr
    # Restoring under a running tierdb is refused.
    p = run(tierdb_bin, "restore", "--in", backup, "--data-dir", a.data_dir, check=False)
    assert p.returncode != 0 and "is a tierdb serving it?" in p.stderr, p.stderr
    admin.close()
    a.stop()

    # Offline: with tierdb stopped, dump starts the embedded PostgreSQL itself.
    offline = str(tmp_path / "offline")
    out = run(tierdb_bin, "dump", "--data-dir", a.data_dir, "--out", offline).stdout
    assert "dumped 4 collections" in out and json.load(open(os.path.join(offline, "tierdb-backup.json")))["online"] is False, out

    # Restore into a fresh data directory, start tierdb on it, find everything.
    fresh = tempfile.mkdtemp(prefix="tierdb-test-restore-", dir="/tmp")
    shutil.rmtree(fresh)
    try:
        out = run(tierdb_bin, "restore", "--in", backup, "--data-dir", fresh).stdout
        assert "restored 4 collections, 2 secondary indexes, 2 users, 1 roles" in out, out
        b = new_server(data_dir=fresh).start()
        # Users came back: access control is on, both passwords work.
        with pytest.raises(OperationFailure) as ei:
            b.client().shop.orders.find_one()
        assert ei.value.code == 13
        restored = b.client(username="admin", password=ADMIN_PW)
        assert contents(restored) == before
        assert restored.shop.orders.find_one({"_id": "after-the-dump"}) is None
        assert restored.shop.command("rolesInfo", "reporter")["roles"][0]["role"] == "reporter"
        app = b.client(username="app", password=APP_PW, authSource="admin")
        assert app.admin.command("connectionStatus")["priority"] == "low"  # its default tier
        assert app.shop.orders.count_documents({}) == 300
        app.shop.orders.insert_one({"_id": "new"})
        # The unique index is enforced, not only listed.
        with pytest.raises(pymongo.errors.DuplicateKeyError):
            app.shop.customers.insert_one({"email": "c1@example.com"})
        # The restored collections take new ones alongside.
        app.shop.fresh.insert_one({"x": 1})
        assert app.shop.fresh.count_documents({}) == 1
        app.close()
        restored.close()
        b.stop()
        # A data directory that holds data is never restored over.
        p = run(tierdb_bin, "restore", "--in", offline, "--data-dir", fresh, check=False)
        assert p.returncode != 0 and "already holds tierdb data (5 collections" in p.stderr, p.stderr
    finally:
        shutil.rmtree(fresh, ignore_errors=True)


def test_restore_refuses_what_is_no_backup(tierdb_bin, tmp_path):
    (tmp_path / "half").mkdir()
    p = run(tierdb_bin, "restore", "--in", str(tmp_path / "half"), "--data-dir", str(tmp_path / "d"), check=False)
    assert p.returncode != 0 and "holds no complete tierdb backup" in p.stderr, p.stderr
    p = run(tierdb_bin, "dump", "--data-dir", str(tmp_path / "nothing"), "--out", str(tmp_path / "out"), check=False)
    assert p.returncode != 0 and "no tierdb data in" in p.stderr, p.stderr


# --- authentication throttling ------------------------------------------------

VICTIM_PW = "victim-" + uuid.uuid4().hex
OTHER_PW = "other-" + uuid.uuid4().hex
WINDOW = 3.0


def login(srv, user, pw):
    """One authentication through pymongo; None on success, else the error."""
    c = srv.client(username=user, password=pw, authSource="admin", maxPoolSize=1, serverSelectionTimeoutMS=5000)
    try:
        c.admin.command("connectionStatus")
        return None
    except OperationFailure as e:
        return e
    finally:
        c.close()


def metric(srv, name, by):
    text = urllib.request.urlopen(srv.metrics_url, timeout=10).read().decode()
    m = re.search(rf'^{name}{{by="{by}"}} (\S+)$', text, re.M)
    assert m, f"{name}{{by={by}}} missing from /metrics"
    return float(m.group(1))


@pytest.fixture
def throttled(new_server):
    mport = free_port()
    t = new_server(env={"TIERDB_ADMIN_PASSWORD": ADMIN_PW},
                   extra_args=["--admin-user", "admin", "--metrics-listen", f"127.0.0.1:{mport}",
                               "--auth-throttle-failures", "3", "--auth-throttle-peer-failures", "12",
                               "--auth-throttle-window", f"{WINDOW}s"]).start()
    t.metrics_url = f"http://127.0.0.1:{mport}/metrics"
    admin = t.client(username="admin", password=ADMIN_PW)
    admin.admin.command("createUser", "victim", pwd=VICTIM_PW, roles=[{"role": "read", "db": "shop"}])
    admin.admin.command("createUser", "other", pwd=OTHER_PW, roles=[{"role": "read", "db": "shop"}])
    t.status = lambda: admin.admin.command("serverStatus")["security"]["authentication"]
    yield t
    admin.close()


def test_wrong_passwords_are_throttled(throttled):
    t = throttled
    wrong = [login(t, "victim", f"guess-{i}") for i in range(3)]
    assert all(e is not None and e.code == 18 for e in wrong), wrong
    # Throttled: the right password fails too, with the very answer a wrong
    # one gets, so the reply tells nothing.
    locked_at = time.monotonic()
    e = login(t, "victim", VICTIM_PW)
    assert e is not None and e.code == 18
    strip = lambda d: {k: d[k] for k in ("ok", "errmsg", "code", "codeName")}
    assert strip(e.details) == strip(wrong[0].details)
    # Another user, from the same address, still logs in.
    assert login(t, "other", OTHER_PW) is None

    st = t.status()["throttle"]
    assert st["enabled"] is True and st["userFailures"] == 3 and st["windowMillis"] == WINDOW * 1000
    assert st["throttlings"] == {"user": 1, "peer": 0} and st["refused"]["user"] >= 1, st
    assert metric(t, "tierdb_auth_throttled_total", "user") >= 1
    assert metric(t, "tierdb_auth_throttlings_total", "user") == 1
    log = t.read_log()
    assert re.search(r'authentication throttled after repeated failures.*by=user key=admin.victim failures=3 for=3s', log), log[-3000:]
    assert VICTIM_PW not in log and "guess-" not in log

    # One connection hammering wrong passwords: after the allowed failures
    # every attempt is refused before its password is even checked.
    failed_before = t.status()["failed"]
    with rawwire.connect(t) as s:
        for i in range(200):
            bare, first = scram_client_first("victim", base64.b64encode(os.urandom(18)).decode())
            r = sasl_start(s, first)
            if r["ok"] == 1.0:
                r = sasl_continue(s, r["conversationId"], scram_client_final(f"hammer-{i}", bare, bytes(r["payload"]).decode()))
            assert r["ok"] == 0.0 and r["code"] == 18 and r["errmsg"] == "Authentication failed.", r
    assert t.status()["failed"] == failed_before  # no password was checked: all refused

    # The throttling ends after the window (the first one lasts one window).
    time.sleep(max(0.0, locked_at + WINDOW + 0.3 - time.monotonic()))
    assert login(t, "victim", VICTIM_PW) is None
    # ... and the success forgot the failures: two more do not throttle.
    assert login(t, "victim", "guess-again") is not None
    assert login(t, "victim", "guess-again") is not None
    assert login(t, "victim", VICTIM_PW) is None


def test_one_address_spraying_many_users_is_throttled(throttled):
    t = throttled
    # Two wrong passwords each for many (unknown or real) users: no user
    # reaches its limit, but the address does at its 12th failure.
    for i in range(6):
        for _ in range(2):
            assert login(t, f"user{i}", "spray").code == 18
    assert login(t, "other", OTHER_PW).code == 18  # the address is throttled, for every user
    assert metric(t, "tierdb_auth_throttled_total", "peer") >= 1
    assert metric(t, "tierdb_auth_throttlings_total", "peer") == 1
    assert "by=peer key=127.0.0.1" in t.read_log()
    time.sleep(WINDOW + 0.3)
    assert login(t, "other", OTHER_PW) is None
