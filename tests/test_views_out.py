"""$out, $merge and views through pymongo, checked against MongoDB's
documented semantics and error codes: $out replaces its target atomically
(a failed one leaves it as it was) and keeps its indexes; $merge matches on
_id or a unique index; views run their pipeline under find, count,
distinct and aggregate, survive a restart and refuse writes."""

import os
import subprocess

import pytest
from bson import ObjectId
from pymongo.errors import OperationFailure


def code_of(fn):
    with pytest.raises(OperationFailure) as e:
        fn()
    return e.value.code


def tmp_collections(db):
    return [n for n in db.list_collection_names() if n.startswith("tmp.agg_out")]


@pytest.fixture
def src(db):
    db.src.insert_many([{"_id": i, "k": i % 3, "v": i * 10} for i in range(10)])
    return db.src


# --- $out -------------------------------------------------------------------

def test_out_replaces_the_target_and_keeps_its_indexes(db, src):
    db.target.insert_many([{"_id": "old", "v": -1}, {"_id": 1, "old": True, "v": -2}])
    db.target.create_index([("k", 1)], name="k_1")
    db.target.create_index([("v", -1)], name="v_unique", unique=True)
    assert list(src.aggregate([{"$match": {"k": 1}}, {"$out": "target"}])) == []
    assert list(db.target.find().sort("_id", 1)) == [{"_id": i, "k": 1, "v": i * 10} for i in (1, 4, 7)]
    info = db.target.index_information()
    assert set(info) == {"_id_", "k_1", "v_unique"} and info["v_unique"].get("unique") is True
    assert tmp_collections(db) == []
    # An $out that produces nothing leaves an empty collection.
    src.aggregate([{"$match": {"k": 99}}, {"$out": "target"}])
    assert "target" in db.list_collection_names() and db.target.count_documents({}) == 0
    # Generated _ids for results without one.
    src.aggregate([{"$project": {"_id": 0, "v": 1}}, {"$out": "fresh"}])
    docs = list(db.fresh.find())
    assert len(docs) == 10 and all(isinstance(d["_id"], ObjectId) for d in docs)


def test_failed_out_leaves_the_old_target_intact(db, src):
    db.target.insert_many([{"_id": "a", "k": 1}, {"_id": "b", "k": 2}])
    before = list(db.target.find().sort("_id", 1))
    # Two results with the same _id.
    assert code_of(lambda: list(src.aggregate([{"$project": {"_id": "$k"}}, {"$out": "target"}]))) == 11000
    assert list(db.target.find().sort("_id", 1)) == before
    # A unique index of the target the results violate.
    db.target.create_index([("k", 1)], unique=True)
    assert code_of(lambda: list(src.aggregate([{"$out": "target"}]))) == 11000
    assert list(db.target.find().sort("_id", 1)) == before
    # An expression that fails halfway.
    assert code_of(lambda: list(src.aggregate([{"$project": {"r": {"$divide": [1, "$k"]}}}, {"$out": "target"}]))) == 2
    assert list(db.target.find().sort("_id", 1)) == before
    assert tmp_collections(db) == []


def test_out_drops_what_a_crashed_out_left_a_day_ago(new_server):
    t = new_server()
    t.start()
    c = t.client()
    d = c.leftovers
    d.src.insert_one({"_id": 1})
    d.command("create", "tmp.agg_out.crashed")
    d.command("create", "tmp.agg_out.running")
    with open(os.path.join(t.data_dir, "postgres.socketdir")) as f:
        socket_dir = f.read().strip()
    subprocess.run(["psql", f"host={socket_dir} port=5432 user=postgres dbname=tierdb sslmode=disable", "-qc",
                    "UPDATE tierdb.collections SET created = now() - interval '25 hours' WHERE name = 'tmp.agg_out.crashed'"],
                   check=True, capture_output=True)
    list(d.src.aggregate([{"$out": "copy"}]))
    names = set(d.list_collection_names())
    assert "tmp.agg_out.crashed" not in names and {"tmp.agg_out.running", "copy", "src"} <= names
    c.close()


