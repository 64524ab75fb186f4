"""Many client connections share a small, bounded set of PostgreSQL backends."""
import socket
import struct

import bson


def _op_msg(request_id, doc):
    body = bson.encode(doc)
    payload = struct.pack("<I", 0) + b"\x00" + body
    return struct.pack("<iiii", 16 + len(payload), request_id, 0, 2013) + payload


def _read_reply(sock):
    header = b""
    while len(header) < 16:
        chunk = sock.recv(16 - len(header))
        assert chunk, "server closed the connection"
        header += chunk
    length, _, _, opcode = struct.unpack("<iiii", header)
    rest = b""
    while len(rest) < length - 16:
        chunk = sock.recv(length - 16 - len(rest))
        assert chunk, "server closed the connection"
        rest += chunk
    assert opcode == 2013
    return bson.decode(rest[5:])


def test_5000_connections_use_few_backends(server, db):
    db.items.insert_many([{"_id": i, "v": i} for i in range(100)])
    socks = []
    try:
        for i in range(5000):
            s = socket.create_connection(("127.0.0.1", server.port), timeout=30)
            socks.append(s)
        # Every connection runs a real query, all of them in flight together.
        for i, s in enumerate(socks):
            s.sendall(_op_msg(i + 1, {"find": "items", "filter": {"_id": i % 100}, "$db": db.name}))
        for i, s in enumerate(socks):
            reply = _read_reply(s)
            assert reply["ok"] == 1.0
            assert reply["cursor"]["firstBatch"] == [{"_id": i % 100, "v": i % 100}]
        status = db.client.admin.command("serverStatus")
        assert status["connections"]["current"] >= 5000
        backends = status["tierdb"]["backends"]
        total = sum(t["open"] for t in backends.values())
        assert 1 <= total <= 3 * 8, backends
    finally:
        for s in socks:
            s.close()
