"""Defects found under hostile and large input (issue 12), through pymongo."""
import bson
import pytest
from bson.decimal128 import Decimal128
from bson.raw_bson import RawBSONDocument
from pymongo.errors import OperationFailure

import rawwire


def test_iterating_160000_small_documents_gets_them_all(db):
    # Small documents: the batch array's per-element overhead (type byte,
    # decimal index key) is a large part of each reply.
    pad = "x" * 80
    for start in range(0, 160_000, 20_000):
        db.small.insert_many([{"_id": i, "s": pad} for i in range(start, start + 20_000)])
    n, last = 0, -1
    for d in db.small.find().batch_size(0):
        assert d["_id"] > last
        last = d["_id"]
        n += 1
    assert n == 160_000


def test_a_document_with_two_ids_is_refused(server, db):
    body = bson.encode({"_id": 1, "a": 1})[4:-1] + b"\x10_id\x00" + (2).to_bytes(4, "little")  # a second _id
    doc = (len(body) + 5).to_bytes(4, "little") + body + b"\x00"
    s = rawwire.connect(server)
    try:
        reply = rawwire.command(s, {"insert": "two", "$db": db.name}, sequences=[("documents", [doc])])
    finally:
        s.close()
    assert reply["ok"] == 1 and reply["n"] == 0
    assert reply["writeErrors"][0]["code"] == 2
    assert db.two.count_documents({}) == 0


def test_sum_and_avg_count_decimals_exactly(db):
    db.dec.insert_many([{"g": 1, "v": Decimal128("0.1")} for _ in range(10)] +
                       [{"g": 2, "v": 1}, {"g": 2, "v": Decimal128("2.5")}, {"g": 3, "v": 1}, {"g": 3, "v": 2}])
    got = {d["_id"]: d for d in db.dec.aggregate([{"$group": {"_id": "$g", "s": {"$sum": "$v"}, "a": {"$avg": "$v"}}}])}
    assert got[1]["s"] == Decimal128("1.0")          # exact: a double would give 0.9999999999999999
    assert got[1]["a"].to_decimal() == Decimal128("0.1").to_decimal()
    assert got[2]["s"] == Decimal128("3.5") and got[2]["a"] == Decimal128("1.75")
    assert got[3]["s"] == 3 and got[3]["a"] == 1.5   # no decimal: int and double as before
    assert db.dec.count_documents({}) == 14