def test_out_to_another_database(db, src, client):
    other = client[db.name + "_o"]
    try:
        src.aggregate([{"$match": {"_id": {"$lt": 3}}}, {"$out": {"db": other.name, "coll": "copy"}}])
        assert [d["_id"] for d in other.copy.find().sort("_id", 1)] == [0, 1, 2]
    finally:
        client.drop_database(other.name)


def test_out_and_merge_are_refused_where_mongodb_refuses_them(db, src):
    def run(pipeline):
        return code_of(lambda: list(src.aggregate(pipeline)))
    for stage in ({"$out": "t"}, {"$merge": {"into": "t"}}):
        assert run([stage, {"$match": {}}]) == 40601
        assert run([{"$facet": {"a": [stage]}}]) == 40600
        assert run([{"$lookup": {"from": "src", "pipeline": [stage], "as": "x"}}]) == 51047
        assert run([{"$unionWith": {"coll": "src", "pipeline": [stage]}}]) == 31441
    assert run([{"$out": 1}]) == 16990
    assert run([{"$out": "system.x"}]) == 17385
    db.create_collection("capped", capped=True, size=4096)
    assert run([{"$out": "capped"}]) == 17152
    assert db.capped.options().get("capped") is True
    assert run([{"$out": {"coll": "t"}}]) == 40414
    assert run([{"$merge": {"into": "t", "whenMatched": "frob"}}]) == 2
    assert run([{"$merge": {"into": "t", "whenNotMatched": "frob"}}]) == 2
    assert run([{"$merge": {"into": "t", "let": {"a": 1}}}]) == 51199
    assert run([{"$merge": {"into": "t", "whenMatched": [{"$group": {"_id": 1}}]}}]) == 72
    assert run([{"$merge": {"into": "t", "frob": 1}}]) == 40415
    assert "t" not in db.list_collection_names()
    # Inside a transaction.
    with db.client.start_session() as s:
        s.start_transaction()
        with pytest.raises(OperationFailure) as e:
            list(src.aggregate([{"$out": "t"}], session=s))
        assert e.value.code == 263
        s.abort_transaction()


# --- $merge -----------------------------------------------------------------

def test_merge_default_merges_matches_and_inserts_the_rest(db, src):
    db.t.insert_many([{"_id": 1, "keep": "me", "v": -1}, {"_id": 100, "other": True}])
    assert list(src.aggregate([{"$match": {"_id": {"$lt": 3}}}, {"$merge": "t"}])) == []
    assert list(db.t.find().sort("_id", 1)) == [
        {"_id": 0, "k": 0, "v": 0},
        {"_id": 1, "keep": "me", "v": 10, "k": 1},
        {"_id": 2, "k": 2, "v": 20},
        {"_id": 100, "other": True},
    ]


@pytest.mark.parametrize("when,expect1", [
    ("replace", {"_id": 1, "k": 1, "v": 10}),
    ("keepExisting", {"_id": 1, "keep": "me", "v": -1}),
])
def test_merge_when_matched_modes(db, src, when, expect1):
    db.t.insert_one({"_id": 1, "keep": "me", "v": -1})
    src.aggregate([{"$match": {"_id": {"$lt": 3}}}, {"$merge": {"into": "t", "whenMatched": when}}])
    assert db.t.find_one({"_id": 1}) == expect1
    assert db.t.count_documents({}) == 3


def test_merge_fail_modes(db, src):
    db.t.insert_one({"_id": 1, "v": -1})
    assert code_of(lambda: list(src.aggregate([{"$merge": {"into": "t", "whenMatched": "fail"}}]))) == 11000
    assert db.t.find_one({"_id": 1}) == {"_id": 1, "v": -1}
    assert code_of(lambda: list(src.aggregate([{"$merge": {"into": "t", "whenNotMatched": "fail"}}]))) == 13113
    db.t.drop()
    db.t.insert_one({"_id": 1, "v": -1})
    src.aggregate([{"$merge": {"into": "t", "whenNotMatched": "discard"}}])
    assert list(db.t.find()) == [{"_id": 1, "k": 1, "v": 10}]


