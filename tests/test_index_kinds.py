"""Index kinds and createIndexes specifications, checked against MongoDB's
documented semantics: specification errors and codes, listIndexes options,
partial, sparse, hidden, hashed and TTL indexes, collMod."""
import datetime
import time

import pytest
from bson import Int64
from pymongo import ASCENDING, HASHED
from pymongo.errors import BulkWriteError, DuplicateKeyError, OperationFailure, WriteError


def code_of(ei):
    return ei.value.code, ei.value.details.get("codeName")


def create(db, coll, *specs):
    return db.command("createIndexes", coll, indexes=list(specs))


def infos(coll):
    return {ix["name"]: ix for ix in coll.list_indexes()}


def plan(db, coll, flt):
    p = db.command("explain", {"find": coll, "filter": flt})["queryPlanner"]["winningPlan"]["plan"]
    assert isinstance(p, str) and p
    return p


def uses_index(p):
    return any(s in p for s in ("Index Scan", "Index Only Scan", "Bitmap Index Scan")) and "Seq Scan" not in p


# --- createIndexes specifications ------------------------------------------------

def test_name_is_required(db):
    with pytest.raises(OperationFailure) as ei:
        create(db, "c", {"key": {"a": 1}})
    assert code_of(ei) == (9, "FailedToParse")
    assert "'name' field is a required property" in str(ei.value)


def test_key_is_required(db):
    with pytest.raises(OperationFailure) as ei:
        create(db, "c", {"name": "a_1"})
    assert code_of(ei) == (9, "FailedToParse")
    with pytest.raises(OperationFailure) as ei:
        db.command("createIndexes", "c")  # no indexes at all
    assert ei.value.code == 40414
    with pytest.raises(OperationFailure) as ei:
        db.command("createIndexes", "c", indexes=[])
    assert ei.value.code == 2


@pytest.mark.parametrize("value", [0, True, {"x": 1}, None, [1]])
def test_bad_key_values(db, value):
    with pytest.raises(OperationFailure) as ei:
        create(db, "c", {"key": {"a": value}, "name": "ix"})
    assert code_of(ei) == (67, "CannotCreateIndex")


def test_unknown_index_plugin(db):
    with pytest.raises(OperationFailure) as ei:
        create(db, "c", {"key": {"a": "nosuchkind"}, "name": "ix"})
    assert code_of(ei) == (67, "CannotCreateIndex")
    assert "Unknown index plugin" in str(ei.value)


def test_unknown_option(db):
    with pytest.raises(OperationFailure) as ei:
        create(db, "c", {"key": {"a": 1}, "name": "ix", "bogus": 1})
    assert code_of(ei) == (197, "InvalidIndexSpecificationOption")


def test_unsupported_kinds_are_refused(db):
    for key in ({"a": "2dsphere"}, {"$**": 1}):
        with pytest.raises(OperationFailure) as ei:
            create(db, "c", {"key": key, "name": "ix"})
        assert ei.value.code == 238
    assert list(infos(db.c)) in ([], ["_id_"])


def test_same_keys_under_another_name(db):
    create(db, "c", {"key": {"a": 1}, "name": "first"})
    with pytest.raises(OperationFailure) as ei:
        create(db, "c", {"key": {"a": 1}, "name": "second"})
    assert code_of(ei) == (85, "IndexOptionsConflict")
    # Two specs of one request clash the same way.
    with pytest.raises(OperationFailure) as ei:
        create(db, "d", {"key": {"a": 1}, "name": "x"}, {"key": {"a": 1}, "name": "y"})
    assert code_of(ei) == (85, "IndexOptionsConflict")


def test_same_name_other_keys(db):
    create(db, "c", {"key": {"a": 1}, "name": "ix"})
    with pytest.raises(OperationFailure) as ei:
        create(db, "c", {"key": {"b": 1}, "name": "ix"})
    assert code_of(ei) == (86, "IndexKeySpecsConflict")


def test_same_name_same_keys_other_options(db):
    create(db, "c", {"key": {"a": 1}, "name": "ix", "expireAfterSeconds": 100})
    with pytest.raises(OperationFailure) as ei:
        create(db, "c", {"key": {"a": 1}, "name": "ix", "expireAfterSeconds": 200})
    assert code_of(ei) == (85, "IndexOptionsConflict")
    # Unique is part of the signature: same name, other signature.
    with pytest.raises(OperationFailure) as ei:
        create(db, "c", {"key": {"a": 1}, "name": "ix", "unique": True, "expireAfterSeconds": 100})
    assert code_of(ei) == (86, "IndexKeySpecsConflict")
    # The very same specification again is a no-op.
    r = create(db, "c", {"key": {"a": 1}, "name": "ix", "expireAfterSeconds": 100})
    assert r["numIndexesBefore"] == r["numIndexesAfter"] == 2


def test_same_keys_other_signature_coexist(db):
    """MongoDB identifies an index by keys, unique, sparse and partial filter."""
    create(db, "c", {"key": {"a": 1}, "name": "plain"})
    create(db, "c", {"key": {"a": 1}, "name": "part", "partialFilterExpression": {"b": {"$gt": 5}}})
    create(db, "c", {"key": {"a": 1}, "name": "sp", "sparse": True})
    assert set(infos(db.c)) == {"_id_", "plain", "part", "sp"}
    with pytest.raises(OperationFailure) as ei:
        db.command("dropIndexes", "c", index={"a": 1})
    assert code_of(ei) == (181, "AmbiguousIndexKeyPattern")
    with pytest.raises(OperationFailure) as ei:
        db.command("collMod", "c", index={"keyPattern": {"a": 1}, "hidden": True})
    assert code_of(ei) == (181, "AmbiguousIndexKeyPattern")
    db.c.drop_index("part")
    assert set(infos(db.c)) == {"_id_", "plain", "sp"}


