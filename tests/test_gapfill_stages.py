"""$documents, $densify, $fill (and $locf/$linearFill), $redact, find's let
with one $$NOW per command, hint checks and $indexStats, through pymongo
against tierdb on PostgreSQL; results and error codes as MongoDB documents
them."""

import datetime
import time

import pytest
from bson import Int64
from pymongo.errors import OperationFailure, WriteError


def code_of(fn):
    with pytest.raises(OperationFailure) as e:
        fn()
    return e.value.code


def D(*a):
    return datetime.datetime(*a)


# --- $documents -------------------------------------------------------------

def test_documents_collectionless(db):
    assert list(db.aggregate([{"$documents": [{"a": 1}, {"a": 2}, {"a": 3}]}, {"$match": {"a": {"$gte": 2}}}])) == [
        {"a": 2}, {"a": 3}]
    got = list(db.aggregate([{"$documents": {"$map": {"input": {"$range": [0, "$$n"]}, "in": {"x": "$$this"}}}},
                             {"$group": {"_id": None, "s": {"$sum": "$x"}}}], let={"n": 5}))
    assert got == [{"_id": None, "s": 10}]
    # More than a first batch: the cursor continues with getMore.
    got = list(db.aggregate([{"$documents": {"$map": {"input": {"$range": [0, 250]}, "in": {"x": "$$this"}}}}],
                            batchSize=100))
    assert [d["x"] for d in got] == list(range(250))
    # $$NOW is one value for the command: in let, in $documents and later.
    got = list(db.aggregate([{"$documents": [{"t": "$$NOW"}]}, {"$set": {"same": {"$eq": ["$t", "$$now0"]}}}],
                            let={"now0": "$$NOW"}))
    assert got[0]["same"] is True and isinstance(got[0]["t"], datetime.datetime)


def test_documents_into_out_and_merge(db):
    assert list(db.aggregate([{"$documents": [{"_id": 1, "a": 1}, {"_id": 2, "a": 2}]}, {"$out": "made"}])) == []
    assert list(db.made.find().sort("_id", 1)) == [{"_id": 1, "a": 1}, {"_id": 2, "a": 2}]
    list(db.aggregate([{"$documents": [{"_id": 2, "b": 3}, {"_id": 3, "a": 3}]}, {"$merge": {"into": "made"}}]))
    assert list(db.made.find().sort("_id", 1)) == [{"_id": 1, "a": 1}, {"_id": 2, "a": 2, "b": 3}, {"_id": 3, "a": 3}]
    # A failing pipeline leaves the target as it was.
    assert code_of(lambda: list(db.aggregate([{"$documents": [{"_id": 9}, {"_id": 9}]}, {"$out": "made"}]))) == 11000
    assert db.made.count_documents({}) == 3


def test_documents_errors(db):
    db.c.insert_one({"a": 1})
    assert code_of(lambda: list(db.aggregate([{"$documents": [1, 2]}]))) == 40228
    assert code_of(lambda: list(db.aggregate([{"$documents": [{"a": 1}, 2]}]))) == 40228
    assert code_of(lambda: list(db.aggregate([{"$documents": "s"}]))) == 5858203
    # On a collection, or not first.
    assert code_of(lambda: list(db.c.aggregate([{"$documents": [{"a": 1}]}]))) == 73
    assert code_of(lambda: list(db.c.aggregate([{"$match": {}}, {"$documents": [{"a": 1}]}]))) == 40602
    # {aggregate: 1} needs a stage that reads no collection.
    assert code_of(lambda: list(db.aggregate([{"$match": {}}]))) == 73


