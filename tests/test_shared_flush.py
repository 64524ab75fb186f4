"""Lower-tier writes share the high tier's WAL flushes while it is active
(--shared-flush-wait, storage/flush.go): acknowledged only once on disk,
so they survive kill -9 as every acknowledged write does."""
import signal
import threading
import time

from pymongo.errors import PyMongoError

from test_durability import kill9, postmaster_pid, wait_gone


def shared_stats(client):
    return client.admin.command("serverStatus")["tierdb"]["sharedFlushes"]


class HighWriter(threading.Thread):
    """A high-tier client updating one document back to back until stopped."""

    def __init__(self, t):
        super().__init__(daemon=True)
        self.client = t.client(maxPoolSize=1, retryWrites=False)
        self.client.admin.command("setClientPriority", "high")
        self.stop = threading.Event()
        self.writes = 0

    def run(self):
        c = self.client.sf.hot
        while not self.stop.is_set():
            try:
                c.update_one({"_id": "hot"}, {"$inc": {"n": 1}}, upsert=True)
                self.writes += 1
            except PyMongoError:
                time.sleep(0.01)

    def finish(self):
        self.stop.set()
        self.join(10)
        self.client.close()


def insert_while_high_writes(t, n):
    """n normal-tier inserts while a high-tier client writes; returns the
    ids acknowledged."""
    high = HighWriter(t)
    high.start()
    client = t.client(retryWrites=False)
    acked = []
    try:
        time.sleep(0.2)
        for i in range(n):
            client.sf.c.insert_one({"_id": i})
            acked.append(i)
    finally:
        high.finish()
        client.close()
    assert high.writes > 0
    return acked


def test_lower_tier_writes_share_the_high_tiers_flushes(new_server):
    t = new_server().start()
    client = t.client()
    before = shared_stats(client)
    acked = insert_while_high_writes(t, 300)
    after = shared_stats(client)
    assert after["commits"] - before["commits"] > 100, (before, after)
    assert after["failed"] == before["failed"]
    assert sorted(d["_id"] for d in client.sf.c.find()) == acked == list(range(300))
    client.close()


def test_without_a_later_high_tier_write_the_write_flushes_itself(new_server):
    """A normal write within the hold after the high tier's last request
    shares; no high-tier write follows, so its own flush ends its wait."""
    t = new_server(extra_args=["--restricted-hold", "2s"]).start()
    high = t.client(maxPoolSize=1)
    high.admin.command("setClientPriority", "high")
    normal = t.client()
    before = shared_stats(normal)
    high.sf.hot.insert_one({"_id": "last high write"})
    started = time.monotonic()
    normal.sf.c.insert_one({"_id": "shared"})
    took = time.monotonic() - started
    after = shared_stats(normal)
    assert after["commits"] == before["commits"] + 1, (before, after)
    assert after["forced"] == before["forced"] + 1, (before, after)
    assert normal.sf.c.find_one({"_id": "shared"}) == {"_id": "shared"}
    assert took < 1.0  # --shared-flush-wait (2 ms) and a flush, not the 2 s hold
    high.close()
    normal.close()


def test_off_every_write_flushes_its_own(new_server):
    t = new_server(extra_args=["--shared-flush-wait", "0"]).start()
    client = t.client()
    before = shared_stats(client)
    insert_while_high_writes(t, 100)
    assert shared_stats(client) == before
    client.close()


def test_shared_writes_survive_kill_9_of_postgres(new_server):
    """Every normal-tier insert acknowledged while the high tier writes is
    there after kill -9 of PostgreSQL and of tierdb in the middle of it."""
    t = new_server().start()
    high = HighWriter(t)
    high.start()
    client = t.client(retryWrites=False, serverSelectionTimeoutMS=2000, socketTimeoutMS=5000)
    acked = []
    stop = threading.Event()

    def writer():
        i = 0
        while not stop.is_set():
            try:
                client.sf.c.insert_one({"_id": i})
                acked.append(i)
            except PyMongoError:
                return
            i += 1

    w = threading.Thread(target=writer, daemon=True)
    w.start()
    time.sleep(1.0)
    stats = shared_stats(t.client())
    pg = postmaster_pid(t)
    kill9(pg)
    t.stop(signal.SIGKILL)
    stop.set()
    wait_gone(pg)
    w.join(10)
    high.stop.set()
    client.close()

    assert stats["commits"] > 0, stats  # they did share
    assert len(acked) > 50
    t.start()
    c = t.client()
    present = {d["_id"] for d in c.sf.c.find()}
    missing = [i for i in acked if i not in present]
    assert not missing, f"{len(missing)} acknowledged writes lost, e.g. {missing[:5]}"
    c.close()