def test_list_indexes_shows_every_option(db):
    create(db, "c",
           {"key": {"a": 1}, "name": "a_part", "unique": True, "partialFilterExpression": {"a": {"$exists": True}, "n": {"$gte": 3}}},
           {"key": {"b": -1}, "name": "b_sparse", "sparse": True, "hidden": True},
           {"key": {"t": 1}, "name": "t_ttl", "expireAfterSeconds": 3600},
           {"key": {"h": "hashed"}, "name": "h_hashed"})
    ix = infos(db.c)
    assert ix["a_part"]["unique"] is True
    assert ix["a_part"]["partialFilterExpression"] == {"a": {"$exists": True}, "n": {"$gte": 3}}
    assert ix["b_sparse"]["key"] == {"b": -1}
    assert ix["b_sparse"]["sparse"] is True and ix["b_sparse"]["hidden"] is True
    assert ix["t_ttl"]["expireAfterSeconds"] == 3600
    assert ix["h_hashed"]["key"] == {"h": "hashed"}
    assert "unique" not in ix["t_ttl"] and "sparse" not in ix["t_ttl"] and "hidden" not in ix["t_ttl"]


@pytest.mark.parametrize("spec", [
    {"sparse": True, "partialFilterExpression": {"a": 1}},               # cannot mix
    {"partialFilterExpression": {"a": {"$ne": 1}}},                      # operator not allowed
    {"partialFilterExpression": {"a": {"$exists": False}}},              # only $exists: true
    {"partialFilterExpression": {"$nor": [{"a": 1}]}},
    {"expireAfterSeconds": -1},
    {"expireAfterSeconds": "soon"},
])
def test_bad_options(db, spec):
    with pytest.raises(OperationFailure) as ei:
        create(db, "c", {"key": {"a": 1}, "name": "ix", **spec})
    assert ei.value.code == 67


def test_compound_ttl_refused(db):
    with pytest.raises(OperationFailure) as ei:
        create(db, "c", {"key": {"a": 1, "b": 1}, "name": "ix", "expireAfterSeconds": 10})
    assert ei.value.code == 67


# --- partial indexes ---------------------------------------------------------------

def test_partial_unique_only_among_matching(db):
    """Uniqueness applies only to documents the filter matches (MongoDB docs)."""
    db.c.create_index("user", unique=True, partialFilterExpression={"age": {"$gte": 21}})
    db.c.insert_many([{"user": "ann", "age": 30}, {"user": "ann", "age": 10}, {"user": "ann"}])
    with pytest.raises(DuplicateKeyError):
        db.c.insert_one({"user": "ann", "age": 21})
    db.c.insert_one({"user": "bob", "age": 21})
    # An update that brings a document into the filter is checked too.
    with pytest.raises(DuplicateKeyError):
        db.c.update_one({"age": 10}, {"$set": {"age": 50}})
    db.c.update_one({"age": 10}, {"$set": {"user": "cid", "age": 50}})
    assert db.c.count_documents({"user": "ann"}) == 2
    assert db.c.count_documents({"user": "cid", "age": 50}) == 1


def test_partial_index_used_only_when_query_implies_filter(db):
    db.c.insert_many([{"_id": i, "a": i % 500, "b": i % 10} for i in range(4000)])
    db.c.create_index("a", partialFilterExpression={"b": {"$gt": 5}})

    def expect(bmin, strict):
        return [i for i in range(4000) if i % 500 == 7 and (i % 10 > bmin if strict else i % 10 >= bmin)]

    implied = {"a": 7, "b": {"$gt": 6}}
    assert uses_index(plan(db, "c", implied))
    assert sorted(d["_id"] for d in db.c.find(implied)) == expect(6, True)
    assert uses_index(plan(db, "c", {"a": 7, "b": 9}))
    # Not implied: the index lacks documents the query matches, so it must
    # not be used, and every match comes back.
    for flt, want in (({"a": 7}, expect(-1, True)),
                      ({"a": 7, "b": {"$gt": 2}}, expect(2, True)),
                      ({"a": 7, "b": {"$gte": 5}}, expect(5, False))):
        assert "Seq Scan" in plan(db, "c", flt)
        assert sorted(d["_id"] for d in db.c.find(flt)) == want


def test_partial_equality_filter(db):
    db.c.insert_many([{"_id": i, "a": i, "kind": "x" if i % 2 else "y"} for i in range(3000)])
    db.c.create_index("a", partialFilterExpression={"kind": "x"})
    assert uses_index(plan(db, "c", {"a": 11, "kind": "x"}))
    assert [d["_id"] for d in db.c.find({"a": {"$lt": 10}, "kind": "x"})] == [1, 3, 5, 7, 9]
    assert [d["_id"] for d in db.c.find({"a": {"$lt": 4}})] == [0, 1, 2, 3]


# --- sparse indexes ----------------------------------------------------------------

def test_sparse_unique_allows_many_missing(db):
    """A unique sparse index refuses duplicates of present values only."""
    db.c.create_index("score", unique=True, sparse=True)
    db.c.insert_many([{"_id": 1}, {"_id": 2}, {"_id": 3, "score": 1}, {"_id": 4, "score": None}])
    with pytest.raises(DuplicateKeyError):
        db.c.insert_one({"_id": 5, "score": 1})
    # null is a present value: a second null clashes.
    with pytest.raises(DuplicateKeyError):
        db.c.insert_one({"_id": 6, "score": None})
    db.c.insert_one({"_id": 7, "other": 1})
    assert db.c.count_documents({}) == 5