def test_documents_in_union_with_and_lookup(db):
    db.c.insert_many([{"_id": 1, "k": 1}, {"_id": 2, "k": 2}, {"_id": 3, "k": 5}])
    got = list(db.c.aggregate([{"$unionWith": {"pipeline": [{"$documents": [{"k": 9}, {"k": 10}]}]}},
                               {"$project": {"_id": 0, "k": 1}}]))
    assert sorted(d["k"] for d in got) == [1, 2, 5, 9, 10]
    got = list(db.c.aggregate([
        {"$lookup": {"let": {"k": "$k"}, "as": "names",
                     "pipeline": [{"$documents": [{"v": 1, "n": "one"}, {"v": 2, "n": "two"}]},
                                  {"$match": {"$expr": {"$eq": ["$v", "$$k"]}}}]}},
        {"$sort": {"_id": 1}}]))
    assert [d["names"] for d in got] == [[{"v": 1, "n": "one"}], [{"v": 2, "n": "two"}], []]
    got = list(db.c.aggregate([
        {"$lookup": {"localField": "k", "foreignField": "v", "as": "m",
                     "pipeline": [{"$documents": [{"v": 5}, {"v": 6}]}]}},
        {"$match": {"m": {"$ne": []}}}]))
    assert got == [{"_id": 3, "k": 5, "m": [{"v": 5}]}]
    assert code_of(lambda: list(db.c.aggregate([{"$unionWith": {"pipeline": [{"$match": {}}]}}]))) == 9
    assert code_of(lambda: list(db.c.aggregate([{"$lookup": {"as": "a", "pipeline": [{"$match": {}}]}}]))) == 9


# --- $densify ---------------------------------------------------------------

def test_densify_numeric(db):
    db.d.insert_many([{"g": "a", "x": 1}, {"g": "a", "x": 4}, {"g": "b", "x": 3}, {"g": "b", "x": 8},
                      {"g": "b", "x": None}])

    def run(rng, partitioned=True):
        stage = {"field": "x", "range": rng}
        if partitioned:
            stage["partitionByFields"] = ["g"]
        out = list(db.d.aggregate([{"$densify": stage}, {"$project": {"_id": 0}}]))
        return sorted((d.get("g", ""), d.get("x")) for d in out if d.get("x") is not None), len(out)

    # Each partition over its own [min, max].
    assert run({"step": 2, "bounds": "partition"}) == (
        [("a", 1), ("a", 3), ("a", 4), ("b", 3), ("b", 5), ("b", 7), ("b", 8)], 8)
    # Every partition over the whole input's [min, max]; generated documents
    # carry the partition field.
    assert run({"step": 3, "bounds": "full"}) == (
        [("a", 1), ("a", 4), ("a", 7), ("b", 1), ("b", 3), ("b", 4), ("b", 7), ("b", 8)], 9)
    # [lo, hi): documents outside pass through.
    assert run({"step": 2, "bounds": [2, 7]}) == (
        [("a", 1), ("a", 2), ("a", 4), ("a", 6), ("b", 2), ("b", 3), ("b", 4), ("b", 6), ("b", 8)], 10)
    # Without partitions the whole input is one sequence.
    assert run({"step": 2, "bounds": "full"}, partitioned=False)[0] == [
        ("", 5), ("", 7), ("a", 1), ("a", 4), ("b", 3), ("b", 8)]
    # A generated document holds only the field and the partition fields.
    gen = [d for d in db.d.aggregate([{"$densify": {"field": "x", "partitionByFields": ["g"],
                                                    "range": {"step": 2, "bounds": "partition"}}}])
           if "_id" not in d]
    assert sorted(gen, key=lambda d: (d["g"], d["x"])) == [{"g": "a", "x": 3}, {"g": "b", "x": 5}, {"g": "b", "x": 7}]


def test_densify_dates(db):
    db.t.insert_many([{"d": D(2024, 1, 31), "v": 1}, {"d": D(2024, 5, 1), "v": 2}])
    got = [d["d"] for d in db.t.aggregate([{"$densify": {"field": "d", "range": {"step": 1, "unit": "month", "bounds": "full"}}},
                                           {"$sort": {"d": 1}}])]
    # A month after Jan 31 is Feb 29 (the last day), as $dateAdd.
    assert got == [D(2024, 1, 31), D(2024, 2, 29), D(2024, 3, 29), D(2024, 4, 29), D(2024, 5, 1)]
    got = [d["d"] for d in db.t.aggregate([
        {"$densify": {"field": "d", "range": {"step": 12, "unit": "hour", "bounds": [D(2024, 1, 31), D(2024, 2, 2)]}}},
        {"$sort": {"d": 1}}])]
    assert got == [D(2024, 1, 31), D(2024, 1, 31, 12), D(2024, 2, 1), D(2024, 2, 1, 12), D(2024, 5, 1)]


