"""Index-backed sorts: a sort an index serves walks the index's key column in
PostgreSQL (explain shows the index scan) and returns exactly what tierdb's
in-memory sort returns on the same documents without indexes, over mixed
BSON types, missing fields, nulls and arrays, both directions, compound
indexes, with skip, limit, filters and cursors."""
import datetime
import random

import bson
import pytest
from bson import Decimal128, ObjectId
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey


def value(rnd, depth=0):
    kind = rnd.randrange(16)
    if kind == 0:
        return rnd.randrange(-5, 20)
    if kind == 1:
        return Int64(rnd.randrange(-5, 20))
    if kind == 2:
        return rnd.randrange(-10, 40) / 2
    if kind == 3:
        return Decimal128(str(rnd.randrange(-5, 20)))
    if kind == 4:
        return rnd.choice(["", "a", "b", "ab", "B", "é", "10", "a\x00b"])
    if kind == 5:
        return None
    if kind == 6 and depth == 0:
        return [value(rnd, 1) for _ in range(rnd.randrange(0, 4))]
    if kind == 7:
        return {"x": rnd.randrange(3)}
    if kind == 8:
        return rnd.choice([True, False])
    if kind == 9:
        return datetime.datetime(2020, 1, 1) + datetime.timedelta(days=rnd.randrange(10))
    if kind == 10:
        return rnd.choice([MinKey(), MaxKey()])
    if kind == 11:
        return float("nan") if rnd.random() < 0.3 else float(rnd.choice(["inf", "-inf", "-0.0"]))
    if kind == 12:
        return ObjectId(b"%012d" % rnd.randrange(20))
    return rnd.randrange(6)  # small ints are common: many ties


def make_doc(rnd, i, arrays=True):
    doc = {"_id": i, "g": rnd.randrange(3)}
    for field in ("a", "b"):
        if rnd.random() < 0.85:  # sometimes missing
            v = value(rnd)
            while not arrays and isinstance(v, list):
                v = value(rnd)
            doc[field] = v
    r = rnd.random()
    if r < 0.4:
        doc["s"] = {"a": value(rnd)}
    elif r < 0.5:
        doc["s"] = [{"a": value(rnd)}, {"a": value(rnd)}]  # multikey through an array
    elif r < 0.55:
        doc["s"] = "not a document"
    return doc


@pytest.fixture(scope="module")
def twins(client):
    """The same documents without indexes (tierdb sorts in memory) and with
    the indexes that serve the sorts below."""
    db = client["t_isort_" + ObjectId().__str__()[-8:]]
    rnd = random.Random(1313)
    docs = [make_doc(rnd, i) for i in range(1500)]
    rnd.shuffle(docs)  # insertion order is not _id order
    db.plain.insert_many(docs)
    db.indexed.insert_many(docs)
    db.indexed.create_index("a")
    db.indexed.create_index([("g", 1), ("a", 1)])
    db.indexed.create_index([("a", 1), ("b", -1)])
    db.indexed.create_index("s.a")
    # no arrays on a and b: every row is in the index walk
    flat = [make_doc(rnd, i, arrays=False) for i in range(800)]
    db.flat_plain.insert_many(flat)
    db.flat.insert_many(flat)
    db.flat.create_index("a")
    db.flat.create_index([("a", 1), ("b", 1)], unique=False)
    yield db
    client.drop_database(db.name)


def encoded(docs):
    """Documents as BSON bytes: NaN equals itself there."""
    return [bson.encode(d) for d in docs]


def ids(cursor):
    return [d["_id"] for d in cursor]


def winning(db, coll, flt, sort, **kw):
    cmd = {"find": coll, "filter": flt, "sort": sort, **kw}
    return db.command("explain", cmd)["queryPlanner"]["winningPlan"]


def assert_walks(db, coll, flt, sort, index, **kw):
    w = winning(db, coll, flt, sort, **kw)
    assert w["inputStage"]["stage"] == "IXSCAN", w
    assert w["inputStage"]["indexName"] == index, w
    # PostgreSQL reads the index (a btree walk, or a bitmap of a pinned
    # range it then sorts when it expects few rows), never the whole table
    assert "Index Scan" in w["plan"] and "Seq Scan" not in w["plan"], w["plan"]


SORTS = [
    ({}, {"a": 1}, "a_1"),
    ({}, {"a": -1}, "a_1"),
    ({}, {"a": 1, "_id": -1}, "a_1"),
    ({}, {"a": -1, "_id": 1}, "a_1"),
    ({}, {"s.a": 1}, "s.a_1"),
    ({}, {"s.a": -1}, "s.a_1"),
    ({"g": 1}, {"a": 1}, "g_1_a_1"),
    ({"g": 2}, {"a": -1}, "g_1_a_1"),
    ({"g": 0, "b": {"$exists": True}}, {"a": 1}, "g_1_a_1"),
    ({"a": {"$gt": 2}}, {"a": 1}, "a_1"),
    ({"a": {"$gte": "a", "$lt": "c"}}, {"a": -1}, "a_1"),
    ({"b": {"$type": "number"}}, {"a": -1}, "a_1"),
]


