"""Databases, collections and indexes: listing, creating, dropping, conflicts, names."""
import uuid

import pytest
from bson import Decimal128
from bson.int64 import Int64
from pymongo import ASCENDING, DESCENDING
from pymongo.errors import DuplicateKeyError, OperationFailure

import rawwire


def code_of(ei):
    return ei.value.code, ei.value.details.get("codeName")


# --- databases ---------------------------------------------------------------

def test_list_databases(client, db):
    db.c.insert_one({"x": 1})
    names = client.list_database_names()
    assert db.name in names
    full = client.admin.command("listDatabases")
    mine = [d for d in full["databases"] if d["name"] == db.name]
    assert len(mine) == 1
    assert mine[0]["sizeOnDisk"] >= 0
    assert mine[0]["empty"] is False
    assert full["totalSize"] >= mine[0]["sizeOnDisk"]


def test_list_databases_name_only_and_filter(client, db):
    db.c.insert_one({"x": 1})
    r = client.admin.command("listDatabases", nameOnly=True, filter={"name": db.name})
    assert r["databases"] == [{"name": db.name}]
    r = client.admin.command("listDatabases", filter={"name": {"$in": [db.name, "no_such_db_xyz"]}})
    assert [d["name"] for d in r["databases"]] == [db.name]


def test_drop_database(client, db):
    db.a.insert_one({})
    db.b.insert_one({})
    assert set(db.list_collection_names()) == {"a", "b"}
    r = db.command("dropDatabase")
    assert r["ok"] == 1.0
    assert db.list_collection_names() == []
    assert db.name not in client.list_database_names()
    assert db.a.find_one() is None


# --- collections ---------------------------------------------------------------

def test_create_and_list_collections(db):
    db.create_collection("alpha")
    db.create_collection("beta")
    db.gamma.insert_one({"_id": 1})  # implicit creation
    assert sorted(db.list_collection_names()) == ["alpha", "beta", "gamma"]
    infos = {c["name"]: c for c in db.list_collections()}
    assert infos["alpha"]["type"] == "collection"
    assert infos["alpha"]["idIndex"]["key"] == {"_id": 1}
    assert infos["alpha"]["info"]["uuid"] != infos["beta"]["info"]["uuid"]


def test_list_collections_filter_name_only_type(db):
    for n in ("one", "two", "three"):
        db.create_collection(n)
    assert db.list_collection_names(filter={"name": "two"}) == ["two"]
    assert sorted(db.list_collection_names(filter={"name": {"$in": ["one", "three", "nine"]}})) == ["one", "three"]
    assert sorted(db.list_collection_names(filter={"type": "collection"})) == ["one", "three", "two"]
    assert db.list_collection_names(filter={"type": "view"}) == []
    r = db.command("listCollections", nameOnly=True, filter={"name": "one"})
    batch = r["cursor"]["firstBatch"]
    assert batch == [{"name": "one", "type": "collection"}]
    assert r["cursor"]["id"] == 0


def test_create_twice_is_namespace_exists(db):
    db.create_collection("c")
    with pytest.raises(OperationFailure) as ei:
        db.command("create", "c")
    assert code_of(ei) == (48, "NamespaceExists")


def test_drop_collection(db):
    db.c.insert_many([{"_id": i} for i in range(3)])
    db.c.create_index("a")
    r = db.command("drop", "c")
    assert r["ok"] == 1.0
    assert "c" not in db.list_collection_names()
    assert db.c.count_documents({}) == 0
    db.drop_collection("never_existed")  # pymongo treats "not found" as success
    # A re-created collection starts without the old indexes.
    db.c.insert_one({"_id": 1})
    assert [ix["name"] for ix in db.c.list_indexes()] == ["_id_"]


# --- indexes ---------------------------------------------------------------------

def index_map(coll):
    return {ix["name"]: ix for ix in coll.list_indexes()}