@pytest.mark.parametrize("stage,code", [
    ({"field": "x", "range": {"step": 0, "bounds": "full"}}, 5733401),
    ({"field": "x", "range": {"step": 1.5, "unit": "day", "bounds": "full"}}, 6586400),
    ({"field": "x", "range": {"step": 1, "bounds": [3, 1]}}, 5733402),
    ({"field": "x", "range": {"step": 1, "bounds": [1]}}, 5733403),
    ({"field": "x", "range": {"step": 1, "bounds": "partition"}}, 5733408),
    ({"field": "x", "range": {"step": 1, "unit": "day", "bounds": [1, 3]}}, 5733409),
    ({"field": "x", "range": {"step": 1, "bounds": "everything"}}, 5946802),
    ({"field": "x", "range": {"step": 1}}, 40414),
    ({"field": "x", "range": {"step": 1, "bounds": "full"}, "extra": 1}, 40415),
    ({"field": "s", "range": {"step": 1, "bounds": "full"}}, 5733201),
    ({"field": "x", "range": {"step": 1, "unit": "day", "bounds": "full"}}, 6053600),
])
def test_densify_errors(db, stage, code):
    db.e.insert_many([{"x": 1, "s": "text"}, {"x": 3, "s": "more"}])
    assert code_of(lambda: list(db.e.aggregate([{"$densify": stage}]))) == code


def test_densify_memory_is_the_sorts(db):
    """Its sort spills like $sort's; without disk use a large input is
    refused with 292 rather than held."""
    pad = "x" * 60000
    db.m.insert_many([{"x": i, "pad": pad} for i in range(0, 4000, 2)])
    stage = {"$densify": {"field": "x", "range": {"step": 1, "bounds": "full"}}}
    assert code_of(lambda: list(db.m.aggregate([stage, {"$count": "n"}], allowDiskUse=False))) == 292
    assert list(db.m.aggregate([stage, {"$count": "n"}], allowDiskUse=True)) == [{"n": 3999}]


# --- $fill, $locf, $linearFill ----------------------------------------------

@pytest.fixture
def readings(db):
    db.r.insert_many([
        {"_id": 1, "t": 1, "g": "a", "v": 10, "s": "x"},
        {"_id": 2, "t": 2, "g": "a", "v": None, "s": None},
        {"_id": 3, "t": 3, "g": "a", "s": "y"},
        {"_id": 4, "t": 4, "g": "a", "v": 40},
        {"_id": 5, "t": 5, "g": "a"},
        {"_id": 6, "t": 1, "g": "b"},
        {"_id": 7, "t": 2, "g": "b", "v": 7},
    ])
    return db.r


def test_fill_methods_and_values(readings):
    got = {d["_id"]: (d.get("v", "MISSING"), d.get("s", "MISSING")) for d in readings.aggregate([
        {"$fill": {"sortBy": {"t": 1}, "partitionByFields": ["g"],
                   "output": {"v": {"method": "linear"}, "s": {"method": "locf"}}}}])}
    assert got == {1: (10, "x"), 2: (20.0, "x"), 3: (30.0, "y"), 4: (40, "y"), 5: (None, "y"),
                   6: (None, None), 7: (7, None)}
    got = {d["_id"]: (d["v"], d["s"]) for d in readings.aggregate([
        {"$fill": {"output": {"v": {"value": 0}, "s": {"value": {"$concat": ["n-", "$g"]}}}}}])}
    assert got[2] == (0, "n-a") and got[3] == (0, "y") and got[1] == (10, "x")
    # Without sortBy, locf follows the input's order.
    got = [d["s"] for d in readings.aggregate([{"$sort": {"_id": -1}}, {"$fill": {"output": {"s": {"method": "locf"}}}}])]
    assert got == [None, None, None, None, "y", "y", "x"]
    # partitionBy as an expression.
    got = {d["_id"]: d["s"] for d in readings.aggregate([
        {"$fill": {"sortBy": {"t": 1}, "partitionBy": {"$toUpper": "$g"}, "output": {"s": {"method": "locf"}}}}])}
    assert got[6] is None and got[5] == "y"