def test_unique_non_sparse_refuses_second_missing(db):
    db.c.create_index("score", unique=True)
    db.c.insert_one({"_id": 1})
    with pytest.raises(DuplicateKeyError):
        db.c.insert_one({"_id": 2})


def test_sparse_index_build_over_existing_documents(db):
    db.c.insert_many([{"_id": 1}, {"_id": 2}, {"_id": 3, "e": "a"}])
    db.c.create_index("e", unique=True, sparse=True)
    with pytest.raises(DuplicateKeyError):
        db.c.insert_one({"e": "a"})
    db.d.insert_many([{"_id": 1}, {"_id": 2}])
    with pytest.raises(OperationFailure) as ei:
        db.d.create_index("e", unique=True)
    assert ei.value.code == 11000
    assert list(infos(db.d)) == ["_id_"]


def test_sparse_queries_stay_complete(db):
    db.c.insert_many([{"_id": i, "a": i} if i % 3 else {"_id": i} for i in range(3000)])
    db.c.create_index("a", sparse=True)
    assert uses_index(plan(db, "c", {"a": 5}))
    # A query that matches missing fields cannot use the sparse index.
    missing = sorted(d["_id"] for d in db.c.find({"a": None}))
    assert missing == [i for i in range(3000) if i % 3 == 0]
    assert db.c.count_documents({"a": {"$exists": False}}) == 1000
    assert db.c.count_documents({"a": {"$in": [None, 1, 2]}}) == 1002
    assert [d["_id"] for d in db.c.find({"a": {"$gte": 1, "$lte": 5}})] == [1, 2, 4, 5]


# --- hidden indexes ----------------------------------------------------------------

def test_hidden_index_not_used_but_unique_enforced(db):
    db.c.insert_many([{"_id": i, "a": i} for i in range(3000)])
    db.c.create_index("a", unique=True, hidden=True)
    assert "Seq Scan" in plan(db, "c", {"a": 5})
    with pytest.raises(DuplicateKeyError):
        db.c.insert_one({"a": 5})
    r = db.command("collMod", "c", index={"name": "a_1", "hidden": False})
    assert r["hidden_old"] is True and r["hidden_new"] is False
    assert uses_index(plan(db, "c", {"a": 5}))
    assert "hidden" not in infos(db.c)["a_1"]
    db.command("collMod", "c", index={"keyPattern": {"a": 1}, "hidden": True})
    assert infos(db.c)["a_1"]["hidden"] is True
    assert "Seq Scan" in plan(db, "c", {"a": 5})
    assert db.c.find_one({"a": 5})["_id"] == 5


def test_hidden_index_maintained_while_hidden(db):
    db.c.create_index("a", hidden=True)
    db.c.insert_many([{"_id": i, "a": i % 100} for i in range(3000)])
    db.c.update_many({"a": 1}, {"$set": {"a": 1000}})
    db.command("collMod", "c", index={"name": "a_1", "hidden": False})
    assert uses_index(plan(db, "c", {"a": 1000}))
    assert db.c.count_documents({"a": 1000}) == 30
    assert db.c.count_documents({"a": 1}) == 0


def test_collmod_errors(db):
    db.c.create_index("a")
    with pytest.raises(OperationFailure) as ei:
        db.command("collMod", "c", index={"name": "nope", "hidden": True})
    assert code_of(ei) == (27, "IndexNotFound")
    with pytest.raises(OperationFailure) as ei:
        db.command("collMod", "c", validator={"a": {"$gt": 1}})
    assert ei.value.code == 238
    with pytest.raises(OperationFailure) as ei:
        create(db, "c", {"key": {"_id": 1}, "name": "_id_", "hidden": True})
    assert ei.value.code == 2


def test_a_descending_id_index_is_refused_not_folded_into_the_id_index(db):
    # MongoDB builds {_id: -1} as an index of its own; tierdb says it does
    # not rather than answering ok with nothing listed.
    db.c.insert_one({"_id": 1})
    with pytest.raises(OperationFailure) as ei:
        db.c.create_index([("_id", -1)])
    assert ei.value.code == 238
    assert list(infos(db.c)) == ["_id_"]
    db.c.create_index([("_id", 1)])  # the _id index itself: ok, nothing new
    assert list(infos(db.c)) == ["_id_"]


# --- hashed indexes ----------------------------------------------------------------

def test_hashed_equality(db):
    db.c.insert_many([{"_id": i, "h": i % 700} for i in range(3500)])
    db.c.create_index([("h", HASHED)])
    assert uses_index(plan(db, "c", {"h": 5}))
    assert uses_index(plan(db, "c", {"h": {"$in": [5, 6]}}))
    assert sorted(d["_id"] for d in db.c.find({"h": 5})) == [5, 705, 1405, 2105, 2805]
    # Equal values of other numeric types find the same documents.
    assert db.c.count_documents({"h": 5.0}) == 5
    assert db.c.count_documents({"h": Int64(5)}) == 5
    # Ranges cannot use a hashed index, but still answer right.
    assert "Seq Scan" in plan(db, "c", {"h": {"$lt": 2}})
    assert db.c.count_documents({"h": {"$lt": 2}}) == 10
    db.c.insert_one({"_id": "m"})
    assert [d["_id"] for d in db.c.find({"h": None})] == ["m"]


def test_hashed_refuses_arrays_and_unique(db):
    db.c.create_index([("h", HASHED)])
    with pytest.raises(WriteError) as ei:
        db.c.insert_one({"h": [1, 2]})
    assert ei.value.code == 16766
    db.c.insert_one({"_id": 1, "h": 1})
    with pytest.raises(WriteError) as ei:
        db.c.update_one({"_id": 1}, {"$set": {"h": [3]}})
    assert ei.value.code == 16766
    assert db.c.find_one({"_id": 1})["h"] == 1
    with pytest.raises(OperationFailure) as ei:
        create(db, "d", {"key": {"h": "hashed"}, "name": "u", "unique": True})
    assert ei.value.code == 67
    db.e.insert_one({"h": [1]})
    with pytest.raises(OperationFailure) as ei:
        db.e.create_index([("h", HASHED)])
    assert ei.value.code == 16766


