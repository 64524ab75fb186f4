"""Never silently wrong: fields tierdb does not know or does not implement
are refused with MongoDB's codes, and what drivers send routinely works."""
import pytest
from pymongo import InsertOne, ReturnDocument, UpdateOne
from pymongo.errors import OperationFailure
from pymongo.read_concern import ReadConcern


@pytest.mark.parametrize("cmd,code", [
    ({"find": "c", "filtre": {}}, 40415),
    ({"insert": "c", "documents": [{}], "orderd": False}, 40415),
    ({"count": "c", "qurey": {}}, 40415),
    ({"aggregate": "c", "pipeline": [], "cursor": {}, "bogus": 1}, 40415),
    ({"find": "c", "returnKey": True}, 238),
    ({"find": "c", "tailable": True}, 2),  # c is not capped
    ({"find": "c", "min": {"a": 1}}, 238),
    ({"create": "c2", "capped": True}, 72),  # size is required
    ({"create": "c2", "validator": {"a": {"$exists": True}}}, 238),
    ({"update": "c", "updates": [{"q": {}, "u": {"$set": {"a": 1}}, "sort": {"a": 1}}]}, 238),
    ({"update": "c", "updates": [{"q": {}, "u": {"$set": {"a": 1}}, "mutli": True}]}, 40415),
    ({"delete": "c", "deletes": [{"q": {}, "limit": 0, "hint2": 1}]}, 40415),
    ({"find": "c", "readConcern": {"level": "linearizable"}}, 238),
    ({"find": "c", "readConcern": {"level": "snapshot"}}, 238),
    ({"find": "c", "readConcern": {"level": "eventual"}}, 2),
])
def test_unknown_and_unimplemented_fields_are_refused(db, cmd, code):
    db.c.insert_one({"a": 0})
    try:
        reply = db.command(cmd)
        # A statement's refusal is its write error; the command itself is ok.
        got = reply["writeErrors"][0]["code"] if "writeErrors" in reply else None
    except OperationFailure as e:
        got = e.code
    assert got == code, cmd
    assert db.c.count_documents({"a": 1}) == 0  # nothing applied


def test_what_drivers_send_routinely_still_works(db):
    c = db.get_collection("ok", read_concern=ReadConcern("majority"))
    c.insert_many([{"_id": i, "a": i % 3} for i in range(20)], bypass_document_validation=True)
    c.bulk_write([InsertOne({"_id": 100}), UpdateOne({"_id": 1}, {"$set": {"b": 1}})], ordered=False)
    assert len(list(c.find({"a": 1}, {"a": 1}).sort("_id", -1).skip(1).limit(3).batch_size(2).hint([("_id", 1)]))) == 3
    assert len(list(c.find({}, no_cursor_timeout=True, allow_partial_results=True))) == 21
    assert c.count_documents({"a": 1}) == 7 and c.estimated_document_count() == 21
    assert c.find_one_and_update({"_id": 2}, {"$inc": {"a": 1}}, return_document=ReturnDocument.AFTER)["a"] == 3
    assert list(c.aggregate([{"$group": {"_id": "$a", "n": {"$sum": 1}}}], allowDiskUse=True))
    c.create_index([("a", 1)], name="a_1")
    assert "a_1" in c.index_information()
    c.update_many({"a": 0}, {"$set": {"z": 1}})
    c.delete_many({"z": 1})
    assert "ok" in db.list_collection_names()
    db.create_collection("plain", storageEngine={})
    c.drop()


@pytest.mark.parametrize("cmd,code", [
    # MongoDB has these; tierdb answers NotImplemented, not CommandNotFound.
    ({"convertToCapped": "c", "size": 4096}, 238),
    ({"cloneCollectionAsCapped": "c", "toCollection": "cc", "size": 4096}, 238),
    ({"collMod": "capped", "cappedSize": 8192}, 238),
    ({"collMod": "capped", "cappedMax": 5}, 238),
    ({"aggregate": "c", "cursor": {}, "pipeline": [{"$project": {"z": {"$getNumberOfTrailingZeros": "$a"}}}]}, 238),
    ({"aggregate": "c", "cursor": {}, "pipeline": [{"$project": {"z": {"$noSuchOperator": "$a"}}}]}, 168),
])
def test_unimplemented_features_are_refused(db, cmd, code):
    db.c.insert_one({"_id": 1, "a": 8})
    db.create_collection("capped", capped=True, size=4096, max=10)
    with pytest.raises(OperationFailure) as e:
        db.command(cmd)
    assert e.value.code == code, cmd
    assert e.value.details["codeName"] == ("NotImplemented" if code == 238 else "InvalidPipelineOperator")
    # nothing changed: c is not capped, no cc, capped keeps its limits
    assert db.command("collStats", "c")["capped"] is False
    assert "cc" not in db.list_collection_names()
    st = db.command("collStats", "capped")
    assert (st["max"], st["maxSize"]) == (10, 4096)


def test_unimplemented_commands_are_listed_as_not_supported(client):
    cmds = client.admin.command("listCommands")["commands"]
    for name in ["convertToCapped", "cloneCollectionAsCapped"]:
        assert cmds[name]["help"].startswith("not supported"), cmds[name]