def test_create_list_drop_indexes(db):
    c = db.c
    c.insert_one({"a": 1, "b": 2})
    assert c.create_index("a") == "a_1"
    assert c.create_index([("a", ASCENDING), ("b", DESCENDING)]) == "a_1_b_-1"
    assert c.create_index("b", unique=True, name="b_unique") == "b_unique"
    ixs = index_map(c)
    assert set(ixs) == {"_id_", "a_1", "a_1_b_-1", "b_unique"}
    assert list(ixs["a_1_b_-1"]["key"].items()) == [("a", 1), ("b", -1)]
    assert ixs["b_unique"]["unique"] is True
    assert not ixs["a_1"].get("unique", False)
    assert ixs["_id_"]["key"] == {"_id": 1}

    r = db.command("dropIndexes", "c", index="a_1")
    assert r["nIndexesWas"] == 4
    assert set(index_map(c)) == {"_id_", "a_1_b_-1", "b_unique"}
    c.drop_index([("a", ASCENDING), ("b", DESCENDING)])  # by key pattern
    assert set(index_map(c)) == {"_id_", "b_unique"}
    c.drop_indexes()  # "*": all but _id_
    assert set(index_map(c)) == {"_id_"}


def test_create_indexes_reply(db):
    r = db.command("createIndexes", "fresh", indexes=[{"key": {"a": 1}, "name": "a_1"}])
    assert r["numIndexesBefore"] == 1
    assert r["numIndexesAfter"] == 2
    assert r["createdCollectionAutomatically"] is True
    assert "fresh" in db.list_collection_names()
    again = db.command("createIndexes", "fresh", indexes=[{"key": {"a": 1}, "name": "a_1"}])
    assert again["numIndexesBefore"] == again["numIndexesAfter"] == 2
    assert again["createdCollectionAutomatically"] is False


def test_index_name_conflict_with_other_keys(db):
    db.c.create_index("a", name="ix")
    with pytest.raises(OperationFailure) as ei:
        db.c.create_index("b", name="ix")
    assert code_of(ei) == (86, "IndexKeySpecsConflict")


def test_index_same_keys_other_name(db):
    db.c.create_index("a", name="first")
    with pytest.raises(OperationFailure) as ei:
        db.c.create_index("a", name="second")
    assert code_of(ei) == (85, "IndexOptionsConflict")


def test_drop_missing_index(db):
    db.c.insert_one({})
    with pytest.raises(OperationFailure) as ei:
        db.c.drop_index("nope_1")
    assert code_of(ei) == (27, "IndexNotFound")


def test_cannot_drop_id_index(db):
    db.c.insert_one({})
    with pytest.raises(OperationFailure) as ei:
        db.c.drop_index("_id_")
    assert ei.value.code == 72  # InvalidOptions
    assert "_id_" in index_map(db.c)


def test_unique_index_rejects_duplicates(db):
    db.c.create_index("email", unique=True)
    db.c.insert_one({"email": "a@x"})
    with pytest.raises(DuplicateKeyError) as ei:
        db.c.insert_one({"email": "a@x"})
    assert ei.value.code == 11000
    db.c.insert_one({"email": "b@x"})
    with pytest.raises(DuplicateKeyError):
        db.c.update_one({"email": "b@x"}, {"$set": {"email": "a@x"}})
    assert db.c.count_documents({}) == 2


def test_unique_compound_index(db):
    db.c.create_index([("a", 1), ("b", 1)], unique=True)
    db.c.insert_many([{"a": 1, "b": 1}, {"a": 1, "b": 2}, {"a": 2, "b": 1}])
    with pytest.raises(DuplicateKeyError):
        db.c.insert_one({"a": 1, "b": 2})


def test_unique_index_over_existing_duplicates_fails(db):
    db.c.insert_many([{"k": 1}, {"k": 2}, {"k": 1}])
    with pytest.raises(OperationFailure) as ei:
        db.c.create_index("k", unique=True)
    assert code_of(ei) == (11000, "DuplicateKey")
    assert set(index_map(db.c)) == {"_id_"}  # nothing half-built is left behind


def test_unique_index_over_array_elements(db):
    """A unique index on an array field indexes each element (multikey)."""
    db.c.create_index("tags", unique=True)
    db.c.insert_one({"_id": 1, "tags": [1, 2]})
    db.c.insert_one({"_id": 2, "tags": [3, 3]})  # a repeat inside one document is fine
    with pytest.raises(DuplicateKeyError):
        db.c.insert_one({"_id": 3, "tags": [2, 9]})
    with pytest.raises(DuplicateKeyError):
        db.c.insert_one({"_id": 4, "tags": 1})
    assert sorted(d["_id"] for d in db.c.find()) == [1, 2]