def test_hashed_compound(db):
    db.c.insert_many([{"_id": i, "a": i % 10, "b": i} for i in range(100)])
    db.c.create_index([("a", HASHED), ("b", ASCENDING)])
    assert sorted(d["_id"] for d in db.c.find({"a": 3, "b": {"$lt": 50}})) == [3, 13, 23, 33, 43]
    with pytest.raises(OperationFailure) as ei:
        create(db, "c", {"key": {"a": "hashed", "b": "hashed"}, "name": "two"})
    assert ei.value.code == 31303


# --- TTL indexes -------------------------------------------------------------------

@pytest.fixture(scope="module")
def ttl_server(tierdb_bin):
    from conftest import Tierdb
    t = Tierdb(tierdb_bin, extra_args=["--ttl-monitor-interval", "1s"]).start()
    yield t
    t.cleanup()


def wait_for(pred, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(0.2)
    return pred()


def test_ttl_expires_documents(ttl_server):
    c = ttl_server.client()
    coll = c.ttl.events
    coll.drop()
    now = datetime.datetime.now(datetime.timezone.utc)
    old, fresh = now - datetime.timedelta(hours=2), now + datetime.timedelta(hours=2)
    coll.create_index("at", expireAfterSeconds=60)
    coll.insert_many([
        {"_id": "old", "at": old},
        {"_id": "fresh", "at": fresh},
        {"_id": "no_date", "at": "yesterday"},          # not a date: never expires
        {"_id": "missing"},
        {"_id": "array_old", "at": [fresh, old]},       # the earliest date decides
        {"_id": "array_fresh", "at": [fresh]},
    ])
    coll.insert_many([{"_id": i, "at": old} for i in range(1200)])   # several batches
    assert wait_for(lambda: coll.count_documents({}) == 4)
    assert sorted(d["_id"] for d in coll.find()) == ["array_fresh", "fresh", "missing", "no_date"]
    ttl = c.admin.command("serverStatus")["metrics"]["ttl"]
    assert ttl["deletedDocuments"] >= 1202 and ttl["passes"] >= 1
    c.close()


def test_ttl_partial_and_collmod(ttl_server):
    c = ttl_server.client()
    coll = c.ttl.part
    coll.drop()
    old = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=100)
    coll.create_index("at", expireAfterSeconds=3600, partialFilterExpression={"kind": "tmp"})
    coll.insert_many([{"_id": 1, "at": old, "kind": "tmp"}, {"_id": 2, "at": old, "kind": "keep"}])
    time.sleep(2.5)
    assert coll.count_documents({}) == 2          # not yet expired (an hour)
    r = c.ttl.command("collMod", "part", index={"keyPattern": {"at": 1}, "expireAfterSeconds": 10})
    assert r["expireAfterSeconds_old"] == 3600 and r["expireAfterSeconds_new"] == 10
    assert infos(coll)["at_1"]["expireAfterSeconds"] == 10
    assert wait_for(lambda: coll.count_documents({}) == 1)
    assert coll.find_one()["_id"] == 2           # outside the partial filter
    c.close()


def test_hidden_ttl_index_still_expires(ttl_server):
    """A hidden TTL index still expires documents (MongoDB docs, Hidden Indexes)."""
    c = ttl_server.client()
    coll = c.ttl.hidden
    coll.drop()
    coll.create_index("at", expireAfterSeconds=1, hidden=True)
    old = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)
    coll.insert_many([{"_id": 1, "at": old}, {"_id": 2, "at": "not a date"}])
    assert wait_for(lambda: coll.count_documents({}) == 1)
    assert coll.find_one()["_id"] == 2
    c.close()


def test_ttl_runs_at_low_tier(ttl_server):
    """The monitor's batches are admitted as low-tier work of user __ttl."""
    c = ttl_server.client()
    coll = c.ttl.tier
    coll.drop()
    coll.create_index("at", expireAfterSeconds=0)
    coll.insert_one({"at": datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=5)})
    assert wait_for(lambda: coll.count_documents({}) == 0)
    st = c.admin.command("qosStatus")

    def tier_users(node, found):
        """Users the fair gate saw, per tier name."""
        if isinstance(node, dict):
            for k, v in node.items():
                if isinstance(v, dict) and isinstance(v.get("users"), list):
                    found.setdefault(k, set()).update(u.get("user") for u in v["users"] if isinstance(u, dict))
                tier_users(v, found)
        elif isinstance(node, list):
            for v in node:
                tier_users(v, found)
        return found

    users = tier_users(st, {})
    assert "__ttl" in users.get("low", set()), users
    assert "__ttl" not in users.get("normal", set()) | users.get("high", set())
    c.close()


# --- unique index builds -------------------------------------------------------------

def test_unique_build_checks_array_elements(db):
    """Uniqueness is per array element, in a build as in later writes."""
    db.c.insert_many([{"_id": 1, "a": [1, 2]}, {"_id": 2, "a": [2, 3]}])
    with pytest.raises(OperationFailure) as ei:
        db.c.create_index("a", unique=True)
    assert ei.value.code == 11000
    assert list(infos(db.c)) == ["_id_"]
    db.c.delete_one({"_id": 2})
    db.c.insert_many([{"_id": 3, "a": [4, 4]}, {"_id": 4, "a": 5}, {"_id": 5}])
    db.c.create_index("a", unique=True)
    for doc in ({"a": [9, 1]}, {"a": 4}, {"a": 5}, {"a": None}):
        with pytest.raises(DuplicateKeyError):
            db.c.insert_one(doc)
    db.c.update_one({"_id": 1}, {"$set": {"a": [6]}})
    db.c.insert_one({"_id": 6, "a": [1, 2]})   # freed by the update
    assert db.c.count_documents({}) == 5