@pytest.mark.parametrize("flt,sort,index", SORTS, ids=[f"{f}-{s}" for f, s, _ in SORTS])
@pytest.mark.parametrize("skip,limit", [(0, 0), (0, 7), (5, 20), (1490, 0), (0, 1)])
def test_walk_equals_memory_sort(twins, flt, sort, index, skip, limit):
    spec = list(sort.items())
    want = ids(twins.plain.find(flt, sort=spec, skip=skip, limit=limit))
    got = ids(twins.indexed.find(flt, sort=spec, skip=skip, limit=limit))
    assert got == want
    # PostgreSQL picks the btree when the walk reads a few rows of many
    # (on 1,500 rows it may rightly prefer to sort them all)
    assert_walks(twins, "indexed", flt, sort, index, skip=min(skip, 5), limit=limit or 10)


@pytest.mark.parametrize("sort", [{"a": 1, "b": 1}, {"a": -1, "b": -1}, {"a": 1, "b": 1, "_id": -1}])
def test_compound_walk_equals_memory_sort(twins, sort):
    spec = list(sort.items())
    for flt, limit in [({}, 0), ({}, 10), ({"g": 1}, 25)]:
        assert ids(twins.flat.find(flt, sort=spec, limit=limit)) == ids(twins.flat_plain.find(flt, sort=spec, limit=limit))
    assert_walks(twins, "flat", {}, sort, "a_1_b_1", limit=10)


def test_prefix_of_compound_index_orders_by_the_prefix(twins):
    """{a: 1} on an index {a: 1, b: 1} (the only one): ties in a come in
    index order, which MongoDB allows, so compare the a values and the
    multiset of documents."""
    db = twins
    db.prefix.drop()
    rnd = random.Random(7)
    docs = [make_doc(rnd, i) for i in range(400)]
    db.prefix.insert_many(docs)
    db.prefix.create_index([("a", 1), ("b", 1)])
    db.prefix_plain.drop()
    db.prefix_plain.insert_many(docs)
    for direction in (1, -1):
        got = list(db.prefix.find({}, sort=[("a", direction)]))
        want = list(db.prefix_plain.find({}, sort=[("a", direction)]))
        assert sorted(d["_id"] for d in got) == sorted(d["_id"] for d in want)
        # the same sort key in every position: re-sorting got by (a, _id)
        # in tierdb's own order gives want
        db.prefix_check.drop()
        db.prefix_check.insert_many(got)
        assert ids(db.prefix_check.find({}, sort=[("a", direction)])) == [d["_id"] for d in want]
        assert_walks(db, "prefix", {}, {"a": direction}, "a_1_b_1", limit=10)


def test_mixed_directions_sort_in_memory(twins):
    """The key column holds ascending keys: {a: 1, b: -1} cannot walk it."""
    w = winning(twins, "flat", {}, {"a": 1, "b": -1})
    assert w["inputStage"]["stage"] == "SORT", w
    spec = [("a", 1), ("b", -1)]
    assert ids(twins.flat.find({}, sort=spec)) == ids(twins.flat_plain.find({}, sort=spec))


def test_unindexed_sort_is_in_memory(twins):
    w = winning(twins, "indexed", {}, {"b": 1})
    assert w["inputStage"]["stage"] == "SORT", w


@pytest.mark.parametrize("batch", [1, 3, 50])
def test_cursor_batches_continue_the_walk(twins, batch):
    for flt, sort in [({}, [("a", 1)]), ({"g": 2}, [("a", -1)]), ({}, [("s.a", -1)])]:
        want = ids(twins.plain.find(flt, sort=sort))
        got = ids(twins.indexed.find(flt, sort=sort, batch_size=batch))
        assert got == want


def test_projection_with_walk(twins):
    got = list(twins.indexed.find({}, {"a": 1, "_id": 0}, sort=[("a", -1)], limit=30))
    want = list(twins.plain.find({}, {"a": 1, "_id": 0}, sort=[("a", -1)], limit=30))
    assert encoded(got) == encoded(want)


PIPELINES = [
    [{"$sort": {"a": 1}}, {"$limit": 10}],
    [{"$sort": {"a": -1}}, {"$skip": 4}, {"$limit": 10}],
    [{"$match": {"g": 1}}, {"$sort": {"a": -1}}, {"$limit": 10}],
    [{"$match": {"g": 0}}, {"$sort": {"a": 1}}, {"$project": {"a": 1}}],
    [{"$sort": {"a": 1}}, {"$group": {"_id": "$g", "first": {"$first": "$_id"}}}, {"$sort": {"_id": 1}}],
]


