"""Counting pipelines over every document are answered by PostgreSQL's
count (explain is unchanged: the results are what the stages give), and
scans that answer filters on BSON bytes return what decoding would."""
import pytest


@pytest.fixture
def coll(db):
    db.c.insert_many([{"_id": i, "b": i % 10, "s": {"x": i % 3}, "arr": [i % 4, 9]} for i in range(2500)])
    return db.c


def test_count_documents_everything(coll):
    assert coll.count_documents({}) == 2500
    assert coll.count_documents({}, skip=100) == 2400
    assert coll.count_documents({}, limit=7) == 7
    assert coll.count_documents({}, skip=2490, limit=50) == 10
    assert coll.count_documents({}, skip=3000) == 0


def test_count_shapes(coll):
    assert list(coll.aggregate([{"$count": "n"}])) == [{"n": 2500}]
    assert list(coll.aggregate([{"$group": {"_id": None, "n": {"$sum": 2}, "m": {"$sum": 0.5}}}])) == [{"_id": None, "n": 5000, "m": 1250.0}]
    assert list(coll.aggregate([{"$group": {"_id": "k", "n": {"$sum": 1}}}, {"$project": {"n": 1, "_id": 0}}])) == [{"n": 2500}]
    # not a count: a field's sum must read the documents
    assert list(coll.aggregate([{"$group": {"_id": None, "t": {"$sum": "$b"}}}])) == [{"_id": None, "t": 4.5 * 2500}]
    assert list(coll.aggregate([{"$group": {"_id": "$b", "n": {"$sum": 1}}}, {"$sort": {"_id": 1}}, {"$limit": 1}])) == [{"_id": 0, "n": 250}]


def test_count_of_empty_and_missing_collections(db):
    assert db.nothing.count_documents({}) == 0
    db.empty.insert_one({"_id": 1})
    db.empty.delete_one({"_id": 1})
    assert db.empty.count_documents({}) == 0
    assert list(db.empty.aggregate([{"$count": "n"}])) == []


def test_filtered_counts_and_finds(coll):
    assert coll.count_documents({"b": {"$gt": 5}}) == 1000
    assert coll.count_documents({"s.x": 1, "b": {"$lte": 4}}) == len([i for i in range(2500) if i % 3 == 1 and i % 10 <= 4])
    assert coll.count_documents({"arr": 3}) == 625  # arrays go through the full matcher
    assert coll.count_documents({"arr": 9, "b": 0}) == 250
    assert coll.count_documents({"$or": [{"b": 1}, {"s.x": 2}]}) == len([i for i in range(2500) if i % 10 == 1 or i % 3 == 2])
    assert coll.database.command("count", "c", query={"b": {"$in": [1, 2]}})["n"] == 500
    got = [d["_id"] for d in coll.find({"b": 9, "s.x": 0})]
    assert got == [i for i in range(2500) if i % 10 == 9 and i % 3 == 0]
    assert [d["_id"] for d in coll.find({"b": {"$gt": 8}}, batch_size=3).limit(20)] == [i for i in range(2500) if i % 10 == 9][:20]
