"""Two tierdb servers on one PostgreSQL (--postgres-url): each sees the
other's writes, and updates by _id never act on a stale version."""
import os

from conftest import Tierdb


def test_two_servers_share_one_postgres_without_lost_updates(new_server, tierdb_bin):
    a = new_server().start()
    with open(os.path.join(a.data_dir, "postgres.socketdir")) as f:
        socket_dir = f.read().strip()
    url = f"host={socket_dir} port=5432 user=postgres dbname=tierdb sslmode=disable"
    b = new_server(extra_args=["--postgres-url", url]).start()
    ca, cb = a.client(), b.client()
    ca.shared.c.insert_one({"_id": 1, "n": 0, "by": []})
    for i in range(20):
        # Alternate servers: each remembers the version it wrote last, which
        # the other server has since replaced.
        ca.shared.c.update_one({"_id": 1}, {"$inc": {"n": 1}, "$push": {"by": "a"}})
        cb.shared.c.update_one({"_id": 1}, {"$inc": {"n": 1}, "$push": {"by": "b"}})
    doc = cb.shared.c.find_one({"_id": 1})
    assert doc["n"] == 40
    assert doc["by"] == ["a", "b"] * 20
    cb.shared.c.delete_one({"_id": 1})
    res = ca.shared.c.update_one({"_id": 1}, {"$inc": {"n": 1}})
    assert res.matched_count == 0, "a document deleted through the other server must not be updated"
    assert ca.shared.c.find_one({"_id": 1}) is None
    ca.close()
    cb.close()
