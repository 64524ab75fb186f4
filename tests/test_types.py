"""BSON types round-trip byte for byte; the 16 MiB limit; what _id may be."""
import datetime
import struct
import uuid

import bson
import pytest
from bson import SON, Binary, Code, DBRef, Decimal128, ObjectId, Regex, Timestamp
from bson.codec_options import CodecOptions
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.raw_bson import RawBSONDocument
from pymongo.errors import DocumentTooLarge, DuplicateKeyError, WriteError

import rawwire

MAX_BSON = 16 * 1024 * 1024
SON_OPTS = CodecOptions(document_class=SON)
RAW_OPTS = CodecOptions(document_class=RawBSONDocument)


def roundtrip(db, doc):
    """Insert doc's exact bytes and return the bytes found by its _id."""
    raw = bson.encode(doc)
    db.t.insert_one(RawBSONDocument(raw))
    got = db.get_collection("t", codec_options=RAW_OPTS).find_one({"_id": doc["_id"]})
    assert got is not None
    return raw, got.raw


def every_type():
    return SON([
        ("_id", 1),
        ("int32", 42),
        ("int32_min", -2**31),
        ("int64", Int64(42)),
        ("int64_big", 2**62),
        ("double", 42.0),
        ("neg_zero", -0.0),
        ("nan", float("nan")),
        ("inf", float("-inf")),
        ("dec", Decimal128("42.000")),
        ("dec_nan", Decimal128("NaN")),
        ("dec_neg_zero", Decimal128("-0")),
        ("dec_big", Decimal128("1.234567890123456789012345678901234E+6000")),
        ("date", datetime.datetime(2024, 2, 29, 13, 14, 15, 678000)),
        ("date_pre_epoch", datetime.datetime(1901, 1, 1)),
        ("oid", ObjectId("65f0c0ffee00000000000001")),
        *[(f"bin{st}", Binary(bytes(range(st % 7, st % 7 + 16)), st)) for st in (0, 1, 2, 3, 4, 5, 6, 7, 0x80)],
        ("regex", Regex("^a.c$", "imsx")),
        ("regex_plain", Regex("x", "")),
        ("ts", Timestamp(1700000000, 7)),
        ("code", Code("function () { return 1; }")),
        ("code_scope", Code("function () { return y; }", {"y": 1, "z": [1, "two"]})),
        ("min", MinKey()),
        ("max", MaxKey()),
        ("null", None),
        ("t", True),
        ("f", False),
        ("nested", SON([("z", 1), ("a", SON([("deep", [1, [2, [3, SON([("k", "v")])]]])]))])),
        ("array", [1, "two", 3.0, None, SON([("x", 1)]), [], {}]),
        ("unicode", "zażółć gęślą jaźń — 日本語 — 🦀 — e\u0301"),
        ("nul_free_ascii", "plain"),
        ("empty_str", ""),
        ("empty_arr", []),
        ("empty_doc", {}),
        ("dbref", DBRef("other", 5, "somedb")),
        ("", "empty key"),
    ])


def test_every_type_round_trips_byte_exact(db):
    raw, got = roundtrip(db, every_type())
    assert got == raw


def test_every_type_decodes_to_same_types(db):
    doc = every_type()
    db.t.insert_one(doc)
    got = db.get_collection("t", codec_options=SON_OPTS).find_one({"_id": 1})
    assert list(got.keys()) == list(doc.keys())  # field order preserved
    expected = bson.decode(bson.encode(doc), SON_OPTS)
    for k in doc:
        a, b = got[k], expected[k]
        assert type(a) is type(b), k
        if k not in ("nan",):
            assert a == b, k


def test_numeric_types_stay_distinct(db):
    db.t.insert_one({"_id": 1, "i": 1, "l": Int64(1), "d": 1.0, "m": Decimal128("1")})
    got = db.t.find_one()
    assert type(got["i"]) is int
    assert type(got["l"]) is Int64
    assert type(got["d"]) is float
    assert type(got["m"]) is Decimal128 and str(got["m"]) == "1"


def test_datetime_has_millisecond_precision(db):
    db.t.insert_one({"_id": 1, "d": datetime.datetime(2020, 5, 17, 1, 2, 3, 456789)})
    assert db.t.find_one()["d"] == datetime.datetime(2020, 5, 17, 1, 2, 3, 456000)


def test_uuid_subtype_4(db):
    u = uuid.uuid4()
    db.t.insert_one({"_id": 1, "u": Binary.from_uuid(u)})
    got = db.t.find_one()["u"]
    assert got.subtype == 4 and got.as_uuid() == u
    assert db.t.find_one({"u": Binary.from_uuid(u)})["_id"] == 1


def test_deprecated_types_round_trip(db):
    # undefined (0x06), DBPointer (0x0C) and symbol (0x0E) cannot be built with
    # pymongo's encoder, so write the element bytes by hand.
    def elem(t, name, payload):
        return bytes([t]) + name.encode() + b"\x00" + payload

    def string(s):
        b = s.encode() + b"\x00"
        return struct.pack("<i", len(b)) + b

    body = (elem(0x10, "_id", struct.pack("<i", 77))
            + elem(0x06, "undef", b"")
            + elem(0x0C, "ptr", string("db.coll") + bytes.fromhex("65f0c0ffee00000000000002"))
            + elem(0x0E, "sym", string("a symbol")))
    raw = struct.pack("<i", len(body) + 5) + body + b"\x00"
    db.t.insert_one(RawBSONDocument(raw))
    got = db.get_collection("t", codec_options=RAW_OPTS).find_one({"_id": 77})
    assert got.raw == raw


