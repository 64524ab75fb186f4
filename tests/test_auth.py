"""Authentication, access control and tier privileges, against a real tierdb
with users, driven by pymongo (and by raw SCRAM messages where an attack needs
bytes pymongo would never send)."""
import base64
import hashlib
import hmac
import os
import re
import statistics
import subprocess
import tempfile
import time
import urllib.request
import uuid

import bson
from bson import Int64
import pytest
from pymongo.errors import OperationFailure

import rawwire
from conftest import Tierdb, free_port

ADMIN_PW = "adm-" + uuid.uuid4().hex
BATCH_PW = "batch-" + uuid.uuid4().hex
GOLD_PW = "gold-" + uuid.uuid4().hex
PLAIN_PW = "plain-" + uuid.uuid4().hex


@pytest.fixture(scope="module")
def authsrv(tierdb_bin):
    """A tierdb with an administrator from the environment, some users, and
    a metrics endpoint."""
    mport = free_port()
    t = Tierdb(tierdb_bin, env={"TIERDB_ADMIN_PASSWORD": ADMIN_PW},
               extra_args=["--admin-user", "admin", "--metrics-listen", f"127.0.0.1:{mport}", "--enable-test-commands",
                           # these tests fail passwords on purpose, many times;
                           # throttling has its own (tests/test_operations.py)
                           "--auth-throttle-failures", "0"])
    t.start()
    t.metrics_url = f"http://127.0.0.1:{mport}/metrics"
    admin = t.client(username="admin", password=ADMIN_PW)
    admin.admin.command("createUser", "batch", pwd=BATCH_PW, roles=[{"role": "readWrite", "db": "shop"}], defaultTier="low")
    admin.admin.command("createUser", "gold", pwd=GOLD_PW,
                        roles=[{"role": "readWrite", "db": "shop"}, {"role": "tierHigh", "db": "admin"}])
    admin.admin.command("createUser", "plain", pwd=PLAIN_PW, roles=[{"role": "readWrite", "db": "shop"}])
    admin.admin.command("createUser", "monitor", pwd=PLAIN_PW, roles=[{"role": "clusterMonitor", "db": "admin"}])
    admin.admin.command("createUser", "manager", pwd=PLAIN_PW, roles=[{"role": "clusterManager", "db": "admin"}])
    admin.shop.items.insert_many([{"_id": i} for i in range(5)])
    t.admin = admin
    yield t
    admin.close()
    t.cleanup()


def login(srv, user, pw, **kw):
    kw.setdefault("serverSelectionTimeoutMS", 5000)
    return srv.client(username=user, password=pw, maxPoolSize=1, **kw)


def expect_code(code, fn, *args, **kw):
    with pytest.raises(OperationFailure) as ei:
        fn(*args, **kw)
    assert ei.value.code == code, ei.value.details
    return ei.value


# --- a SCRAM-SHA-256 client, for the raw attacks -------------------------

def scram_client_first(user, nonce):
    bare = f"n={user},r={nonce}"
    return bare, ("n,," + bare).encode()


def scram_client_final(password, bare, server_first, proof_ok=True):
    attrs = dict(kv.split("=", 1) for kv in server_first.split(","))
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), base64.b64decode(attrs["s"]), int(attrs["i"]))
    client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    stored = hashlib.sha256(client_key).digest()
    without_proof = "c=biws,r=" + attrs["r"]
    auth_msg = ",".join([bare, server_first, without_proof]).encode()
    sig = hmac.new(stored, auth_msg, hashlib.sha256).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, sig))
    if not proof_ok:
        proof = bytes([proof[0] ^ 1]) + proof[1:]
    return (without_proof + ",p=" + base64.b64encode(proof).decode()).encode()


def sasl_start(sock, payload, mechanism="SCRAM-SHA-256", db="admin"):
    return rawwire.command(sock, {"saslStart": 1, "mechanism": mechanism, "payload": bson.Binary(payload) if isinstance(payload, bytes) else payload,
                                  "autoAuthorize": 1, "options": {"skipEmptyExchange": True}, "$db": db})