def test_unique_build_over_many_documents(db):
    db.c.insert_many([{"_id": i, "email": f"u{i}@x.org"} for i in range(12000)])
    db.c.create_index("email", unique=True)
    with pytest.raises(DuplicateKeyError):
        db.c.insert_one({"email": "u11999@x.org"})
    db.c.insert_one({"_id": 12000, "email": "new@x.org"})
    db.d.insert_many([{"_id": i, "email": f"u{i % 11999}@x.org"} for i in range(12000)])
    with pytest.raises(OperationFailure) as ei:
        db.d.create_index("email", unique=True)
    assert ei.value.code == 11000


# --- text indexes and $text ----------------------------------------------------------

from pymongo import TEXT  # noqa: E402


@pytest.fixture
def articles(db):
    db.a.insert_many([
        {"_id": 1, "title": "Coffee shop", "body": "the best coffee in town", "cat": "food"},
        {"_id": 2, "title": "Tea house", "body": "green tea and a little coffee", "cat": "food"},
        {"_id": 3, "title": "Running shoes", "body": "runners run every morning", "cat": "sport"},
        {"_id": 4, "title": "Le café", "body": "un café crème, s'il vous plaît", "cat": "food"},
        {"_id": 5, "title": "Nothing", "body": 42},
        {"_id": 6, "other": "coffee outside the indexed fields"},
    ])
    db.a.create_index([("title", TEXT), ("body", TEXT)], weights={"title": 10}, name="fts")
    return db.a


def ids(cursor):
    return sorted(d["_id"] for d in cursor)


def test_text_terms_are_ored_stemmed_and_case_insensitive(articles):
    assert ids(articles.find({"$text": {"$search": "coffee"}})) == [1, 2]
    assert ids(articles.find({"$text": {"$search": "COFFEE"}})) == [1, 2]
    assert ids(articles.find({"$text": {"$search": "tea shoes"}})) == [2, 3]
    assert ids(articles.find({"$text": {"$search": "shoe"}})) == [3]          # stemmed
    assert ids(articles.find({"$text": {"$search": "the and"}})) == []        # stop words only
    assert ids(articles.find({"$text": {"$search": "espresso"}})) == []


def test_text_diacritic_insensitive(articles):
    assert ids(articles.find({"$text": {"$search": "cafe"}})) == [4]
    assert ids(articles.find({"$text": {"$search": "CAFÉ"}})) == [4]


def test_text_phrases_and_negation(articles):
    assert ids(articles.find({"$text": {"$search": "\"green tea\""}})) == [2]
    assert ids(articles.find({"$text": {"$search": "\"tea green\""}})) == []
    # With a phrase, only documents holding it match; terms just score.
    assert ids(articles.find({"$text": {"$search": "shoes \"green tea\""}})) == [2]
    assert ids(articles.find({"$text": {"$search": "coffee -tea"}})) == [1]
    assert ids(articles.find({"$text": {"$search": "coffee -\"best coffee\""}})) == [2]
    assert ids(articles.find({"$text": {"$search": "coffee -\"coffee best\""}})) == [1, 2]


def test_text_score_projection_and_sort(articles):
    # The term in the heavier title outranks the same term in the body.
    rows = list(articles.find({"$text": {"$search": "coffee"}}, {"score": {"$meta": "textScore"}, "title": 1})
                .sort([("score", {"$meta": "textScore"})]))
    assert [r["_id"] for r in rows] == [1, 2]
    assert set(rows[0]) == {"_id", "title", "score"}
    assert rows[0]["score"] > rows[1]["score"] > 0
    top = list(articles.find({"$text": {"$search": "coffee tea"}}, {"s": {"$meta": "textScore"}})
               .sort([("s", {"$meta": "textScore"})]).limit(1))
    assert len(top) == 1 and top[0]["_id"] == 2 and top[0]["body"]   # both terms, one in the title
    # A score projection alone keeps the whole document.
    one = articles.find_one({"$text": {"$search": "running"}}, {"sc": {"$meta": "textScore"}})
    assert one["title"] == "Running shoes" and one["sc"] > 0
    # Sort by score then by another field; skip.
    rows = list(articles.find({"$text": {"$search": "coffee tea"}}).sort([("cat", 1), ("_id", -1)]).skip(1))
    assert [r["_id"] for r in rows] == [1]


def test_text_with_other_conditions_and_count(db, articles):
    assert ids(articles.find({"$text": {"$search": "coffee run"}, "cat": "sport"})) == [3]
    assert ids(articles.find({"$and": [{"$text": {"$search": "coffee"}}, {"_id": {"$gt": 1}}]})) == [2]
    assert db.command("count", "a", query={"$text": {"$search": "coffee"}})["n"] == 2
    assert sorted(articles.distinct("cat", {"$text": {"$search": "coffee run"}})) == ["food", "sport"]
    assert articles.distinct("cat", {"$text": {"$search": "run"}}) == ["sport"]
    assert articles.count_documents({"$text": {"$search": "coffee tea"}, "cat": "food"}) == 2
    rows = list(articles.aggregate([{"$match": {"$text": {"$search": "coffee run"}}},
                                    {"$group": {"_id": "$cat", "n": {"$sum": 1}}}, {"$sort": {"_id": 1}}]))
    assert rows == [{"_id": "food", "n": 2}, {"_id": "sport", "n": 1}]
    # Writes after the index build are indexed; updates re-index.
    articles.insert_one({"_id": 7, "title": "Coffee beans"})
    articles.update_one({"_id": 1}, {"$set": {"title": "Bakery", "body": "bread"}})
    assert ids(articles.find({"$text": {"$search": "coffee"}})) == [2, 7]
    articles.delete_one({"_id": 7})
    assert ids(articles.find({"$text": {"$search": "coffee"}})) == [2]