def test_window_locf_and_linear_fill(readings):
    got = {d["_id"]: d["l"] for d in readings.aggregate([
        {"$match": {"g": "a"}},
        {"$setWindowFields": {"sortBy": {"t": -1}, "output": {"l": {"$locf": "$v"}}}}])}
    assert got == {5: None, 4: 40, 3: 40, 2: 40, 1: 10}
    readings.insert_many([{"_id": 10, "g": "d", "t": datetime.datetime(2024, 1, 1), "v": 0},
                          {"_id": 11, "g": "d", "t": datetime.datetime(2024, 1, 2)},
                          {"_id": 12, "g": "d", "t": datetime.datetime(2024, 1, 5), "v": 8}])
    got = {d["_id"]: d["l"] for d in readings.aggregate([
        {"$match": {"g": "d"}}, {"$setWindowFields": {"sortBy": {"t": 1}, "output": {"l": {"$linearFill": "$v"}}}}])}
    assert got == {10: 0, 11: 2.0, 12: 8}


@pytest.mark.parametrize("pipeline,code", [
    ([{"$fill": {"output": {}}}], 6050203),
    ([{"$fill": {"sortBy": {"t": 1}, "output": {"v": {"method": "locf", "value": 1}}}}], 6050201),
    ([{"$fill": {"sortBy": {"t": 1}, "output": {"v": {"method": "nearest"}}}}], 6050202),
    ([{"$fill": {"sortBy": {"t": 1}, "partitionBy": "$g", "partitionByFields": ["g"], "output": {"v": {"method": "locf"}}}}], 6050204),
    ([{"$fill": {"sortBy": {"t": 1}, "output": {"v": 1}}}], 6050200),
    ([{"$setWindowFields": {"sortBy": {"t": 1, "g": 1}, "output": {"v": {"$linearFill": "$v"}}}}], 605001),
    ([{"$fill": {"output": {"v": {"method": "linear"}}}}], 605001),
    ([{"$densify": {"field": "t", "partitionByFields": ["t.x"], "range": {"step": 1, "bounds": "full"}}}], 8993000),
    ([{"$set": {"t": 1}}, {"$setWindowFields": {"sortBy": {"t": 1}, "output": {"v": {"$linearFill": "$v"}}}}], 6050106),
    ([{"$setWindowFields": {"sortBy": {"t": 1}, "output": {"v": {"$linearFill": "$s"}}}}], 14),
])
def test_fill_errors(readings, pipeline, code):
    assert code_of(lambda: list(readings.aggregate(pipeline))) == code


# --- $redact ----------------------------------------------------------------

def test_redact(db):
    db.f.insert_many([
        {"_id": 1, "tags": ["G"], "title": "t", "subs": [{"tags": ["G"], "x": 1}, {"tags": ["TS"], "x": 2}],
         "detail": {"tags": ["TS"], "secret": True}},
        {"_id": 2, "tags": ["TS"], "title": "hidden"},
    ])
    rule = {"$cond": {"if": {"$in": ["G", "$tags"]}, "then": "$$DESCEND", "else": "$$PRUNE"}}
    got = list(db.f.aggregate([{"$redact": rule}]))
    assert got == [{"_id": 1, "tags": ["G"], "title": "t", "subs": [{"tags": ["G"], "x": 1}]}]
    got = list(db.f.aggregate([{"$redact": {"$cond": [{"$eq": ["$_id", 2]}, "$$KEEP", "$$PRUNE"]}}]))
    assert got == [{"_id": 2, "tags": ["TS"], "title": "hidden"}]
    assert code_of(lambda: list(db.f.aggregate([{"$redact": "keep it"}]))) == 17053


