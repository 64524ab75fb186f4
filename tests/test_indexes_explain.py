"""Indexes are used (PostgreSQL's plan, via explain) and never change results."""
import datetime
import random

import pytest
from bson import Decimal128, ObjectId
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from pymongo.errors import OperationFailure

N = 5000


@pytest.fixture(scope="module")
def big(client):
    """5000 docs with an index on 'a', shared by the explain tests (read only)."""
    db = client["t_explain_" + ObjectId().__str__()[-8:]]
    db.c.insert_many([{"_id": i, "a": i % 1000, "pad": "x" * 100} for i in range(N)])
    db.c.create_index("a")
    yield db
    client.drop_database(db.name)


def plan(db, flt):
    p = db.command("explain", {"find": "c", "filter": flt})["queryPlanner"]["winningPlan"]["plan"]
    assert isinstance(p, str) and p
    return p


def assert_index_plan(p):
    assert any(s in p for s in ("Index Scan", "Index Only Scan", "Bitmap Index Scan")), p
    assert "Seq Scan" not in p, p


def test_explain_by_id_uses_index(big):
    assert_index_plan(plan(big, {"_id": 123}))


def test_explain_equality_on_indexed_field(big):
    assert_index_plan(plan(big, {"a": 5}))


def test_explain_range_on_indexed_field(big):
    assert_index_plan(plan(big, {"a": {"$gt": 10, "$lt": 20}}))


def test_explain_unindexed_field_scans(big):
    assert "Seq Scan" in plan(big, {"pad": "y"})


def test_explain_execution_stats(big):
    """executionStats (and allPlansExecution: there is one plan) runs the
    find or count and says how many documents it returned; queryPlanner,
    and no verbosity, show the plan only."""
    for verbosity in ("executionStats", "allPlansExecution"):
        r = big.command("explain", {"find": "c", "filter": {"a": {"$lt": 3}}, "limit": 12}, verbosity=verbosity)
        st = r["executionStats"]
        assert st["executionSuccess"] is True and st["nReturned"] == 12 and st["executionTimeMillis"] >= 0
        assert "queryPlanner" in r
    r = big.command("explain", {"find": "c", "filter": {"a": {"$lt": 3}}}, verbosity="executionStats")
    assert r["executionStats"]["nReturned"] == 15
    r = big.command("explain", {"count": "c", "query": {"a": 7}}, verbosity="executionStats")
    assert r["executionStats"]["executionStages"]["nCounted"] == 5 and r["executionStats"]["nReturned"] == 0
    assert "executionStats" not in big.command("explain", {"find": "c", "filter": {"a": 1}}, verbosity="queryPlanner")
    assert "executionStats" not in big.command("explain", {"find": "c", "filter": {"a": 1}})
    with pytest.raises(OperationFailure) as e:
        big.command("explain", {"find": "c"}, verbosity="everything")
    assert e.value.code == 2
    with pytest.raises(OperationFailure) as e:
        big.command("explain", {"find": "c"}, verbosity=1)
    assert e.value.code == 14


def test_indexed_query_results(big):
    assert sorted(d["_id"] for d in big.c.find({"a": 5})) == [5, 1005, 2005, 3005, 4005]
    assert big.c.count_documents({"a": {"$gt": 10, "$lt": 20}}) == 9 * 5
    assert big.c.find_one({"_id": 123})["a"] == 123


# --- same answers with and without indexes ------------------------------------------

