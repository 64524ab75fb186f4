// tierdb through the official Node.js driver: an aggregation with $lookup,
// and change streams (watch() on a collection with updateLookup, and on a
// database) that the driver resumes and closes. Usage: node aggwatch.js
// <mongodb-uri>. Exits non-zero, with the reason, when something is wrong.
const assert = require("node:assert/strict");
const { MongoClient } = require("mongodb");

async function next(stream) {
  const ev = await Promise.race([
    stream.next(),
    new Promise((_, reject) => setTimeout(() => reject(new Error("no change event within 15 s")), 15000)),
  ]);
  return ev;
}

async function main(uri) {
  const client = new MongoClient(uri);
  await client.connect();
  const db = client.db("node_aggwatch");
  try {
    await db.dropDatabase();
    const orders = db.collection("orders");
    await orders.insertMany([{ _id: 1, item: "tea", qty: 2 }, { _id: 2, item: "jam", qty: 1 }, { _id: 3, item: "tea", qty: 5 }]);
    await db.collection("stock").insertMany([{ _id: "tea", price: 3 }, { _id: "jam", price: 4 }]);
    const rows = await orders.aggregate([
      { $lookup: { from: "stock", localField: "item", foreignField: "_id", as: "s" } },
      { $unwind: "$s" },
      { $group: { _id: "$item", total: { $sum: { $multiply: ["$qty", "$s.price"] } }, n: { $count: {} } } },
      { $sort: { _id: 1 } },
    ]).toArray();
    assert.deepEqual(rows, [{ _id: "jam", total: 4, n: 1 }, { _id: "tea", total: 21, n: 2 }]);

    // watch() on a collection, with the current document on updates.
    const cs = orders.watch([{ $match: { operationType: { $in: ["insert", "update"] } } }], { fullDocument: "updateLookup" });
    await cs.tryNext(); // opens the stream before the writes
    await orders.insertOne({ _id: 4, item: "jam", qty: 7 });
    await orders.updateOne({ _id: 4 }, { $inc: { qty: 1 } });
    await orders.deleteOne({ _id: 4 });
    const ins = await next(cs);
    assert.equal(ins.operationType, "insert");
    assert.deepEqual(ins.documentKey, { _id: 4 });
    const upd = await next(cs);
    assert.equal(upd.operationType, "update");
    assert.deepEqual(upd.updateDescription.updatedFields, { qty: 8 });
    assert.equal(upd.fullDocument, null, "updateLookup after the delete finds nothing");
    const token = ins._id;
    await cs.close();

    // Resuming after the insert gives the update again.
    const resumed = orders.watch([], { resumeAfter: token });
    assert.equal((await next(resumed)).operationType, "update");
    await resumed.close();

    // watch() on the database sees every collection's changes.
    const ds = db.watch();
    await ds.tryNext();
    await db.collection("other").insertOne({ _id: "x" });
    const ev = await next(ds);
    assert.deepEqual([ev.operationType, ev.ns.coll, ev.documentKey._id], ["insert", "other", "x"]);
    await ds.close();
  } finally {
    await db.dropDatabase().catch(() => {});
    await client.close();
  }
}

main(process.argv[2]).then(() => console.log("ok"), (e) => { console.error(e); process.exit(1); });