def sasl_continue(sock, conv_id, payload, db="admin"):
    return rawwire.command(sock, {"saslContinue": 1, "conversationId": conv_id, "payload": bson.Binary(payload), "$db": db})


def raw_auth(sock, user, pw):
    """A whole SCRAM-SHA-256 conversation; returns (start reply, final message, final reply)."""
    bare, first = scram_client_first(user, base64.b64encode(os.urandom(18)).decode())
    r1 = sasl_start(sock, first)
    assert r1["ok"] == 1.0, r1
    final = scram_client_final(pw, bare, bytes(r1["payload"]).decode())
    return r1, final, sasl_continue(sock, r1["conversationId"], final)


def authenticated_users(sock):
    return rawwire.command(sock, {"connectionStatus": 1, "$db": "admin"})["authInfo"]["authenticatedUsers"]


# --- logging in ----------------------------------------------------------

@pytest.mark.parametrize("mech", ["SCRAM-SHA-256", "SCRAM-SHA-1"])
def test_login_with_each_mechanism(authsrv, mech):
    c = login(authsrv, "plain", PLAIN_PW, authMechanism=mech)
    st = c.admin.command("connectionStatus")
    assert st["authInfo"]["authenticatedUsers"] == [{"user": "plain", "db": "admin"}]
    assert c.shop.items.count_documents({}) == 5
    c.close()


def test_speculative_authentication(authsrv):
    before = authsrv.admin.admin.command("serverStatus")["security"]["authentication"]["mechanisms"]["SCRAM-SHA-256"]
    c = login(authsrv, "plain", PLAIN_PW)  # pymongo sends speculativeAuthenticate in its hello
    c.admin.command("ping")
    after = authsrv.admin.admin.command("serverStatus")["security"]["authentication"]["mechanisms"]["SCRAM-SHA-256"]
    assert after["speculativeAuthenticate"]["received"] > before["speculativeAuthenticate"]["received"]
    assert after["authenticate"]["successful"] > before["authenticate"]["successful"]
    c.close()
    # The first SCRAM step inside hello, by hand: the reply carries the
    # server-first message, and saslContinue finishes on the same connection.
    with rawwire.connect(authsrv) as s:
        bare, first = scram_client_first("plain", "specnonce")
        hello = rawwire.command(s, {"hello": 1, "saslSupportedMechs": "admin.plain", "$db": "admin",
                                    "speculativeAuthenticate": {"saslStart": 1, "mechanism": "SCRAM-SHA-256",
                                                                "payload": bson.Binary(first), "db": "admin"}})
        assert hello["saslSupportedMechs"] == ["SCRAM-SHA-256", "SCRAM-SHA-1"]
        spec = hello["speculativeAuthenticate"]
        server_first = bytes(spec["payload"]).decode()
        assert server_first.startswith("r=specnonce")
        r = sasl_continue(s, spec["conversationId"], scram_client_final(PLAIN_PW, bare, server_first))
        assert r["ok"] == 1.0 and bytes(r["payload"]).startswith(b"v="), r
        assert authenticated_users(s) == [{"user": "plain", "db": "admin"}]


def test_auth_source(authsrv):
    authsrv.admin.shop.command("createUser", "local", pwd=PLAIN_PW, roles=["read"])
    try:
        c = login(authsrv, "local", PLAIN_PW, authSource="shop")
        assert c.shop.items.count_documents({}) == 5
        expect_code(13, c.shop.items.insert_one, {"x": 1})  # read only
        c.close()
        wrong = login(authsrv, "local", PLAIN_PW, authSource="admin")
        expect_code(18, wrong.shop.items.find_one)
        wrong.close()
    finally:
        authsrv.admin.shop.command("dropUser", "local")