def test_keys_with_dots_and_dollars_in_nested_documents(db):
    doc = SON([("_id", 1), ("n", SON([("a.b", 1), ("$c", 2)]))])
    raw, got = roundtrip(db, doc)
    assert got == raw


def test_deeply_nested_document(db):
    doc = {"_id": 1}
    inner = doc
    for i in range(90):  # MongoDB allows 100 levels
        inner["d"] = {"i": i}
        inner = inner["d"]
    raw, got = roundtrip(db, doc)
    assert got == raw


# --- the 16 MiB limit ----------------------------------------------------------------

def sized_doc(size, _id):
    base = len(bson.encode({"_id": _id, "b": Binary(b"")}))
    doc = {"_id": _id, "b": Binary(b"x" * (size - base))}
    assert len(bson.encode(doc)) == size
    return doc


def test_document_of_exactly_16_mib_is_accepted(db):
    db.t.insert_one(sized_doc(MAX_BSON, 1))
    got = db.get_collection("t", codec_options=RAW_OPTS).find_one({"_id": 1})
    assert len(got.raw) == MAX_BSON


def test_document_over_16_mib_is_refused_by_the_server(db):
    """pymongo leaves a document slightly over the limit to the server, which
    answers with a write error. MongoDB's insert path uses BadValue ("object to
    insert too large"); BSONObjectTooLarge names the same rule."""
    with pytest.raises(WriteError) as ei:
        db.t.insert_one(sized_doc(MAX_BSON + 1, 1))
    assert ei.value.code in (2, 10334)
    assert "too large" in str(ei.value)
    assert db.t.find_one({"_id": 1}) is None


def test_document_far_over_16_mib_is_refused_by_pymongo(db):
    with pytest.raises(DocumentTooLarge):
        db.t.insert_one(sized_doc(MAX_BSON + 64 * 1024, 1))
    assert db.t.find_one({"_id": 1}) is None


def test_document_over_16_mib_in_a_raw_batch(server, db):
    """A batch whose second document is too large: the first is stored, the
    second refused with its index, the third (unordered) stored."""
    docs = [{"_id": 0}, sized_doc(MAX_BSON + 1, 1), {"_id": 2}]
    with rawwire.connect(server, timeout=60) as s:
        r = rawwire.command(s, {"insert": "t", "ordered": False, "$db": db.name}, sequences=[("documents", docs)])
    assert r["ok"] == 1.0
    assert r["n"] == 2
    assert [(e["index"], e["code"] in (2, 10334)) for e in r["writeErrors"]] == [(1, True)]
    assert sorted(d["_id"] for d in db.t.find({}, {"_id": 1})) == [0, 2]


def test_update_cannot_grow_document_past_16_mib(db):
    db.t.insert_one(sized_doc(MAX_BSON - 100, 1))
    with pytest.raises(WriteError) as ei:
        db.t.update_one({"_id": 1}, {"$set": {"more": "y" * 200}})
    assert ei.value.code in (10334, 17419)  # BSONObjectTooLarge; 17419 in older servers
    assert "more" not in db.t.find_one({"_id": 1}, {"b": 0})


# --- _id ---------------------------------------------------------------------------------

def test_array_id_is_invalid(db):
    with pytest.raises(WriteError) as ei:
        db.t.insert_one({"_id": [1, 2]})
    assert ei.value.code == 53  # InvalidIdField
    assert db.t.count_documents({}) == 0


ID_VALUES = [
    42, Int64(2**40), 2.5, Decimal128("9.75"), "text", "", ObjectId(),
    SON([("a", 1), ("b", 2)]), {}, True, None, datetime.datetime(2001, 2, 3),
    Binary(b"\x00\x01", 0), Binary(uuid.uuid4().bytes, 4), Timestamp(5, 6),
    MinKey(), MaxKey(), Code("x"),
]


@pytest.mark.parametrize("value", ID_VALUES, ids=lambda v: type(v).__name__)
def test_id_of_any_other_type(db, value):
    raw, got = roundtrip(db, SON([("_id", value), ("x", 1)]))
    assert got == raw
    with pytest.raises(DuplicateKeyError):
        db.t.insert_one(SON([("_id", value), ("x", 2)]))


def test_document_ids_depend_on_field_order(db):
    db.t.insert_one({"_id": SON([("a", 1), ("b", 2)]), "n": 1})
    db.t.insert_one({"_id": SON([("b", 2), ("a", 1)]), "n": 2})
    assert db.t.find_one({"_id": SON([("b", 2), ("a", 1)])})["n"] == 2


def test_numeric_ids_compare_by_value(db):
    db.t.insert_one({"_id": 1})
    for same in (1.0, Int64(1), Decimal128("1.00")):
        with pytest.raises(DuplicateKeyError):
            db.t.insert_one({"_id": same})
    assert type(db.t.find_one({"_id": 1.0})["_id"]) is int
