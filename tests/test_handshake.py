"""Handshake, diagnostics and command dispatch, through pymongo and raw sockets."""
import datetime
import struct
import uuid

import bson
import pytest
from bson.int64 import Int64
from bson.timestamp import Timestamp
from pymongo import ReadPreference
from pymongo.errors import OperationFailure

import rawwire

LIMITS = {"maxBsonObjectSize": 16777216, "maxMessageSizeBytes": 48000000, "maxWriteBatchSize": 100000}


def check_limits(reply):
    for k, v in LIMITS.items():
        assert reply[k] == v, k
    assert reply["maxWireVersion"] >= 17
    assert reply["minWireVersion"] <= reply["maxWireVersion"]
    assert reply["ok"] == 1.0


def test_hello(client):
    r = client.admin.command("hello")
    check_limits(r)
    assert r["isWritablePrimary"] is True
    assert "ismaster" not in r
    assert "helloOk" not in r  # only echoed when asked for
    assert isinstance(r["connectionId"], int)
    # Sessions are only used by drivers when this is present.
    assert r["logicalSessionTimeoutMinutes"] >= 1
    assert isinstance(r["localTime"], datetime.datetime)


def test_connection_ids_differ(server):
    with rawwire.connect(server) as a, rawwire.connect(server) as b:
        ida = rawwire.command(a, {"hello": 1, "$db": "admin"})["connectionId"]
        idb = rawwire.command(b, {"hello": 1, "$db": "admin"})["connectionId"]
        assert ida == rawwire.command(a, {"hello": 1, "$db": "admin"})["connectionId"]
    assert ida != idb


def test_connection_ids_count_connections_not_replies(server):
    """A connection's ID is the next after the last connection's, however
    many replies went out in between (reply IDs have a counter of their own)."""
    with rawwire.connect(server) as a:
        ida = rawwire.command(a, {"hello": 1, "$db": "admin"})["connectionId"]
        for _ in range(20):
            rawwire.command(a, {"ping": 1, "$db": "admin"})
        with rawwire.connect(server) as b:
            idb = rawwire.command(b, {"hello": 1, "$db": "admin"})["connectionId"]
    # Other tests' clients may connect meanwhile, but not 20 of them.
    assert ida < idb < ida + 20, (ida, idb)


def test_client_asking_for_compression_still_works(server):
    c = server.client(compressors="zlib")
    try:
        assert c.admin.command("ping")["ok"] == 1.0
        # tierdb offers no compressor, so none may be agreed on.
        assert c.admin.command({"hello": 1, "compression": ["zlib"]}).get("compression", []) == []
    finally:
        c.close()


def test_hello_ok_is_echoed(client):
    r = client.admin.command({"hello": 1, "helloOk": True})
    assert r["helloOk"] is True


@pytest.mark.parametrize("name", ["isMaster", "ismaster"])
def test_legacy_is_master(client, name):
    r = client.admin.command({name: 1})
    check_limits(r)
    assert r["ismaster"] is True
    assert "isWritablePrimary" not in r


def test_ping(client, db):
    assert client.admin.command("ping") == {"ok": 1.0}
    assert db.command("ping")["ok"] == 1.0


def test_build_info(client):
    r = client.admin.command("buildInfo")
    assert isinstance(r["version"], str)
    va = r["versionArray"]
    assert len(va) == 4 and all(isinstance(x, int) for x in va)
    # versionArray spells the same version as the string.
    assert [int(x) for x in r["version"].split("-")[0].split(".")] == va[:3]
    assert va[0] >= 6  # wire version 17 is MongoDB 6.0
    assert client.admin.command("buildinfo")["version"] == r["version"]


def test_get_parameter_fcv(client):
    r = client.admin.command({"getParameter": 1, "featureCompatibilityVersion": 1})
    fcv = r["featureCompatibilityVersion"]["version"]
    assert fcv.count(".") == 1 and float(fcv) >= 6.0
    every = client.admin.command({"getParameter": "*"})
    assert every["featureCompatibilityVersion"] == r["featureCompatibilityVersion"]


def test_connection_status(client):
    r = client.admin.command("connectionStatus")
    assert r["authInfo"]["authenticatedUsers"] == []
    assert r["authInfo"]["authenticatedUserRoles"] == []


def test_whatsmyuri_is_the_client_address(server):
    with rawwire.connect(server) as s:
        r = rawwire.command(s, {"whatsmyuri": 1, "$db": "admin"})
        host, port = s.getsockname()
    assert r["ok"] == 1.0
    assert r["you"] == f"{host}:{port}"


def test_end_sessions(client):
    ids = [{"id": bson.Binary(uuid.uuid4().bytes, 4)} for _ in range(3)]
    assert client.admin.command("endSessions", ids)["ok"] == 1.0
    # pymongo's own sessions end cleanly too.
    with client.start_session() as s:
        client.admin.command("ping", session=s)


def test_server_status(server, db):
    before = db.client.admin.command("serverStatus")
    assert before["uptime"] >= 0
    assert before["connections"]["current"] >= 1
    db.c.insert_one({"x": 1})
    assert db.c.find_one({"x": 1})["x"] == 1
    after = db.client.admin.command("serverStatus")
    assert after["opcounters"]["insert"] >= before["opcounters"]["insert"] + 1
    assert after["opcounters"]["query"] >= before["opcounters"]["query"] + 1
    assert after["opcounters"]["command"] > before["opcounters"]["command"]
    assert after["uptime"] >= before["uptime"]