def test_wrong_password_and_unknown_user_look_the_same(authsrv):
    errors = []
    for user, pw in [("plain", "not-the-password"), ("nobody-" + uuid.uuid4().hex[:6], "whatever")]:
        c = login(authsrv, user, pw)
        errors.append(expect_code(18, c.shop.items.find_one).details)
        c.close()
    strip = lambda d: {k: d[k] for k in ("ok", "errmsg", "code", "codeName")}
    assert strip(errors[0]) == strip(errors[1]) and errors[0]["codeName"] == "AuthenticationFailed"

    # Same salt length and iteration count, and similar server time, for
    # both (the client's PBKDF2 is left out of the timing).
    def attempt(user):
        with rawwire.connect(authsrv) as s:
            bare, first = scram_client_first(user, "n" + uuid.uuid4().hex)
            t0 = time.perf_counter()
            r1 = sasl_start(s, first)
            t1 = time.perf_counter()
            final = scram_client_final("wrong", bare, bytes(r1["payload"]).decode())
            t2 = time.perf_counter()
            r2 = sasl_continue(s, r1["conversationId"], final)
            t3 = time.perf_counter()
            assert r2["code"] == 18 and r2["errmsg"] == "Authentication failed."
            attrs = dict(kv.split("=", 1) for kv in bytes(r1["payload"]).decode().split(","))
            return (t1 - t0) + (t3 - t2), len(base64.b64decode(attrs["s"])), attrs["i"]

    # Interleaved, so that load from elsewhere on this shared machine falls
    # on both alike.
    known, unknown = [], []
    for _ in range(15):
        known.append(attempt("plain"))
        unknown.append(attempt("ghost"))
    assert {k[1:] for k in known} == {u[1:] for u in unknown}
    mk, mu = statistics.median(k[0] for k in known), statistics.median(u[0] for u in unknown)
    assert abs(mk - mu) < max(0.5 * max(mk, mu), 0.005), (mk, mu)


def test_unauthenticated_connection_runs_only_handshake_commands(authsrv):
    with rawwire.connect(authsrv) as s:
        for cmd in ({"hello": 1}, {"ping": 1}, {"buildInfo": 1}, {"connectionStatus": 1}):
            assert rawwire.command(s, {**cmd, "$db": "admin"})["ok"] == 1.0, cmd
        for cmd, db in (({"find": "items"}, "shop"), ({"insert": "items", "documents": [{"x": 1}]}, "shop"),
                        ({"listDatabases": 1}, "admin"), ({"setClientPriority": "high"}, "admin"),
                        ({"createUser": "x", "pwd": "y", "roles": []}, "admin"), ({"serverStatus": 1}, "admin")):
            r = rawwire.command(s, {**cmd, "$db": db})
            assert r["ok"] == 0.0 and r["code"] == 13, (cmd, r)
    assert authsrv.admin.shop.items.count_documents({}) == 5


# --- attacks on the SASL exchange ---------------------------------------

@pytest.mark.parametrize("payload", [b"", b"garbage", b"n,,", b"n,,n=plain", b"p=tls-unique,,n=plain,r=x",
                                     b"n,a=admin,n=plain,r=x", b"n,,n=pl\xffain,r=x", b"n,,n=plain,r=x" + b"y" * 5000,
                                     "n,,n=plain,r=str-payload-is-fine-but-truncated"[:9], 12345])
def test_malformed_sasl_start(authsrv, payload):
    with rawwire.connect(authsrv) as s:
        r = sasl_start(s, payload)
        assert r["ok"] == 0.0 and r["code"] in (2, 14), r  # BadValue, or TypeMismatch for a non-binary payload
        assert authenticated_users(s) == []
        assert rawwire.command(s, {"find": "items", "$db": "shop"})["code"] == 13
        assert rawwire.command(s, {"ping": 1, "$db": "admin"})["ok"] == 1.0  # the connection still works


@pytest.mark.parametrize("final", [b"", b"c=biws", b"c=biws,r=", b"c=biws,r=abc,p=", b"c=biws,r=abc,p=!!notbase64",
                                   b"c=biws,r=abc,p=AAAA", b"c=eSws,r={nonce},p=AAAA", b"c=biws,r={nonce}", b"c=biws,r={nonce},p=" + b"A" * 44])