def test_merge_pipeline_with_new_and_let(db, src):
    db.t.insert_many([{"_id": 1, "total": 5}, {"_id": 2, "total": 7}])
    src.aggregate([
        {"$match": {"_id": {"$in": [1, 2, 3]}}},
        {"$merge": {"into": "t", "let": {"add": "$v"},
                    "whenMatched": [{"$set": {"total": {"$add": ["$total", "$$add"]}, "k": "$$new.k"}}]}},
    ])
    assert list(db.t.find().sort("_id", 1)) == [
        {"_id": 1, "total": 15, "k": 1}, {"_id": 2, "total": 27, "k": 2}, {"_id": 3, "k": 0, "v": 30}]


def test_merge_on_other_fields_needs_a_unique_index(db, src):
    db.t.insert_one({"_id": "x", "k": 1, "name": "one"})
    pipeline = [{"$group": {"_id": "$k", "n": {"$sum": 1}}}, {"$project": {"_id": 0, "k": "$_id", "n": 1}},
                {"$merge": {"into": "t", "on": "k"}}]
    assert code_of(lambda: list(src.aggregate(pipeline))) == 51183
    assert code_of(lambda: list(src.aggregate(pipeline[:2] + [{"$merge": {"into": "nothere", "on": "k"}}]))) == 51183
    db.t.create_index([("k", 1)], unique=True, sparse=True, name="k_sparse")
    assert code_of(lambda: list(src.aggregate(pipeline))) == 51183
    db.t.drop_index("k_sparse")
    db.t.create_index([("k", 1)], unique=True)
    src.aggregate(pipeline)
    docs = {d["k"]: d for d in db.t.find()}
    assert docs[1] == {"_id": "x", "k": 1, "name": "one", "n": 3}
    assert docs[0]["n"] == 4 and docs[2]["n"] == 3 and isinstance(docs[0]["_id"], ObjectId)
    # A result without the 'on' field.
    assert code_of(lambda: list(src.aggregate([{"$project": {"_id": 0, "v": 1}}, {"$merge": {"into": "t", "on": "k"}}]))) == 51132
    # Changing the _id of the matched document.
    assert code_of(lambda: list(src.aggregate([{"$match": {"_id": 1}}, {"$merge": {"into": "t", "on": "k"}}]))) == 66


def test_merge_into_another_database_and_the_same_collection(db, src, client):
    other = client[db.name + "_m"]
    try:
        src.aggregate([{"$match": {"k": 0}}, {"$merge": {"into": {"db": other.name, "coll": "m"}}}])
        assert other.m.count_documents({}) == 4
    finally:
        client.drop_database(other.name)
    src.aggregate([{"$project": {"double": {"$multiply": ["$v", 2]}}}, {"$merge": "src"}])
    assert src.find_one({"_id": 3}) == {"_id": 3, "k": 0, "v": 30, "double": 60}


