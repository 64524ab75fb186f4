"""mongosh (the npm package pinned in tests/node/package.json) against a
real tierdb: the shell helpers a new user types first. mongosh must be
installed (make deps-drivers); a missing one fails, it is not skipped."""
import json
import os
import subprocess
import uuid

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
NODE = os.path.join(HERE, "node")
MONGOSH = os.path.join(NODE, "node_modules", ".bin", "mongosh")


@pytest.fixture(scope="module")
def mongosh():
    if not os.path.exists(MONGOSH):
        r = subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=NODE, capture_output=True, text=True,
                           timeout=900, stdin=subprocess.DEVNULL)
        assert r.returncode == 0, f"npm ci failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    assert os.path.exists(MONGOSH), "mongosh is not installed: run make deps-drivers"
    return MONGOSH


def sh(mongosh, server, db, script):
    """Runs a script and returns what it printed as JSON (EJSON relaxed)."""
    r = subprocess.run(
        [mongosh, f"mongodb://127.0.0.1:{server.port}/{db}?directConnection=true", "--quiet", "--norc",
         "--eval", script],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        env={**os.environ, "MONGOSH_SKIP_NODE_VERSION_CHECK": "1", "DO_NOT_TRACK": "1"},
    )
    assert r.returncode == 0, f"mongosh failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r.stdout


def out_json(text):
    return json.loads(text.strip().splitlines()[-1])


@pytest.fixture
def dbname(client):
    name = "sh_" + uuid.uuid4().hex[:10]
    yield name
    client.drop_database(name)


def test_db_stats_and_show_dbs(mongosh, server, client, dbname):
    client[dbname].items.insert_many([{"_id": i, "v": "x" * i} for i in range(50)])
    st = out_json(sh(mongosh, server, dbname, "print(EJSON.stringify(db.stats(), {relaxed: true}))"))
    assert st["db"] == dbname and st["collections"] == 1 and st["objects"] == 50 and st["ok"] == 1
    assert st["dataSize"] > 0 and st["storageSize"] > 0
    shown = sh(mongosh, server, dbname, "show dbs")
    assert any(line.split()[0] == dbname for line in shown.splitlines() if line.strip()), shown


def test_coll_stats(mongosh, server, client, dbname):
    client[dbname].items.insert_many([{"_id": i, "k": i} for i in range(40)])
    client[dbname].items.create_index("k")
    st = out_json(sh(mongosh, server, dbname, "print(EJSON.stringify(db.items.stats(), {relaxed: true}))"))
    assert st["ns"] == f"{dbname}.items" and st["count"] == 40 and st["nindexes"] == 2
    assert set(st["indexSizes"]) == {"_id_", "k_1"}
    assert st["sharded"] is False and st["ok"] == 1
    kb = out_json(sh(mongosh, server, dbname, "print(EJSON.stringify(db.items.stats(1024), {relaxed: true}))"))
    assert kb["scaleFactor"] == 1024
    assert sh(mongosh, server, dbname, "print(db.items.totalIndexSize() > 0)").strip() == "true"


def test_current_op(mongosh, server, dbname):
    script = """
    const r = db.currentOp();
    const mine = r.inprog.filter(op => op.command && op.command.aggregate === 1 && op.command.pipeline[0].$currentOp);
    print(EJSON.stringify({ok: r.ok, n: mine.length, tier: mine.length ? mine[0].tier : null,
                           opid: mine.length ? typeof mine[0].opid : null}));
    """
    r = out_json(sh(mongosh, server, dbname, script))
    assert r == {"ok": 1, "n": 1, "tier": "normal", "opid": "number"}, "db.currentOp() shows itself"
    filtered = out_json(sh(mongosh, server, dbname,
                           "print(EJSON.stringify(db.currentOp({tier: 'high'}).inprog.length))"))
    assert filtered == 0
    idle = out_json(sh(mongosh, server, dbname,
                       "print(EJSON.stringify(db.currentOp(true).inprog.some(op => op.active === false)))"))
    assert idle is True, "db.currentOp(true) lists idle connections too"
    killed = out_json(sh(mongosh, server, dbname, "print(EJSON.stringify(db.killOp(2147483000)))"))
    assert killed == {"info": "attempting to kill op", "ok": 1}


def test_aggregation_with_lookup(mongosh, server, client, dbname):
    d = client[dbname]
    d.orders.insert_many([{"_id": 1, "item": "tea", "qty": 2}, {"_id": 2, "item": "jam", "qty": 1},
                          {"_id": 3, "item": "tea", "qty": 5}])
    d.stock.insert_many([{"_id": "tea", "price": 3}, {"_id": "jam", "price": 4}])
    script = """
    const rows = db.orders.aggregate([
      {$lookup: {from: "stock", localField: "item", foreignField: "_id", as: "s"}},
      {$unwind: "$s"},
      {$group: {_id: "$item", total: {$sum: {$multiply: ["$qty", "$s.price"]}}}},
      {$sort: {_id: 1}}
    ]).toArray();
    print(EJSON.stringify(rows, {relaxed: true}));
    """
    assert out_json(sh(mongosh, server, dbname, script)) == [{"_id": "jam", "total": 4}, {"_id": "tea", "total": 21}]


def test_validate_and_rename(mongosh, server, client, dbname):
    client[dbname].a.insert_many([{"_id": i} for i in range(5)])
    script = """
    const v = db.a.validate({full: true});
    db.a.renameCollection("b");
    print(EJSON.stringify({valid: v.valid, nrecords: v.nrecords, names: db.getCollectionNames(), n: db.b.countDocuments({})}));
    """
    assert out_json(sh(mongosh, server, dbname, script)) == {"valid": True, "nrecords": 5, "names": ["b"], "n": 5}


def test_explain(mongosh, server, client, dbname):
    client[dbname].items.insert_many([{"_id": i, "k": i % 4} for i in range(20)])
    script = """
    const f = db.items.find({k: 1}).explain("executionStats");
    const a = db.items.explain("executionStats").aggregate([{$match: {k: {$lt: 2}}}, {$group: {_id: "$k", n: {$sum: 1}}}]);
    const q = db.items.find({k: 1}).explain();
    print(EJSON.stringify({f: f.executionStats.nReturned, plan: f.queryPlanner.winningPlan.stage,
                           a: a.stages[0].$cursor.executionStats.nReturned, group: Object.keys(a.stages[1])[0],
                           q: q.executionStats === undefined}, {relaxed: true}));
    """
    assert out_json(sh(mongosh, server, dbname, script)) == {"f": 5, "plan": "POSTGRESQL", "a": 10, "group": "$group", "q": True}