def test_malformed_or_truncated_sasl_continue(authsrv, final):
    with rawwire.connect(authsrv) as s:
        bare, first = scram_client_first("plain", "abc")
        r1 = sasl_start(s, first)
        nonce = bytes(r1["payload"]).decode().split(",")[0][2:]
        r = sasl_continue(s, r1["conversationId"], final.replace(b"{nonce}", nonce.encode()))
        assert r["ok"] == 0.0 and r["code"] in (2, 18), r
        assert authenticated_users(s) == []
        # The conversation is over: even the right final message is refused now.
        good = scram_client_final(PLAIN_PW, bare, bytes(r1["payload"]).decode())
        assert sasl_continue(s, r1["conversationId"], good)["code"] == 17
        assert authenticated_users(s) == []


def test_unknown_mechanism_and_stray_continue(authsrv):
    with rawwire.connect(authsrv) as s:
        r = sasl_start(s, b"n,,n=plain,r=x", mechanism="PLAIN")
        assert r["code"] == 334 and r["codeName"] == "MechanismUnavailable", r
        r = sasl_continue(s, 1, b"c=biws,r=x,p=AAAA")
        assert r["code"] == 17, r


def test_replayed_nonce_and_conversation(authsrv):
    with rawwire.connect(authsrv) as a:
        r1, final, r2 = raw_auth(a, "plain", PLAIN_PW)
        assert r2["ok"] == 1.0 and r2["done"] is True
        assert authenticated_users(a) == [{"user": "plain", "db": "admin"}]
        # The same final message again on the same connection: no conversation.
        assert sasl_continue(a, r1["conversationId"], final)["code"] == 17
    with rawwire.connect(authsrv) as b:
        # A recorded exchange replayed on another connection: the server's
        # nonce is new, so the recorded proof is for another conversation.
        nonce = final.decode().split(",")[1][2:]
        client_nonce = nonce[: len(nonce) - 32]
        r1b = sasl_start(b, ("n,,n=plain,r=" + client_nonce).encode())
        assert not bytes(r1b["payload"]).decode().startswith("r=" + nonce)
        r = sasl_continue(b, r1b["conversationId"], final)
        assert r["code"] == 18, r
        assert authenticated_users(b) == []


def test_wrong_proof_over_raw_scram(authsrv):
    with rawwire.connect(authsrv) as s:
        bare, first = scram_client_first("plain", "xyz")
        r1 = sasl_start(s, first)
        r = sasl_continue(s, r1["conversationId"], scram_client_final(PLAIN_PW, bare, bytes(r1["payload"]).decode(), proof_ok=False))
        assert r["code"] == 18
        assert authenticated_users(s) == []


# --- authorization -------------------------------------------------------

def test_user_cannot_reach_another_database(authsrv):
    authsrv.admin.other.secrets.insert_one({"_id": 1})
    c = login(authsrv, "batch", BATCH_PW)
    expect_code(13, c.other.secrets.find_one)
    expect_code(13, c.other.secrets.insert_one, {"_id": 2})
    expect_code(13, c.other.command, "drop", "secrets")
    expect_code(13, c.list_database_names)
    expect_code(13, c.admin.command, "createUser", "evil", pwd="x", roles=["root"])
    assert c.shop.items.count_documents({}) >= 5
    assert authsrv.admin.other.secrets.count_documents({}) == 1
    c.close()


def test_default_tier_is_applied_at_login(authsrv):
    b = login(authsrv, "batch", BATCH_PW)
    st = b.admin.command("connectionStatus")
    assert st["priority"] == "low" and st["tiers"] == ["low"]
    g = login(authsrv, "gold", GOLD_PW)
    assert g.admin.command("connectionStatus")["priority"] == "normal"
    assert g.admin.command("setClientPriority", "high")["priority"] == "high"
    assert g.shop.command("find", "items", filter={})["ok"] == 1.0
    assert g.admin.command("qosStatus")["caller"]["priority"] == "high"
    b.close()
    g.close()


def test_batch_user_claiming_high_per_session_is_refused(authsrv):
    b = login(authsrv, "batch", BATCH_PW)
    for tier in ("high", "normal"):
        e = expect_code(13, b.admin.command, "setClientPriority", tier)
        assert e.details["codeName"] == "Unauthorized"
        assert b.admin.command("connectionStatus")["priority"] == "low"
        assert b.admin.command("qosStatus")["caller"]["priority"] == "low"
    assert b.admin.command("setClientPriority", "low")["priority"] == "low"
    b.close()