def test_out_and_merge_need_write_rights_on_the_target(new_server):
    pw = "adm-out-test"
    t = new_server(env={"TIERDB_ADMIN_PASSWORD": pw}, extra_args=["--admin-user", "admin"])
    t.start()
    admin = t.client(username="admin", password=pw)
    shop = admin.shop
    shop.orders.insert_many([{"_id": i} for i in range(3)])
    shop.command("createUser", "reader", pwd=pw, roles=["read"])
    shop.command("createUser", "writer", pwd=pw, roles=["readWrite"])
    reader = t.client(username="reader", password=pw, authSource="shop")
    writer = t.client(username="writer", password=pw, authSource="shop")
    for stage in ({"$out": "copy"}, {"$merge": "copy"}):
        with pytest.raises(OperationFailure) as e:
            list(reader.shop.orders.aggregate([stage]))
        assert e.value.code == 13
        assert "copy" not in shop.list_collection_names()
    list(writer.shop.orders.aggregate([{"$out": "copy"}]))
    list(writer.shop.orders.aggregate([{"$merge": "copy2"}]))
    assert shop.copy.count_documents({}) == 3 and shop.copy2.count_documents({}) == 3
    # A view must not let its creator read what it could not.
    shop.secret.insert_one({"_id": "s"})
    shop.command("createRole", "viewMaker", roles=[], privileges=[
        {"resource": {"db": "shop", "collection": ""}, "actions": ["createCollection"]},
        {"resource": {"db": "shop", "collection": "orders"}, "actions": ["find"]},
        {"resource": {"db": "shop", "collection": "peek"}, "actions": ["find"]}])
    shop.command("createUser", "maker", pwd=pw, roles=["viewMaker"])
    maker = t.client(username="maker", password=pw, authSource="shop")
    with pytest.raises(OperationFailure) as e:
        maker.shop.command("create", "peek", viewOn="secret")
    assert e.value.code == 13
    maker.shop.command("create", "peek", viewOn="orders", pipeline=[{"$match": {"_id": {"$lt": 2}}}])
    assert list(maker.shop.peek.find()) == [{"_id": 0}, {"_id": 1}]
    maker.close()
    reader.close()
    writer.close()
    admin.close()


# --- views ------------------------------------------------------------------

def test_view_reads_run_its_pipeline(db, src):
    db.create_collection("big", viewOn="src", pipeline=[{"$match": {"v": {"$gte": 30}}}, {"$set": {"double": {"$multiply": ["$v", 2]}}}])
    v = db.big
    assert [d["_id"] for d in v.find()] == [3, 4, 5, 6, 7, 8, 9]
    assert list(v.find({"k": 1}, {"_id": 1, "double": 1}).sort("_id", -1).skip(1).limit(1)) == [{"_id": 4, "double": 80}]
    assert v.count_documents({}) == 7 and v.count_documents({"k": 0}) == 3
    assert v.distinct("k") == [0, 1, 2] and v.distinct("k", {"_id": {"$lt": 5}}) == [0, 1]
    assert list(v.aggregate([{"$group": {"_id": None, "s": {"$sum": "$double"}}}])) == [{"_id": None, "s": 840}]
    # explain shows the aggregation a find or count on a view runs.
    plan = db.command("explain", {"find": "big", "filter": {"k": 1}})
    assert [list(st)[0] for st in plan["stages"]] == ["$cursor", "$set", "$match"]
    plan = db.command("explain", {"count": "big", "query": {"k": 1}})
    assert [list(st)[0] for st in plan["stages"]] == ["$cursor", "$set", "$match", "$count"]
    # A view on the view.
    db.create_collection("bigodd", viewOn="big", pipeline=[{"$match": {"k": 1}}, {"$project": {"v": 1}}])
    assert list(db.bigodd.find()) == [{"_id": 4, "v": 40}, {"_id": 7, "v": 70}]
    # The view reads what is there now.
    src.insert_one({"_id": 10, "k": 1, "v": 100})
    assert [d["_id"] for d in db.bigodd.find()] == [4, 7, 10]
    # $lookup and $unionWith read views too.
    joined = list(src.aggregate([{"$match": {"_id": {"$in": [1, 4]}}},
                                 {"$lookup": {"from": "bigodd", "localField": "_id", "foreignField": "_id", "as": "m"}}]))
    assert [d["m"] for d in joined] == [[], [{"_id": 4, "v": 40}]]
    assert len(list(src.aggregate([{"$unionWith": "bigodd"}]))) == 14
    # Many results come back in batches.
    src.insert_many([{"_id": i, "k": 1, "v": 1000} for i in range(11, 511)])
    assert len(list(db.bigodd.find().batch_size(50))) == 503