def test_text_cursor_batches(db):
    db.c.insert_many([{"_id": i, "t": f"word{i % 3} common"} for i in range(250)])
    db.c.create_index([("t", TEXT)])
    got = list(db.c.find({"$text": {"$search": "common"}}, batch_size=20))
    assert len(got) == 250 and len({d["_id"] for d in got}) == 250
    assert len(list(db.c.find({"$text": {"$search": "word1"}}).limit(7))) == 7


def test_text_errors(db, articles):
    db.other.insert_one({"x": "a"})
    with pytest.raises(OperationFailure) as ei:
        list(db.other.find({"$text": {"$search": "a"}}))
    assert code_of(ei) == (27, "IndexNotFound")
    with pytest.raises(OperationFailure) as ei:
        articles.create_index([("cat", TEXT)], name="second")
    assert code_of(ei) == (85, "IndexOptionsConflict")
    for opt in ("$caseSensitive", "$diacriticSensitive"):
        with pytest.raises(OperationFailure) as ei:
            list(articles.find({"$text": {"$search": "coffee", opt: True}}))
        assert ei.value.code == 238
    assert ids(articles.find({"$text": {"$search": "coffee", "$caseSensitive": False}})) == [1, 2]
    with pytest.raises(OperationFailure) as ei:
        list(articles.find({"$text": {"$search": "coffee", "$language": "klingon"}}))
    assert ei.value.code == 2
    with pytest.raises(OperationFailure) as ei:
        list(articles.find({"$or": [{"$text": {"$search": "coffee"}}, {"cat": "x"}]}))
    assert ei.value.code == 238
    with pytest.raises(OperationFailure) as ei:
        list(articles.find({"$text": {"$search": "a"}, "$and": [{"$text": {"$search": "b"}}]}))
    assert ei.value.code == 2
    with pytest.raises(OperationFailure):
        list(articles.find({}, {"s": {"$meta": "textScore"}}).sort([("s", {"$meta": "textScore"})]))
    with pytest.raises(OperationFailure) as ei:
        articles.aggregate([{"$match": {"cat": "food"}}, {"$match": {"$text": {"$search": "coffee"}}}])
    assert ei.value.code == 238
    with pytest.raises(WriteError) as ei:
        articles.insert_one({"title": "x", "language": "klingon"})
    assert ei.value.code == 17262


def find_scores(coll, search):
    """{_id: score} of find's textScore for a search."""
    return {d["_id"]: d["s"] for d in coll.find({"$text": {"$search": search}}, {"s": {"$meta": "textScore"}})}


def test_text_score_in_aggregation_project_addfields_sort(articles):
    want = find_scores(articles, "coffee tea")
    assert len(want) == 2 and want[2] > want[1] > 0
    rows = list(articles.aggregate([
        {"$match": {"$text": {"$search": "coffee tea"}}},
        {"$sort": {"score": {"$meta": "textScore"}}},
        {"$project": {"title": 1, "score": {"$meta": "textScore"}}},
    ]))
    assert [r["_id"] for r in rows] == [2, 1]
    assert {r["_id"]: r["score"] for r in rows} == want
    assert all(set(r) == {"_id", "title", "score"} for r in rows)
    # $addFields / $set, an expression over the score, and the score
    # carried through $unwind, $skip and $limit; no hidden field shows.
    rows = list(articles.aggregate([
        {"$match": {"$text": {"$search": "coffee tea"}}},
        {"$addFields": {"tags": ["x", "y"]}},
        {"$unwind": "$tags"},
        {"$set": {"s": {"$meta": "textScore"}, "twice": {"$multiply": [{"$meta": "textScore"}, 2]}}},
        {"$sort": {"_id": 1, "tags": 1}},
        {"$skip": 1},
        {"$limit": 2},
    ]))
    assert [(r["_id"], r["tags"]) for r in rows] == [(1, "y"), (2, "x")]
    for r in rows:
        assert r["s"] == want[r["_id"]] and r["twice"] == 2 * want[r["_id"]]
        assert set(r) == {"_id", "title", "body", "cat", "tags", "s", "twice"}
    # A score projection alone keeps the whole document, as in find.
    rows = list(articles.aggregate([{"$match": {"$text": {"$search": "running"}}},
                                    {"$project": {"sc": {"$meta": "textScore"}}}]))
    assert len(rows) == 1 and rows[0]["title"] == "Running shoes" and rows[0]["sc"] == find_scores(articles, "running")[3]
    # In an exclusion projection, and carried through $replaceRoot.
    rows = list(articles.aggregate([
        {"$match": {"$text": {"$search": "coffee tea"}}},
        {"$project": {"_id": 0, "body": 0, "score": {"$meta": "textScore"}, "cat": 0}},
        {"$replaceRoot": {"newRoot": {"t": "$title"}}},
        {"$addFields": {"s": {"$meta": "textScore"}}},
        {"$sort": {"t": 1}},
    ]))
    assert rows == [{"t": "Coffee shop", "s": want[1]}, {"t": "Tea house", "s": want[2]}]
    rows = list(articles.aggregate([{"$match": {"$text": {"$search": "coffee"}}}, {"$sort": {"_id": 1}},
                                    {"$project": {"_id": 0, "body": 0, "cat": 0, "score": {"$meta": "textScore"}}}]))
    coffee = find_scores(articles, "coffee")
    assert rows == [{"title": "Coffee shop", "score": coffee[1]}, {"title": "Tea house", "score": coffee[2]}]