def test_batch_user_claiming_high_per_request_is_refused(authsrv):
    def high_ops():
        users = {u["user"]: u for u in authsrv.admin.admin.command("qosStatus")["users"]}
        return users.get("admin.batch", {"ops": {"high": 0}})["ops"]["high"]

    b = login(authsrv, "batch", BATCH_PW)
    before = high_ops()
    expect_code(13, b.shop.command, "find", "items", filter={}, priority="high")
    expect_code(13, b.shop.command, "insert", "items", documents=[{"_id": "x"}], priority="normal")
    assert b.shop.items.find_one({"_id": "x"}) is None
    assert b.admin.command("connectionStatus")["priority"] == "low"
    assert high_ops() == before
    assert b.shop.command("find", "items", filter={}, priority="low")["ok"] == 1.0
    b.close()


def test_non_admin_cannot_change_qos(authsrv):
    def threshold():
        return authsrv.admin.admin.command("qosStatus")["threshold"]

    start = threshold()
    for user in ("batch", "monitor", "plain"):
        pw = BATCH_PW if user == "batch" else PLAIN_PW
        c = login(authsrv, user, pw)
        expect_code(13, c.admin.command, "setQoSConfig", threshold=start + 4)
        expect_code(13, c.admin.command, "setCpuPools", {})
        c.close()
    assert threshold() == start
    m = login(authsrv, "manager", PLAIN_PW)
    assert m.admin.command("setQoSConfig", threshold=start + 1)["threshold"] == start + 1
    assert m.admin.command("setQoSConfig", threshold=start)["threshold"] == start
    m.close()


def test_qos_status_shows_others_only_to_monitors(authsrv):
    b = login(authsrv, "batch", BATCH_PW)
    st = b.admin.command("qosStatus")
    assert set(st) == {"enabled", "caller", "ok"} and st["caller"]["user"] == "admin.batch"
    mon = login(authsrv, "monitor", PLAIN_PW)
    assert "users" in mon.admin.command("qosStatus")
    b.close()
    mon.close()


def test_per_user_accounting(authsrv):
    b = login(authsrv, "batch", BATCH_PW)
    for _ in range(3):
        b.shop.items.find_one()
    users = {u["user"]: u for u in authsrv.admin.admin.command("qosStatus")["users"]}
    assert users["admin.batch"]["ops"]["low"] >= 3 and users["admin.batch"]["ops"]["high"] == 0
    assert "waitMicros" in users["admin.batch"] and users["admin.batch"]["defaultTier"] == "low"
    text = urllib.request.urlopen(authsrv.metrics_url, timeout=10).read().decode()
    m = re.search(r'tierdb_user_operations_total\{tier="low",user="admin.batch"\} (\d+)', text)
    assert m and int(m.group(1)) >= 3, text[-2000:]
    assert 'tierdb_user_admission_wait_seconds_total{user="admin.batch"}' in text
    b.close()


def test_failed_authentications_counted_and_password_not_logged(authsrv):
    def failed():
        return authsrv.admin.admin.command("serverStatus")["security"]["authentication"]["failed"]

    secret = "leak-" + uuid.uuid4().hex
    before = failed()
    c = login(authsrv, "plain", secret)
    expect_code(18, c.shop.items.find_one)
    c.close()
    assert failed() >= before + 1
    text = urllib.request.urlopen(authsrv.metrics_url, timeout=10).read().decode()
    assert re.search(r'tierdb_auth_failures_total\{mechanism="SCRAM-SHA-256"\} [1-9]', text)
    log = authsrv.read_log()
    assert "authentication failed" in log and 'user=plain' in log
    for pw in (secret, ADMIN_PW, BATCH_PW, GOLD_PW, PLAIN_PW):
        assert pw not in log