def test_views_are_listed_and_refuse_writes(db, src):
    pipeline = [{"$match": {"k": 1}}]
    db.command("create", "ones", viewOn="src", pipeline=pipeline)
    infos = {c["name"]: c for c in db.list_collections()}
    assert infos["ones"]["type"] == "view"
    assert infos["ones"]["options"] == {"viewOn": "src", "pipeline": pipeline}
    assert infos["ones"]["info"]["readOnly"] is True
    assert infos["src"]["type"] == "collection"
    assert [c["name"] for c in db.list_collections(filter={"type": "view"})] == ["ones"]
    v = db.ones
    for write in (lambda: v.insert_one({"_id": 99}), lambda: v.update_one({}, {"$set": {"a": 1}}),
                  lambda: v.delete_many({}), lambda: v.find_one_and_delete({}),
                  lambda: v.create_index([("a", 1)]), lambda: list(v.list_indexes())):
        assert code_of(write) == 166
    assert code_of(lambda: list(src.aggregate([{"$out": "ones"}]))) == 166
    assert code_of(lambda: list(src.aggregate([{"$merge": "ones"}]))) == 166
    assert src.count_documents({}) == 10
    # The name is taken.
    assert code_of(lambda: db.command("create", "ones")) == 48
    assert code_of(lambda: db.command("create", "ones", viewOn="src")) == 48
    assert code_of(lambda: db.command("create", "src", viewOn="ones")) == 48
    # Dropping the view leaves the collection.
    v.drop()
    assert "ones" not in db.list_collection_names() and src.count_documents({}) == 10
    db.ones.insert_one({"_id": 1})
    assert db.ones.count_documents({}) == 1


def test_view_definitions_are_checked(db):
    assert code_of(lambda: db.command("create", "v", viewOn="src", pipeline=[{"$out": "x"}])) == 167
    assert code_of(lambda: db.command("create", "v", viewOn="src", pipeline=[{"$frob": 1}])) == 40324
    assert code_of(lambda: db.command("create", "v", viewOn="src", pipeline={"$match": {}})) == 14
    assert code_of(lambda: db.command("create", "v", viewOn="")) == 2
    assert code_of(lambda: db.command("create", "v", viewOn="v")) == 93
    assert code_of(lambda: db.command("create", "v", pipeline=[])) == 72
    assert code_of(lambda: db.command("create", "v", viewOn="src", storageEngine={"x": {}})) == 72
    assert "v" not in db.list_collection_names()
    db.command("create", "v0", viewOn="src")
    for i in range(1, 21):
        db.command("create", f"v{i}", viewOn=f"v{i - 1}")
    assert code_of(lambda: db.command("create", "v21", viewOn="v20")) == 170


def test_coll_mod_changes_a_view(db, src):
    db.command("create", "sel", viewOn="src", pipeline=[{"$match": {"k": 0}}])
    db.command("create", "top", viewOn="sel")
    assert db.top.count_documents({}) == 4
    db.command("collMod", "sel", pipeline=[{"$match": {"k": 1}}, {"$limit": 2}])
    assert [d["_id"] for d in db.top.find()] == [1, 4]
    assert {c["name"]: c for c in db.list_collections()}["sel"]["options"]["pipeline"] == [{"$match": {"k": 1}}, {"$limit": 2}]
    db.command("collMod", "sel", viewOn="other", pipeline=[])
    assert db.top.count_documents({}) == 0
    # A cycle, a bad pipeline, an unknown option: refused, the view unchanged.
    assert code_of(lambda: db.command("collMod", "sel", viewOn="top")) == 93
    assert code_of(lambda: db.command("collMod", "sel", pipeline=[{"$out": "x"}])) == 167
    assert code_of(lambda: db.command("collMod", "sel", validator={})) == 72
    assert {c["name"]: c for c in db.list_collections()}["sel"]["options"] == {"viewOn": "other", "pipeline": []}
    assert code_of(lambda: db.command("collMod", "src", pipeline=[])) == 72
    assert code_of(lambda: db.command("collMod", "nothere", pipeline=[])) == 72