@pytest.mark.parametrize("pipeline", PIPELINES, ids=[str(i) for i in range(len(PIPELINES))])
def test_aggregate_leading_sort(twins, pipeline):
    assert encoded(twins.indexed.aggregate(pipeline)) == encoded(twins.plain.aggregate(pipeline))
    ex = twins.command("aggregate", "indexed", pipeline=pipeline, explain=True)
    cur = ex["stages"][0]["$cursor"]["queryPlanner"]["winningPlan"]
    assert cur["inputStage"]["stage"] == "IXSCAN", cur
    if any("$limit" in st for st in pipeline):  # else PostgreSQL may rightly sort 1,500 rows
        assert "Index Scan" in cur["plan"], cur["plan"]
    rest = [list(s)[0] for s in ex["stages"][1:]]
    assert rest[:1] != ["$sort"]  # the walk replaced the leading $sort


def test_aggregate_walk_has_no_sort_memory_limit(db):
    """A $sort on an index streams: no in-memory sort, whatever the size."""
    db.c.insert_many([{"_id": i, "a": (i * 7919) % 3001, "pad": "x" * 2000} for i in range(3000)])
    db.c.create_index("a")
    got = [d["a"] for d in db.c.aggregate([{"$sort": {"a": -1}}, {"$project": {"a": 1}}])]
    assert got == sorted(got, reverse=True) and len(got) == 3000


def test_semantics_on_a_small_collection(db):
    """Checked against MongoDB's documented sort order: an array sorts by its
    smallest element ascending and its largest descending; an empty array
    before null; null and missing together; numbers, then strings, then
    documents, ObjectIds, booleans, dates; MinKey first and MaxKey last."""
    docs = [
        {"_id": 1, "a": [5, 1]},
        {"_id": 2, "a": 3},
        {"_id": 3},
        {"_id": 4, "a": None},
        {"_id": 5, "a": "s"},
        {"_id": 6, "a": [2, 9]},
        {"_id": 7, "a": []},
        {"_id": 8, "a": {"x": 1}},
        {"_id": 9, "a": True},
        {"_id": 10, "a": datetime.datetime(2021, 1, 1)},
        {"_id": 11, "a": MaxKey()},
        {"_id": 12, "a": MinKey()},
        {"_id": 13, "a": Decimal128("2.5")},
        {"_id": 14, "a": ObjectId(b"000000000001")},
    ]
    db.c.insert_many(docs)
    db.c.create_index("a")
    assert ids(db.c.find({}, sort=[("a", 1)])) == [12, 7, 3, 4, 1, 6, 13, 2, 5, 8, 14, 9, 10, 11]
    assert ids(db.c.find({}, sort=[("a", -1)])) == [11, 10, 9, 14, 8, 5, 6, 1, 2, 13, 3, 4, 7, 12]
    assert ids(db.c.find({}, sort=[("a", 1)], limit=3)) == [12, 7, 3]
    assert ids(db.c.find({}, sort=[("a", -1)], skip=6, limit=2)) == [6, 1]


@pytest.mark.parametrize("kind", ["sparse", "partial", "hidden", "hashed"])
def test_other_index_kinds_are_never_walked(db, kind):
    """A sparse or partial index leaves documents out, a hidden one is not
    planned, a hashed one holds hashes: a sort never walks them, and the
    result is the in-memory sort's, documents left out included."""
    docs = [{"_id": i, "a": (i * 37) % 50, "g": i % 3} for i in range(200)] + [{"_id": 1000 + i, "g": 1} for i in range(5)]
    db.c.insert_many(docs)
    db.plain.insert_many(docs)
    opts = {"sparse": {"sparse": True}, "partial": {"partialFilterExpression": {"g": {"$gte": 1}}},
            "hidden": {"hidden": True}, "hashed": {}}[kind]
    db.c.create_index([("a", "hashed" if kind == "hashed" else 1)], **opts)
    for direction in (1, -1):
        for limit in (0, 7):
            assert ids(db.c.find({}, sort=[("a", direction)], limit=limit)) == ids(db.plain.find({}, sort=[("a", direction)], limit=limit))
        w = winning(db, "c", {}, {"a": direction}, limit=7)
        assert w["inputStage"]["stage"] == "SORT", w


def test_ttl_index_is_walked(db):
    db.c.insert_many([{"_id": i, "a": (i * 37) % 50} for i in range(100)])
    db.c.create_index("a", expireAfterSeconds=3600)
    assert_walks(db, "c", {}, {"a": -1}, "a_1", limit=5)
    assert [d["a"] for d in db.c.find({}, sort=[("a", -1)], limit=5)] == [49, 49, 48, 48, 47]