# --- find's let, $$NOW ------------------------------------------------------

def test_find_let(db):
    db.l.insert_many([{"_id": i, "a": i} for i in range(5)])
    got = list(db.l.find({"$expr": {"$gt": ["$a", "$$lim"]}}, let={"lim": 2}))
    assert [d["_id"] for d in got] == [3, 4]
    got = list(db.l.find({"$expr": {"$eq": ["$a", {"$add": ["$$x", 1]}]}}, let={"x": {"$multiply": [2, 1]}}))
    assert [d["_id"] for d in got] == [3]
    # An undefined variable is refused, as in MongoDB.
    assert code_of(lambda: list(db.l.find({"$expr": {"$eq": ["$a", "$$nope"]}}))) == 17276
    # The same let reaches $expr in find over a view.
    db.command("create", "lv", viewOn="l", pipeline=[{"$match": {"a": {"$gte": 1}}}])
    got = list(db.lv.find({"$expr": {"$lt": ["$a", "$$lim"]}}, let={"lim": 3}))
    assert [d["_id"] for d in got] == [1, 2]


def test_now_is_one_value_per_command(db):
    db.n.insert_many([{"_id": i} for i in range(300)])
    # let's $$NOW and the filter's $$NOW are the same instant in find...
    assert len(list(db.n.find({"$expr": {"$eq": ["$$NOW", "$$t"]}}, let={"t": "$$NOW"}))) == 300
    # ... and in aggregate, in the leading $match, a later one and $set.
    got = list(db.n.aggregate([{"$match": {"$expr": {"$eq": ["$$NOW", "$$t"]}}}, {"$set": {"now": "$$NOW"}},
                               {"$match": {"$expr": {"$eq": ["$now", "$$t"]}}}, {"$count": "n"}], let={"t": "$$NOW"}))
    assert got == [{"n": 300}]
    # ... and in an update: its query, its let and its pipeline.
    res = db.n.update_many({"$expr": {"$eq": ["$$NOW", "$$t"]}}, [{"$set": {"u": "$$NOW", "same": {"$eq": ["$$NOW", "$$t"]}}}],
                           let={"t": "$$NOW"})
    assert res.modified_count == 300
    assert db.n.count_documents({"same": True}) == 300 and len(db.n.distinct("u")) == 1
    # $$CLUSTER_TIME: tierdb keeps no cluster time, and answers as a MongoDB
    # server without one (51144), the same in find, aggregate and update.
    assert code_of(lambda: list(db.n.find({"$expr": {"$eq": ["$$CLUSTER_TIME", 1]}}))) == 51144
    assert code_of(lambda: list(db.n.aggregate([{"$match": {"$expr": {"$eq": ["$$CLUSTER_TIME", 1]}}}]))) == 51144
    assert code_of(lambda: list(db.n.aggregate([{"$set": {"t": "$$CLUSTER_TIME"}}]))) == 51144
    with pytest.raises(WriteError) as e:
        db.n.update_one({}, [{"$set": {"t": "$$CLUSTER_TIME"}}])
    assert e.value.code == 51144


# --- hint -------------------------------------------------------------------

