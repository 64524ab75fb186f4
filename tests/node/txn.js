// tierdb through the official Node.js driver: withTransaction and
// retryable writes. Usage: node txn.js <mongodb-uri>. Exits non-zero, with
// the reason, when something is wrong.
const assert = require("node:assert/strict");
const { MongoClient } = require("mongodb");

async function main(uri) {
  const client = new MongoClient(uri, { retryWrites: true });
  await client.connect();
  try {
    const coll = client.db("node_txn").collection("acct");
    await coll.drop().catch(() => {});
    await coll.insertMany([{ _id: "a", bal: 100 }, { _id: "b", bal: 0 }]);

    // withTransaction commits, and retries a transient write conflict.
    const session = client.startSession();
    let attempts = 0;
    await session.withTransaction(async () => {
      attempts++;
      await coll.findOne({ _id: "a" }, { session });
      if (attempts === 1) {
        await coll.updateOne({ _id: "a" }, { $inc: { bal: 1 } }); // a concurrent writer
      }
      await coll.updateOne({ _id: "a" }, { $inc: { bal: -30 } }, { session });
      await coll.updateOne({ _id: "b" }, { $inc: { bal: 30 } }, { session });
    });
    assert.equal(attempts, 2, "one write conflict, one retry");
    assert.equal((await coll.findOne({ _id: "a" })).bal, 71);
    assert.equal((await coll.findOne({ _id: "b" })).bal, 30);

    // A callback that throws aborts: nothing of it stays.
    await assert.rejects(session.withTransaction(async () => {
      await coll.insertOne({ _id: "c" }, { session });
      throw new Error("callback gave up");
    }), /callback gave up/);
    assert.equal(await coll.countDocuments({ _id: "c" }), 0);
    await session.endSession();

    // Retryable writes (the driver's default) apply once each.
    for (let i = 0; i < 10; i++) await coll.updateOne({ _id: "b" }, { $inc: { bal: 1 } });
    assert.equal((await coll.findOne({ _id: "b" })).bal, 40);
  } finally {
    await client.close();
  }
}

main(process.argv[2]).then(() => console.log("ok"), (e) => { console.error(e); process.exit(1); });