def test_out_honours_the_write_concern(db, src):
    src.aggregate([{"$out": "copy"}], comment="wc")
    db.command("aggregate", "src", pipeline=[{"$out": "copy2"}], cursor={}, writeConcern={"w": 1, "j": True})
    assert db.copy2.count_documents({}) == 10
    # w: 2 without replicas cannot be satisfied.
    assert code_of(lambda: db.command("aggregate", "src", pipeline=[{"$merge": "copy3"}], cursor={}, writeConcern={"w": 2})) == 100


def test_views_survive_a_restart_and_drop_database(new_server):
    t = new_server()
    t.start()
    c = t.client()
    c.vdb.src.insert_many([{"_id": i} for i in range(5)])
    c.vdb.command("create", "few", viewOn="src", pipeline=[{"$match": {"_id": {"$lt": 2}}}])
    c.close()
    t.stop()
    t.start()
    c = t.client()
    assert list(c.vdb.few.find()) == [{"_id": 0}, {"_id": 1}]
    c.drop_database("vdb")
    assert "few" not in c.vdb.list_collection_names()
    c.vdb.few.insert_one({"_id": "now a collection"})
    assert c.vdb.few.count_documents({}) == 1
    c.close()


# --- memory -----------------------------------------------------------------

def test_sort_and_group_spill_past_the_memory_limit_unless_disk_use_is_refused(db):
    db.one.insert_one({"_id": 1})
    # 300,000 documents of 400 bytes and more: past 100 MB as $sort counts
    # them.
    pipeline = [{"$project": {"pad": {"$literal": "x" * 400}, "r": {"$range": [0, 300_000]}}}, {"$unwind": "$r"},
                {"$sort": {"r": -1}}, {"$skip": 299_997}, {"$project": {"_id": 0, "r": 1}}]
    bottom = [{"r": 2}, {"r": 1}, {"r": 0}]
    assert list(db.one.aggregate(pipeline, allowDiskUse=True)) == bottom
    assert list(db.one.aggregate(pipeline)) == bottom  # MongoDB 6.0's default allows disk use
    with pytest.raises(OperationFailure) as e:
        list(db.one.aggregate(pipeline, allowDiskUse=False))
    assert e.value.code == 292
    # A $limit right after the $sort (or after its $skip) makes it keep only
    # that many documents, as MongoDB's coalesced $sort+$limit: no disk.
    top = [{"r": 299_999}, {"r": 299_998}, {"r": 299_997}]
    limited = pipeline[:3] + [{"$limit": 3}, pipeline[4]]
    assert list(db.one.aggregate(limited, allowDiskUse=False)) == top
    limited = pipeline[:3] + [{"$skip": 1}, {"$limit": 2}, pipeline[4]]
    assert list(db.one.aggregate(limited, allowDiskUse=False)) == top[1:]
    # $group spills the documents of groups it cannot hold and groups them
    # in a later pass.
    group = pipeline[:2] + [{"$group": {"_id": "$r", "pads": {"$push": "$pad"}}}, {"$count": "n"}]
    assert list(db.one.aggregate(group)) == [{"n": 300_000}]
    with pytest.raises(OperationFailure) as e:
        list(db.one.aggregate(group, allowDiskUse=False))
    assert e.value.code == 292
    # The other blocking stages do not spill: with disk use allowed the
    # error says so.
    windows = pipeline[:2] + [{"$setWindowFields": {"output": {"n": {"$documentNumber": {}}}}}, {"$limit": 1}]
    with pytest.raises(OperationFailure) as e:
        list(db.one.aggregate(windows, allowDiskUse=True))
    assert e.value.code == 146 and "spills only $sort and $group" in str(e.value), e.value.details
