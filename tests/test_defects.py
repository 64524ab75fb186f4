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
