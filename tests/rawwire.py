"""Hand-built MongoDB wire messages, for tests that must bypass pymongo.

pymongo validates names and sizes and frames messages correctly; these helpers
let a test send exactly the bytes it wants (legacy opcodes, bad BSON, huge
declared lengths, database names pymongo refuses) and read the raw reply.
Every socket has a timeout, so a server that never answers fails the test
instead of hanging it.
"""
import socket
import struct

import bson

OP_REPLY = 1
OP_QUERY = 2004
OP_MSG = 2013

HEADER = struct.Struct("<iiii")  # messageLength, requestID, responseTo, opCode


def connect(server, timeout=10.0):
    s = socket.create_connection(("127.0.0.1", server.port), timeout=timeout)
    s.settimeout(timeout)
    return s


def frame(request_id, opcode, body):
    return HEADER.pack(HEADER.size + len(body), request_id, 0, opcode) + body


def op_msg(doc, request_id=1, flags=0, sequences=()):
    """An OP_MSG with body `doc` (a dict or already-encoded bytes) and optional
    kind-1 document sequences given as (identifier, [docs]) pairs."""
    body = doc if isinstance(doc, (bytes, bytearray)) else bson.encode(doc)
    out = struct.pack("<I", flags) + b"\x00" + body
    for ident, docs in sequences:
        payload = ident.encode() + b"\x00" + b"".join(d if isinstance(d, (bytes, bytearray)) else bson.encode(d) for d in docs)
        out += b"\x01" + struct.pack("<i", 4 + len(payload)) + payload
    return frame(request_id, OP_MSG, out)


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC32C = _crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC32C[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def with_checksum(message, corrupt=False):
    """Set checksumPresent on an OP_MSG built by op_msg and append its CRC-32C."""
    flags = struct.unpack_from("<I", message, HEADER.size)[0] | 1
    length, request_id, response_to, opcode = HEADER.unpack_from(message)
    body = struct.pack("<I", flags) + message[HEADER.size + 4:]
    out = HEADER.pack(length + 4, request_id, response_to, opcode) + body
    crc = crc32c(out) ^ (1 if corrupt else 0)
    return out + struct.pack("<I", crc)


def op_query(ns, doc, request_id=1):
    body = struct.pack("<i", 0) + ns.encode() + b"\x00" + struct.pack("<ii", 0, -1) + bson.encode(doc)
    return frame(request_id, OP_QUERY, body)


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError(f"connection closed after {len(buf)} of {n} bytes")
        buf += chunk
    return buf


def recv_message(sock):
    """Read one reply; returns (requestID, responseTo, opCode, first document)."""
    length, request_id, response_to, opcode = HEADER.unpack(recv_exact(sock, HEADER.size))
    body = recv_exact(sock, length - HEADER.size)
    if opcode == OP_MSG:
        flags = struct.unpack_from("<I", body)[0]
        assert body[4] == 0, "reply's first section must be a kind-0 body"
        doc_len = struct.unpack_from("<i", body, 5)[0]
        doc = bson.decode(body[5:5 + doc_len])
        assert flags & 1 == 0 or len(body) >= 5 + doc_len + 4, "checksum flag without a checksum"
    elif opcode == OP_REPLY:
        _flags, _cursor_id, _start, n = struct.unpack_from("<iqii", body)
        assert n == 1, f"OP_REPLY to a command must carry 1 document, got {n}"
        doc = bson.decode(body[20:])
    else:
        raise AssertionError(f"unexpected reply opcode {opcode}")
    return request_id, response_to, opcode, doc


def command(sock, doc, request_id=7, **kw):
    """Send an OP_MSG command and return its reply document."""
    sock.sendall(op_msg(doc, request_id=request_id, **kw))
    _, response_to, opcode, reply = recv_message(sock)
    assert opcode == OP_MSG
    assert response_to == request_id
    return reply


def closed_by_peer(sock):
    """True when the server closed the connection: recv returns EOF or a reset.
    A socket timeout propagates, so a hang fails the caller."""
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