def test_server_status_counts_connections(server, client):
    base = client.admin.command("serverStatus")["connections"]["current"]
    socks = [rawwire.connect(server) for _ in range(5)]
    try:
        for s in socks:  # make sure the server has accepted each one
            assert rawwire.command(s, {"ping": 1, "$db": "admin"})["ok"] == 1.0
        now = client.admin.command("serverStatus")["connections"]
        assert now["current"] >= base + 5
        assert now["totalCreated"] >= now["current"]
    finally:
        for s in socks:
            s.close()


def test_host_info(client):
    r = client.admin.command("hostInfo")
    assert r["system"]["numCores"] >= 1
    assert r["system"]["memSizeMB"] > 0
    assert isinstance(r["os"]["type"], str) and r["os"]["type"]


def test_get_cmd_line_opts(client):
    argv = client.admin.command("getCmdLineOpts")["argv"]
    assert all(isinstance(a, str) for a in argv)
    assert "--cursor-timeout" in argv  # how the test bed started it


def test_get_log(client):
    assert "global" in client.admin.command({"getLog": "*"})["names"]
    r = client.admin.command({"getLog": "global"})
    assert isinstance(r["log"], list)
    assert r["totalLinesWritten"] >= len(r["log"])


def test_current_op_lists_itself(client):
    r = client.admin.command("currentOp")
    assert isinstance(r["inprog"], list)
    mine = [op for op in r["inprog"] if "currentOp" in op.get("command", {})]
    assert mine, r["inprog"]
    assert mine[0]["active"] is True


def test_list_commands(client):
    cmds = client.admin.command("listCommands")["commands"]
    for name in ["hello", "isMaster", "ping", "insert", "find", "getMore", "update", "delete",
                 "aggregate", "createIndexes", "listCollections", "serverStatus"]:
        assert name in cmds, name
        assert isinstance(cmds[name]["help"], str)


def test_unknown_command(db):
    with pytest.raises(OperationFailure) as ei:
        db.command("frobnicate")
    assert ei.value.code == 59
    assert ei.value.details["codeName"] == "CommandNotFound"
    assert "frobnicate" in str(ei.value)


def test_session_read_preference_and_cluster_time_are_accepted(client, db):
    with client.start_session() as s:  # pymongo attaches lsid
        db.c.insert_one({"_id": 1}, session=s)
        assert db.c.find_one({"_id": 1}, session=s) == {"_id": 1}
    r = db.command("find", "c", read_preference=ReadPreference.SECONDARY_PREFERRED)
    assert r["cursor"]["firstBatch"] == [{"_id": 1}]


def test_envelope_fields_on_the_wire(server, db):
    db.c.insert_one({"_id": 1})
    cmd = {
        "find": "c",
        "filter": {},
        "$db": db.name,
        "lsid": {"id": bson.Binary(uuid.uuid4().bytes, 4)},
        "$readPreference": {"mode": "secondaryPreferred"},
        "$clusterTime": {"clusterTime": Timestamp(1, 1), "signature": {"hash": bson.Binary(b"\0" * 20), "keyId": Int64(0)}},
    }
    with rawwire.connect(server) as s:
        r = rawwire.command(s, cmd)
    assert r["ok"] == 1.0, r
    assert r["cursor"]["firstBatch"] == [{"_id": 1}]


def test_legacy_op_query_is_master(server):
    with rawwire.connect(server) as s:
        s.sendall(rawwire.op_query("admin.$cmd", {"isMaster": 1}, request_id=4242))
        _, response_to, opcode, doc = rawwire.recv_message(s)
    assert opcode == rawwire.OP_REPLY
    assert response_to == 4242
    assert doc["ismaster"] is True
    check_limits(doc)


def test_op_msg_with_bad_bson_does_not_hang(server, client):
    good = bson.encode({"ping": 1, "$db": "admin"})
    bad = good[:-1] + b"\x07"  # last byte must be the document's NUL terminator
    with rawwire.connect(server, timeout=10) as s:
        s.sendall(rawwire.op_msg(bad, request_id=9))
        try:
            _, response_to, _, reply = rawwire.recv_message(s)
        except ConnectionError:
            reply = None  # closing the connection is an acceptable answer
        if reply is not None:
            assert response_to == 9
            assert reply["ok"] == 0.0
            assert isinstance(reply["code"], int) and reply["code"] != 0
    assert client.admin.command("ping")["ok"] == 1.0


def test_oversized_frame_closes_connection(server, client):
    with rawwire.connect(server, timeout=10) as s:
        s.sendall(struct.pack("<iiii", 48000001 + 1000, 1, 0, rawwire.OP_MSG) + b"\x00" * 64)
        assert rawwire.closed_by_peer(s)
    assert client.admin.command("ping")["ok"] == 1.0


def test_negative_frame_length_closes_connection(server, client):
    with rawwire.connect(server, timeout=10) as s:
        s.sendall(struct.pack("<iiii", -5, 1, 0, rawwire.OP_MSG))
        assert rawwire.closed_by_peer(s)
    assert client.admin.command("ping")["ok"] == 1.0


def test_op_msg_with_valid_checksum(server):
    with rawwire.connect(server) as s:
        s.sendall(rawwire.with_checksum(rawwire.op_msg({"ping": 1, "$db": "admin"}, request_id=31)))
        _, response_to, _, reply = rawwire.recv_message(s)
    assert (response_to, reply["ok"]) == (31, 1.0)


def test_op_msg_with_wrong_checksum_is_refused(server, client):
    with rawwire.connect(server) as s:
        s.sendall(rawwire.with_checksum(rawwire.op_msg({"ping": 1, "$db": "admin"}, request_id=32), corrupt=True))
        try:
            _, _, _, reply = rawwire.recv_message(s)
            assert reply["ok"] == 0.0
        except ConnectionError:
            pass  # closing is fine too; answering ok is not
    assert client.admin.command("ping")["ok"] == 1.0