def random_value(rnd):
    kind = rnd.randrange(14)
    if kind == 0:
        return rnd.randrange(-5, 20)
    if kind == 1:
        return Int64(rnd.randrange(-5, 20))
    if kind == 2:
        return rnd.randrange(-10, 40) / 2
    if kind == 3:
        return Decimal128(str(rnd.randrange(-5, 20)))
    if kind == 4:
        return rnd.choice(["", "a", "b", "ab", "B", "é", "10"])
    if kind == 5:
        return None
    if kind == 6:
        return [random_value(rnd) for _ in range(rnd.randrange(0, 4))]
    if kind == 7:
        return {"x": rnd.randrange(3)}
    if kind == 8:
        return rnd.choice([True, False])
    if kind == 9:
        return datetime.datetime(2020, 1, 1) + datetime.timedelta(days=rnd.randrange(10))
    if kind == 10:
        return rnd.choice([MinKey(), MaxKey()])
    if kind == 11:
        return float("nan") if rnd.random() < 0.3 else float(rnd.choice(["inf", "-inf"]))
    return rnd.randrange(5)  # small ints are common, so equality hits many docs


def random_doc(rnd, i):
    doc = {"_id": i}
    for field in ("a", "b"):
        if rnd.random() < 0.85:  # sometimes missing
            doc[field] = random_value(rnd)
    if rnd.random() < 0.5:
        doc["s"] = {"a": random_value(rnd)}
    return doc


@pytest.fixture(scope="module")
def twins(client):
    db = client["t_twins_" + ObjectId().__str__()[-8:]]
    rnd = random.Random(20240229)
    docs = [random_doc(rnd, i) for i in range(3000)]
    db.plain.insert_many(docs)
    db.indexed.insert_many(docs)
    db.indexed.create_index("a")
    db.indexed.create_index([("b", -1), ("a", 1)])
    db.indexed.create_index("s.a")
    yield db
    client.drop_database(db.name)


QUERIES = [
    {"a": 3},
    {"a": Int64(3)},
    {"a": 3.0},
    {"a": Decimal128("3")},
    {"a": 2.5},
    {"a": "a"},
    {"a": None},
    {"a": {"$exists": False}},
    {"a": []},
    {"a": {"x": 1}},
    {"a": True},
    {"a": float("nan")},
    {"a": {"$gt": 4}},
    {"a": {"$gte": 4, "$lt": 10}},
    {"a": {"$lt": 0}},
    {"a": {"$lte": -5}},
    {"a": {"$gt": "a"}},
    {"a": {"$gte": ""}},
    {"a": {"$lt": datetime.datetime(2020, 1, 5)}},
    {"a": {"$gt": MinKey()}},
    {"a": {"$lt": MaxKey()}},
    {"a": {"$in": [1, "b", None]}},
    {"a": {"$nin": [1, 2, 3]}},
    {"a": {"$ne": 4}},
    {"a": {"$gt": float("-inf")}},
    {"b": 2, "a": {"$gte": 1}},
    {"b": {"$lt": 3}, "a": 0},
    {"b": {"$in": [0, 1]}, "a": {"$in": [0, 1]}},
    {"s.a": 1},
    {"s.a": {"$gt": 2}},
    {"s.a": None},
    {"$or": [{"a": 1}, {"b": 1}]},
    {"_id": {"$in": [1, 5, 99, 2999, 3000]}},
    {"_id": {"$gte": 2990}},
]


@pytest.mark.parametrize("flt", QUERIES, ids=lambda q: repr(q)[:60])
def test_index_never_changes_results(twins, flt):
    want = sorted(d["_id"] for d in twins.plain.find(flt, {"_id": 1}))
    got = sorted(d["_id"] for d in twins.indexed.find(flt, {"_id": 1}))
    assert got == want
    assert twins.indexed.count_documents(flt) == len(want)


@pytest.mark.parametrize("sort", [[("a", 1)], [("a", -1)], [("b", -1), ("a", 1)], [("s.a", 1)]], ids=repr)
def test_index_never_changes_sort_order(twins, sort):
    key = sort + [("_id", 1)]  # ties broken the same way on both sides
    want = [d["_id"] for d in twins.plain.find({}, {"_id": 1}).sort(key)]
    got = [d["_id"] for d in twins.indexed.find({}, {"_id": 1}).sort(key)]
    assert got == want