def test_unique_index_treats_missing_as_null(db):
    db.c.create_index("k", unique=True)
    db.c.insert_one({"_id": 1})
    with pytest.raises(DuplicateKeyError):
        db.c.insert_one({"_id": 2})
    with pytest.raises(DuplicateKeyError):
        db.c.insert_one({"_id": 3, "k": None})


def test_unique_index_compares_numbers_by_value(db):
    db.c.create_index("k", unique=True)
    db.c.insert_one({"k": 1})
    for same in (1.0, Int64(1), Decimal128("1.0")):
        with pytest.raises(DuplicateKeyError):
            db.c.insert_one({"k": same})
    db.c.insert_one({"k": "1"})  # another type is another key


def test_unique_index_on_nested_field(db):
    db.c.create_index("a.b", unique=True)
    db.c.insert_one({"a": {"b": 1}})
    with pytest.raises(DuplicateKeyError):
        db.c.insert_one({"a": {"b": 1, "c": 2}})
    with pytest.raises(DuplicateKeyError):
        db.c.insert_one({"a": [{"b": 1}]})
    db.c.insert_one({"a": {"b": 2}})


def test_index_commands_on_missing_collection(db):
    for cmd in ({"listIndexes": "nope"}, {"dropIndexes": "nope", "index": "a_1"}):
        with pytest.raises(OperationFailure) as ei:
            db.command(cmd)
        assert code_of(ei) == (26, "NamespaceNotFound")
    assert list(db.nope.list_indexes()) == []  # pymongo hides the error


def test_drop_missing_database_is_ok(client):
    assert client["t_never_" + uuid.uuid4().hex[:8]].command("dropDatabase")["ok"] == 1.0


# --- names -----------------------------------------------------------------------

def test_collection_names_with_dots(db):
    db["a.b"].insert_one({"_id": 1})
    db["a.b.c"].insert_one({"_id": 2})
    assert sorted(db.list_collection_names()) == ["a.b", "a.b.c"]
    assert db["a.b"].find_one() == {"_id": 1}
    db.drop_collection("a.b")
    assert db.list_collection_names() == ["a.b.c"]


@pytest.mark.parametrize("name", ["a$b", "", ".dot", "nul\x00"])
def test_invalid_collection_names(db, name):
    with pytest.raises(OperationFailure) as ei:
        db.command("create", name)
    assert code_of(ei) == (73, "InvalidNamespace")


@pytest.mark.parametrize("dbname", ["a/b", "a.b", "a b", "a\\b"])
def test_invalid_database_names(server, dbname):
    with rawwire.connect(server) as s:
        r = rawwire.command(s, {"insert": "c", "documents": [{"x": 1}], "$db": dbname})
    assert r["ok"] == 0.0
    assert r["code"] == 73
    assert r["codeName"] == "InvalidNamespace"


def test_database_name_too_long(server):
    with rawwire.connect(server) as s:
        r = rawwire.command(s, {"create": "c", "$db": "d" * 64})
    assert (r["ok"], r["code"]) == (0.0, 73)


def test_names_are_case_sensitive_and_unicode(db):
    db["Coll"].insert_one({"_id": 1})
    db["coll"].insert_one({"_id": 2})
    db["zażółć"].insert_one({"_id": 3})
    assert sorted(db.list_collection_names()) == sorted(["Coll", "coll", "zażółć"])
    assert db["Coll"].find_one() == {"_id": 1}
    assert db["zażółć"].find_one() == {"_id": 3}


def test_databases_are_isolated(client):
    a, b = (client["t_iso_" + uuid.uuid4().hex[:8]] for _ in range(2))
    try:
        a.c.insert_one({"_id": 1, "db": "a"})
        b.c.insert_one({"_id": 1, "db": "b"})
        assert a.c.find_one()["db"] == "a"
        assert b.c.find_one()["db"] == "b"
        client.drop_database(a.name)
        assert b.c.find_one()["db"] == "b"
    finally:
        client.drop_database(a.name)
        client.drop_database(b.name)
