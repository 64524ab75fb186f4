"""explain's executionStats (documents and keys examined), $currentOp's idle
cursors, and the lsid and txnNumber of a transaction's change events."""
import hashlib
import time

from pymongo import monitoring

from test_change_streams import next_events


class Sent(monitoring.CommandListener):
    """Remembers the commands a client sent."""

    def __init__(self):
        self.cmds = []

    def started(self, event):
        self.cmds.append(event.command)

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass


def test_transaction_events_carry_lsid_and_txn_number(server, db):
    sent = Sent()
    client = server.client(event_listeners=[sent])
    coll = client[db.name].c
    db.create_collection("c")
    with db.c.watch(max_await_time_ms=200) as s:
        coll.insert_one({"_id": 0})  # a retryable write: no transaction
        with client.start_session() as sess:
            def work(session):
                coll.insert_one({"_id": 1}, session=session)
                coll.update_one({"_id": 0}, {"$set": {"a": 1}}, session=session)
            sess.with_transaction(work)
            lsid = sess.session_id
        plain, ins, upd = next_events(s, 3)
    client.close()
    commit = [c for c in sent.cmds if "commitTransaction" in c][-1]
    retryable = [c for c in sent.cmds if c.get("insert") == "c" and "startTransaction" not in c][0]
    assert "txnNumber" in retryable  # a retryable write, yet its event has neither field
    assert "lsid" not in plain and "txnNumber" not in plain
    # Without authentication the uid is the SHA-256 digest of nothing.
    uid = hashlib.sha256(b"").digest()
    for ev in (ins, upd):
        assert ev["lsid"] == {"id": lsid["id"], "uid": uid}
        assert ev["txnNumber"] == commit["txnNumber"]