def test_hint_must_name_a_visible_index(db):
    c = db.h
    c.insert_many([{"_id": i, "a": i % 3, "b": i} for i in range(10)])
    c.create_index([("a", 1)], name="a_1")
    c.create_index([("b", -1)], name="b_hidden", hidden=True)
    # Valid hints: by name, by key pattern, $natural; the answer is the same.
    assert len(list(c.find({"a": 1}).hint("a_1"))) == 3
    assert len(list(c.find({"a": 1}).hint([("a", 1)]))) == 3
    assert len(list(c.find({"a": 1}).hint([("$natural", 1)]))) == 3
    assert c.count_documents({"a": 1}, hint="_id_") == 3
    bad = ["nope", [("a", -1)], "b_hidden", [("b", -1)]]
    for h in bad:
        assert code_of(lambda: list(c.find({}).hint(h))) == 2, h
    assert code_of(lambda: c.count_documents({}, hint="nope")) == 2
    assert code_of(lambda: list(c.aggregate([{"$match": {}}], hint="nope"))) == 2
    assert code_of(lambda: db.command("distinct", "h", key="a", hint="nope")) == 2
    assert code_of(lambda: c.find_one_and_update({"_id": 1}, {"$set": {"z": 1}}, hint="b_hidden")) == 2
    with pytest.raises(WriteError) as e:
        c.update_one({"_id": 1}, {"$set": {"z": 1}}, hint="nope")
    assert e.value.code == 2
    with pytest.raises(WriteError) as e:
        c.delete_one({"_id": 1}, hint=[("zz", 1)])
    assert e.value.code == 2
    assert c.count_documents({"z": 1}) == 0 and c.count_documents({}) == 10  # nothing applied
    # Valid hints on writes work.
    assert c.update_one({"_id": 1}, {"$set": {"z": 1}}, hint="a_1").modified_count == 1
    assert c.delete_one({"_id": 2}, hint=[("_id", 1)]).deleted_count == 1
    assert code_of(lambda: db.command("explain", {"find": "h", "filter": {}, "hint": "nope"})) == 2
    assert "queryPlanner" in db.command("explain", {"find": "h", "filter": {}, "hint": "a_1"})
    # A collection that does not exist answers empty, hint or not.
    assert list(db.nothing.find({}).hint("nope")) == []
    # MongoDB answers a hint to a sparse or partial index with only the
    # documents the index holds; tierdb does not, so it refuses.
    c.create_index([("s", 1)], name="s_sparse", sparse=True)
    c.create_index([("b", 1)], name="b_part", partialFilterExpression={"b": {"$gt": 5}})
    for h in ("s_sparse", [("s", 1)], "b_part"):
        assert code_of(lambda: list(c.find({}).hint(h))) == 238, h
    with pytest.raises(WriteError) as e:
        c.update_one({"_id": 3}, {"$set": {"z": 2}}, hint="b_part")
    assert e.value.code == 238


# --- $indexStats ------------------------------------------------------------

def test_index_stats(db):
    c = db.ix
    # Enough rows that PostgreSQL looks an _id up through its index rather
    # than reading the table's one page.
    c.insert_many([{"_id": i, "a": i, "pad": "p" * 200} for i in range(5000)])
    c.create_index([("a", -1)], name="a_desc", unique=True)
    stats = {d["name"]: d for d in c.aggregate([{"$indexStats": {}}])}
    assert set(stats) == {"_id_", "a_desc"}
    a = stats["a_desc"]
    assert a["key"] == {"a": -1} and a["spec"]["unique"] is True and a["spec"]["key"] == {"a": -1}
    assert isinstance(a["accesses"]["ops"], Int64) and isinstance(a["accesses"]["since"], datetime.datetime)
    assert isinstance(a["host"], str) and a["host"]
    before = stats["_id_"]["accesses"]["ops"]
    for i in range(5):
        assert c.find_one({"_id": i})["a"] == i
    # PostgreSQL publishes a backend's counts a moment after its statements.
    deadline = time.time() + 15
    ops = before
    while time.time() < deadline:
        ops = next(d for d in c.aggregate([{"$indexStats": {}}]) if d["name"] == "_id_")["accesses"]["ops"]
        if ops >= before + 5:
            break
        time.sleep(0.5)
    assert ops >= before + 5
    # Later stages run over its documents.
    assert list(c.aggregate([{"$indexStats": {}}, {"$match": {"name": "a_desc"}}, {"$project": {"_id": 0, "name": 1}}])) == [
        {"name": "a_desc"}]
    assert list(db.nothing.aggregate([{"$indexStats": {}}])) == []
    assert code_of(lambda: list(c.aggregate([{"$indexStats": {"x": 1}}]))) == 28803
    assert code_of(lambda: list(c.aggregate([{"$match": {}}, {"$indexStats": {}}]))) == 40602
    assert code_of(lambda: list(c.aggregate([{"$facet": {"x": [{"$indexStats": {}}]}}]))) == 40600