def test_text_score_in_aggregation_sort_and_group(articles):
    articles.insert_many([{"_id": 10, "title": "tea", "cat": "drink"}, {"_id": 11, "body": "tea tea tea", "cat": "drink"}])
    want = find_scores(articles, "tea coffee")
    # Sort by score and then a field: the order find gives.
    by_find = [d["_id"] for d in articles.find({"$text": {"$search": "tea coffee"}}, {"s": {"$meta": "textScore"}})
               .sort([("s", {"$meta": "textScore"}), ("_id", -1)])]
    rows = list(articles.aggregate([
        {"$match": {"$text": {"$search": "tea coffee"}}},
        {"$sort": {"s": {"$meta": "textScore"}, "_id": -1}},
        {"$project": {"_id": 1}},
    ]))
    assert [r["_id"] for r in rows] == by_find == sorted(want, key=lambda i: (-want[i], -i))
    # With a later $match and a limit after the sort.
    rows = list(articles.aggregate([
        {"$match": {"$text": {"$search": "tea coffee"}, "cat": {"$ne": "sport"}}},
        {"$sort": {"s": {"$meta": "textScore"}, "_id": 1}},
        {"$limit": 1},
        {"$addFields": {"s": {"$meta": "textScore"}}},
    ]))
    top = max(want.values())
    assert len(rows) == 1 and rows[0]["s"] == top and want[rows[0]["_id"]] == top
    # $facet's sub-pipelines read it and sort by it.
    rows = list(articles.aggregate([
        {"$match": {"$text": {"$search": "tea coffee"}}},
        {"$facet": {"top": [{"$sort": {"s": {"$meta": "textScore"}, "_id": -1}}, {"$limit": 2},
                            {"$project": {"_id": 1, "s": {"$meta": "textScore"}}}],
                    "n": [{"$count": "n"}]}},
    ]))
    assert rows == [{"top": [{"_id": i, "s": want[i]} for i in by_find[:2]], "n": [{"n": len(want)}]}]
    # $group reads each document's score.
    rows = list(articles.aggregate([
        {"$match": {"$text": {"$search": "tea coffee"}}},
        {"$group": {"_id": "$cat", "total": {"$sum": {"$meta": "textScore"}}, "top": {"$max": {"$meta": "textScore"}},
                    "n": {"$sum": 1}}},
        {"$sort": {"_id": 1}},
    ]))
    cats = {1: "food", 2: "food", 10: "drink", 11: "drink"}
    assert {r["_id"] for r in rows} == {"drink", "food"}
    for r in rows:
        mine = [want[i] for i in want if cats[i] == r["_id"]]
        assert r["n"] == len(mine) and r["top"] == max(mine)
        assert abs(r["total"] - sum(mine)) < 1e-9
    # $bucket and $sortByCount group by it.
    edge = sorted(want.values())[len(want) // 2]
    rows = list(articles.aggregate([{"$match": {"$text": {"$search": "tea coffee"}}},
                                    {"$bucket": {"groupBy": {"$meta": "textScore"}, "boundaries": [0, edge, 1e9]}}]))
    assert rows == [{"_id": 0, "count": sum(v < edge for v in want.values())},
                    {"_id": edge, "count": sum(v >= edge for v in want.values())}]
    rows = list(articles.aggregate([{"$match": {"$text": {"$search": "tea coffee"}}}, {"$sortByCount": {"$meta": "textScore"}}]))
    assert sorted(r["_id"] for r in rows) == sorted(set(want.values()))


def test_text_score_in_aggregation_errors(articles):
    def code(pipeline):
        with pytest.raises(OperationFailure) as ei:
            list(articles.aggregate(pipeline))
        return ei.value.code
    text = {"$match": {"$text": {"$search": "coffee"}}}
    # Without $text: MongoDB's 40218.
    assert code([{"$project": {"s": {"$meta": "textScore"}}}]) == 40218
    assert code([{"$match": {"cat": "food"}}, {"$sort": {"s": {"$meta": "textScore"}}}]) == 40218
    assert code([{"$addFields": {"s": {"$meta": "textScore"}}}]) == 40218
    # Other keywords tierdb does not produce; unknown ones.
    assert code([text, {"$project": {"s": {"$meta": "searchScore"}}}]) == 238
    assert code([text, {"$sort": {"s": {"$meta": "indexKey"}}}]) == 238
    assert code([text, {"$addFields": {"s": {"$meta": "bogus"}}}]) == 17308
    # After a stage that does not carry the score (or in one tierdb does not give it to): refused.
    assert code([text, {"$group": {"_id": "$cat"}}, {"$project": {"s": {"$meta": "textScore"}}}]) == 238
    assert code([text, {"$group": {"_id": "$cat"}}, {"$sort": {"s": {"$meta": "textScore"}}}]) == 238
    assert code([text, {"$facet": {"f": [{"$project": {"s": {"$meta": "textScore"}}}]}},
                 {"$project": {"s": {"$meta": "textScore"}}}]) == 238
    assert code([text, {"$lookup": {"from": "b", "as": "x", "pipeline": [{"$project": {"s": {"$meta": "textScore"}}}]}}]) == 238
    assert code([text, {"$match": {"$expr": {"$gt": [{"$meta": "textScore"}, 0]}}}]) == 238
    # $text only in the first stage.
    assert code([{"$match": {"cat": "food"}}, {"$match": {"$text": {"$search": "coffee"}}}]) == 238


def test_text_languages(db):
    db.c.insert_many([
        {"_id": 1, "t": "Las casas blancas", "language": "spanish"},
        {"_id": 2, "t": "The white houses"},
        {"_id": 3, "t": "Les maisons", "lang": "fr"},
    ])
    db.c.create_index([("t", TEXT)])
    # Spanish stemming of the document and of the query: casa ~ casas.
    assert ids(db.c.find({"$text": {"$search": "casa", "$language": "spanish"}})) == [1]
    assert ids(db.c.find({"$text": {"$search": "house"}})) == [2]
    # "las" is a Spanish stop word, not an English one.
    assert ids(db.c.find({"$text": {"$search": "las", "$language": "spanish"}})) == []
    db.d.insert_many([{"_id": 1, "t": "Les maisons", "lang": "fr"}, {"_id": 2, "t": "the houses", "lang": "none"}])
    db.d.create_index([("t", TEXT)], language_override="lang", default_language="french")
    assert ids(db.d.find({"$text": {"$search": "maison"}})) == [1]
    assert ids(db.d.find({"$text": {"$search": "the", "$language": "none"}})) == [2]   # no stop words
    ix = infos(db.d)["t_text"]
    assert ix["default_language"] == "french" and ix["language_override"] == "lang"


def test_text_wildcard_and_drop(db):
    db.c.insert_many([{"_id": 1, "a": {"b": "nested coffee"}}, {"_id": 2, "x": ["tea", "milk"]}, {"_id": 3, "n": 1}])
    db.c.create_index([("$**", TEXT)], name="all")
    assert ids(db.c.find({"$text": {"$search": "coffee milk"}})) == [1, 2]
    assert infos(db.c)["all"]["weights"] == {"$**": 1}
    db.command("dropIndexes", "c", index={"_fts": "text", "_ftsx": 1})
    assert list(infos(db.c)) == ["_id_"]
    with pytest.raises(OperationFailure) as ei:
        list(db.c.find({"$text": {"$search": "coffee"}}))
    assert ei.value.code == 27


def test_text_index_options_refused(db):
    with pytest.raises(OperationFailure) as ei:
        create(db, "c", {"key": {"a": "text", "b": 1}, "name": "x"})
    assert ei.value.code == 238
    with pytest.raises(OperationFailure) as ei:
        create(db, "c", {"key": {"a": "text"}, "name": "x", "default_language": "klingon"})
    assert ei.value.code == 67
    with pytest.raises(OperationFailure) as ei:
        create(db, "c", {"key": {"a": "text"}, "name": "x", "weights": {"a": 0}})
    assert ei.value.code == 67
    with pytest.raises(OperationFailure) as ei:
        create(db, "c", {"key": {"a": 1}, "name": "x", "weights": {"a": 2}})
    assert ei.value.code == 67
    with pytest.raises(OperationFailure) as ei:
        create(db, "c", {"key": {"a": "text"}, "name": "x",
                         "weights": {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5}})
    assert ei.value.code == 238


def test_partial_and_sparse_builds_over_existing_documents(db):
    """An index built over stored documents holds exactly the ones its filter
    (or sparseness) admits: duplicates outside it do not fail the build."""
    db.c.insert_many([{"_id": 1, "u": "x", "ok": False}, {"_id": 2, "u": "x", "ok": False},
                      {"_id": 3, "u": "x", "ok": True}, {"_id": 4, "u": "y", "ok": True}])
    db.c.create_index("u", unique=True, partialFilterExpression={"ok": True})
    with pytest.raises(DuplicateKeyError):
        db.c.insert_one({"u": "y", "ok": True})
    db.c.insert_one({"u": "y", "ok": False})
    db.d.insert_many([{"_id": i} for i in range(5)] + [{"_id": 9, "s": 1}])
    db.d.create_index("s", unique=True, sparse=True)
    db.d.insert_one({"_id": 10})
    with pytest.raises(DuplicateKeyError):
        db.d.insert_one({"_id": 11, "s": 1})
    # The built indexes answer queries that imply their filter.
    db.e.insert_many([{"_id": i, "a": i % 100, "k": i % 2} for i in range(3000)])
    db.e.create_index("a", partialFilterExpression={"k": 1})
    assert uses_index(plan(db, "e", {"a": 7, "k": 1}))
    assert ids(db.e.find({"a": 7, "k": 1})) == [i for i in range(3000) if i % 100 == 7 and i % 2 == 1]
    assert ids(db.e.find({"a": 8})) == [i for i in range(3000) if i % 100 == 8]


def test_collmod_needs_the_collmod_privilege(new_server):
    """collMod is dbAdmin's (MongoDB's collMod action), not readWrite's."""
    t = new_server(env={"TIERDB_ADMIN_PASSWORD": "pw-admin"}, extra_args=["--admin-user", "admin"]).start()
    admin = t.client(username="admin", password="pw-admin")
    admin.admin.command("createUser", "rw", pwd="pw-rw", roles=[{"role": "readWrite", "db": "shop"}])
    admin.admin.command("createUser", "dba", pwd="pw-dba", roles=[{"role": "dbAdmin", "db": "shop"}])
    admin.shop.c.create_index("a")
    rw = t.client(username="rw", password="pw-rw", authSource="admin")
    with pytest.raises(OperationFailure) as ei:
        rw.shop.command("collMod", "c", index={"name": "a_1", "hidden": True})
    assert code_of(ei) == (13, "Unauthorized")
    dba = t.client(username="dba", password="pw-dba", authSource="admin")
    assert dba.shop.command("collMod", "c", index={"name": "a_1", "hidden": True})["hidden_new"] is True
    for c in (admin, rw, dba):
        c.close()