def test_dropped_user_loses_access_at_once(authsrv):
    authsrv.admin.admin.command("createUser", "temp", pwd=PLAIN_PW, roles=[{"role": "read", "db": "shop"}])
    c = login(authsrv, "temp", PLAIN_PW)
    assert c.shop.items.find_one() is not None
    authsrv.admin.admin.command("revokeRolesFromUser", "temp", roles=[{"role": "read", "db": "shop"}])
    expect_code(13, c.shop.items.find_one)
    authsrv.admin.admin.command("dropUser", "temp")
    expect_code(13, c.shop.items.find_one)
    c.close()


# --- user and role commands ----------------------------------------------

def test_user_and_role_commands_round_trip(authsrv):
    a = authsrv.admin.admin
    shop = authsrv.admin.shop
    shop.command("createRole", "ordersReader", privileges=[{"resource": {"db": "shop", "collection": "orders"}, "actions": ["find"]}], roles=[])
    a.command("createRole", "goldTier", privileges=[{"resource": {"cluster": True}, "actions": ["useTierHigh"]}], roles=[])
    shop.command("createUser", "clerk", pwd="pw1", roles=["ordersReader"], customData={"team": "a"})

    info = shop.command("usersInfo", "clerk")["users"][0]
    assert info["user"] == "clerk" and info["roles"] == [{"role": "ordersReader", "db": "shop"}]
    assert info["customData"] == {"team": "a"} and "credentials" not in info and info["tiers"] == ["normal", "low"]
    roles = shop.command("rolesInfo", "ordersReader", showPrivileges=True)["roles"]
    assert roles[0]["privileges"] == [{"resource": {"db": "shop", "collection": "orders"}, "actions": ["find"]}]
    assert any(r["role"] == "readWrite" for r in shop.command("rolesInfo", 1, showBuiltinRoles=True)["roles"])

    shop.orders.insert_one({"_id": 1})
    c = login(authsrv, "clerk", "pw1", authSource="shop")
    assert c.shop.orders.find_one() == {"_id": 1}
    expect_code(13, c.shop.items.find_one)
    expect_code(13, c.admin.command, "setClientPriority", "high")

    shop.command("grantRolesToUser", "clerk", roles=[{"role": "goldTier", "db": "admin"}])
    assert c.admin.command("setClientPriority", "high")["priority"] == "high"
    shop.command("revokeRolesFromUser", "clerk", roles=[{"role": "goldTier", "db": "admin"}])
    # Losing the tier privilege takes the session back to a tier it may use.
    assert c.admin.command("connectionStatus")["priority"] == "normal"

    shop.command("grantPrivilegesToRole", "ordersReader", privileges=[{"resource": {"db": "shop", "collection": "items"}, "actions": ["find"]}])
    assert c.shop.items.find_one() is not None
    shop.command("revokePrivilegesFromRole", "ordersReader", privileges=[{"resource": {"db": "shop", "collection": "items"}, "actions": ["find"]}])
    expect_code(13, c.shop.items.find_one)
    shop.command("updateRole", "ordersReader", privileges=[], roles=["read"])
    assert c.shop.items.find_one() is not None

    shop.command("updateUser", "clerk", pwd="pw2")
    c.close()
    old = login(authsrv, "clerk", "pw1", authSource="shop")
    expect_code(18, old.shop.orders.find_one)
    old.close()
    new = login(authsrv, "clerk", "pw2", authSource="shop")
    assert new.shop.orders.find_one() == {"_id": 1}

    # Errors: duplicates, missing users and roles, bad actions.
    assert expect_code(51003, shop.command, "createUser", "clerk", pwd="x", roles=[]).details["codeName"] == "Location51003"
    expect_code(51002, shop.command, "createRole", "ordersReader", privileges=[], roles=[])
    expect_code(31, shop.command, "grantRolesToUser", "clerk", roles=["noSuchRole"])
    expect_code(31, shop.command, "createUser", "x2", pwd="x", roles=["noSuchRole"])
    expect_code(11, shop.command, "updateUser", "ghost", pwd="x")
    expect_code(2, shop.command, "createRole", "bad", privileges=[{"resource": {"db": "shop", "collection": ""}, "actions": ["fly"]}], roles=[])
    expect_code(2, shop.command, "createRole", "bad", privileges=[{"resource": {"db": "other", "collection": ""}, "actions": ["find"]}], roles=[])
    expect_code(2, shop.command, "updateRole", "read", privileges=[])

    # Dropping the role takes it away from its holder at once.
    shop.command("dropRole", "ordersReader")
    expect_code(13, new.shop.orders.find_one)
    assert shop.command("usersInfo", "clerk")["users"][0]["roles"] == []
    expect_code(31, shop.command, "dropRole", "ordersReader")
    new.close()
    shop.command("dropUser", "clerk")
    expect_code(11, shop.command, "dropUser", "clerk")
    a.command("dropRole", "goldTier")
    assert shop.command("usersInfo", "clerk")["users"] == []


def test_user_admin_of_one_database_stays_in_it(authsrv):
    authsrv.admin.shop.command("createUser", "shopadmin", pwd=PLAIN_PW, roles=["userAdmin"])
    try:
        c = login(authsrv, "shopadmin", PLAIN_PW, authSource="shop")
        c.shop.command("createUser", "helper", pwd="x", roles=["read"])
        expect_code(13, c.shop.command, "createUser", "evil", pwd="x", roles=[{"role": "root", "db": "admin"}])
        expect_code(13, c.shop.command, "createUser", "evil", pwd="x", roles=["read"], defaultTier="high")
        expect_code(13, c.admin.command, "createUser", "evil", pwd="x", roles=[])
        expect_code(13, c.shop.items.find_one)  # userAdmin does not read data
        c.shop.command("dropUser", "helper")
        c.close()
    finally:
        authsrv.admin.shop.command("dropUser", "shopadmin")


# --- secure by default: who may connect before users exist -----------------

def test_refuses_non_loopback_listen_without_users(tierdb_bin):
    data = tempfile_dir()
    try:
        p = subprocess.run([tierdb_bin, "serve", "--listen", f"0.0.0.0:{free_port()}", "--data-dir", data],
                           capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
        out = (p.stdout + p.stderr).decode()
        assert p.returncode != 0, out
        assert "refusing to listen on 0.0.0.0" in out and "TIERDB_ADMIN_PASSWORD" in out and "--auth" in out
        assert "tierdb is ready" not in out
    finally:
        subprocess.run(["rm", "-rf", data])


def tempfile_dir():
    return tempfile.mkdtemp(prefix="tierdb-test-", dir="/tmp")


def test_non_loopback_listen_with_an_admin_requires_auth(new_server):
    t = new_server(env={"TIERDB_ADMIN_PASSWORD": ADMIN_PW}, listen_host="0.0.0.0", extra_args=["--admin-user", "root"]).start()
    with rawwire.connect(t) as s:
        assert rawwire.command(s, {"find": "x", "$db": "test"})["code"] == 13
    c = t.client(username="root", password=ADMIN_PW)
    # Dropping the last user does not open a server listening beyond loopback.
    c.admin.command("createUser", "other", pwd="x", roles=["root"])
    o = t.client(username="other", password="x")
    o.admin.command("dropUser", "root")
    o.admin.command("dropUser", "other")
    with rawwire.connect(t) as s:
        assert rawwire.command(s, {"find": "x", "$db": "test"})["code"] == 13


def test_no_users_on_loopback_is_open_until_the_first_user(new_server):
    t = new_server().start()
    c = t.client()
    c.test.x.insert_one({"_id": 1})  # no users yet: open, on loopback
    assert c.admin.command("connectionStatus")["tiers"] == ["high", "normal", "low"]
    assert "access control is off" in t.read_log()
    c.admin.command("createUser", "first", pwd=PLAIN_PW, roles=["root"])
    fresh = t.client()
    expect_code(13, fresh.test.x.find_one)
    a = t.client(username="first", password=PLAIN_PW)
    assert a.test.x.find_one() == {"_id": 1}
    # and after a restart it stays closed
    t.stop()
    t.start()
    expect_code(13, t.client().test.x.find_one)
    assert t.client(username="first", password=PLAIN_PW).test.x.find_one() == {"_id": 1}


def test_auth_flag_with_localhost_exception(new_server):
    t = new_server(extra_args=["--auth"]).start()
    c = t.client()
    expect_code(13, c.test.x.find_one)
    expect_code(13, c.test.command, "createUser", "u", pwd="x", roles=[])  # first user only in admin
    c.admin.command("createUser", "boss", pwd=PLAIN_PW, roles=["root"])
    expect_code(13, c.admin.command, "createUser", "second", pwd="x", roles=[])  # the exception is over
    assert t.client(username="boss", password=PLAIN_PW).test.x.count_documents({}) == 0


def test_admin_user_needs_a_password(tierdb_bin):
    data = tempfile_dir()
    try:
        env = {k: v for k, v in os.environ.items() if k != "TIERDB_ADMIN_PASSWORD"}
        p = subprocess.run([tierdb_bin, "serve", "--listen", f"127.0.0.1:{free_port()}", "--data-dir", data, "--admin-user", "a"],
                           capture_output=True, timeout=120, stdin=subprocess.DEVNULL, env=env)
        out = (p.stdout + p.stderr).decode()
        assert p.returncode != 0 and "TIERDB_ADMIN_PASSWORD" in out, out
    finally:
        subprocess.run(["rm", "-rf", data])


def test_sha1_only_user_is_negotiated_by_the_driver(authsrv):
    authsrv.admin.admin.command("createUser", "old", pwd=PLAIN_PW, roles=[{"role": "read", "db": "shop"}], mechanisms=["SCRAM-SHA-1"])
    try:
        with rawwire.connect(authsrv) as s:
            hello = rawwire.command(s, {"hello": 1, "saslSupportedMechs": "admin.old", "$db": "admin"})
            assert hello["saslSupportedMechs"] == ["SCRAM-SHA-1"]
        c = login(authsrv, "old", PLAIN_PW)  # no mechanism given: the driver picks SCRAM-SHA-1
        assert c.shop.items.count_documents({}) >= 5
        c.close()
        forced = login(authsrv, "old", PLAIN_PW, authMechanism="SCRAM-SHA-256")
        expect_code(18, forced.shop.items.find_one)
        forced.close()
    finally:
        authsrv.admin.admin.command("dropUser", "old")


def test_admin_password_in_argv_is_warned_about_and_hidden(new_server):
    secret = "argv-" + uuid.uuid4().hex
    t = new_server(extra_args=["--admin-user", "boss", "--admin-password", secret]).start()
    c = t.client(username="boss", password=secret)
    argv = c.admin.command("getCmdLineOpts")["argv"]
    assert secret not in argv and "<redacted>" in argv
    log = t.read_log()
    assert "--admin-password is visible" in log and secret not in log


def test_sha256_passwords_are_saslprepped(authsrv):
    # U+2168 (ROMAN NUMERAL NINE) is "IX" after SASLprep; U+00AD (soft
    # hyphen) maps to nothing. Both sides prepare the password, so either
    # spelling logs in with SCRAM-SHA-256.
    authsrv.admin.admin.command("createUser", "prep", pwd="\u2168-pen\u00adcil", roles=[{"role": "read", "db": "shop"}])
    try:
        for pw in ("\u2168-pen\u00adcil", "IX-pencil"):
            c = login(authsrv, "prep", pw, authMechanism="SCRAM-SHA-256")
            assert c.shop.items.find_one() is not None
            c.close()
    finally:
        authsrv.admin.admin.command("dropUser", "prep")


def test_cursors_belong_to_their_user(authsrv):
    gold = login(authsrv, "gold", GOLD_PW)
    plain = login(authsrv, "plain", PLAIN_PW)
    try:
        cid = gold.shop.command("find", "items", batchSize=1)["cursor"]["id"]
        assert cid
        # Another user with the same rights on the collection can neither
        # continue nor kill the cursor.
        expect_code(13, plain.shop.command, "getMore", Int64(cid), collection="items")
        r = plain.shop.command("killCursors", "items", cursors=[Int64(cid)])
        assert r["cursorsKilled"] == [] and r["cursorsNotFound"] == [cid]
        assert gold.shop.command("getMore", Int64(cid), collection="items", batchSize=10)["cursor"]["nextBatch"]
    finally:
        gold.close()
        plain.close()
