"""Fault soak: exactly-once writes under kill -9 of tierdb, kill -9 of
PostgreSQL and replica-set step-downs (`make soak`; not part of `make test`).

Writers run through pymongo, one client with retryable writes (the drivers'
default) and one without. Every write carries a unique operation id:
  - an insert of {_id: op},
  - an update {$inc: {n: 1}, $push: {ops: op}} of one of a few counters.
A write that pymongo acknowledges must be present exactly once afterwards; a
write that failed may be present once or not at all, never twice. The script
checks every counter (n equals the length of ops, no op
twice) and every acknowledged op at the end of each fault's cycles, prints
one line per fault and writer kind, and exits non-zero on any loss or
duplicate.

    python tests/soak.py --cycles 50 --faults kill-tierdb,kill-postgres,stepdown
"""
import argparse
import collections
import os
import signal
import sys
import threading
import time

import pymongo
from pymongo.errors import PyMongoError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conftest  # noqa: E402  (the test bed's Tierdb and /proc helpers)

COUNTERS = 8


class Writers:
    """Writer threads; each records what was acknowledged and what failed."""

    def __init__(self, port, retry, fault, threads=3):
        self.retry = retry
        self.client = pymongo.MongoClient("127.0.0.1", port, directConnection=True, retryWrites=retry,
                                          serverSelectionTimeoutMS=30000, socketTimeoutMS=30000)
        # One collection per fault and writer kind: each check covers
        # exactly the operations of its own writers.
        self.coll = self.client.soak[f"{fault}-{'retry' if retry else 'plain'}"]
        self.acked, self.failed = set(), set()
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self.run, args=(i,), daemon=True) for i in range(threads)]
        self.seq = 0

    def next_op(self, w):
        with self.lock:
            self.seq += 1
            return f"{'r' if self.retry else 'p'}{w}-{self.seq}"

    def run(self, w):
        i = 0
        while not self.stop.is_set():
            op = self.next_op(w)
            i += 1
            try:
                if i % 2:
                    self.coll.insert_one({"_id": op})
                else:
                    self.coll.update_one({"_id": f"counter{i % COUNTERS}"}, {"$inc": {"n": 1}, "$push": {"ops": op}}, upsert=True)
                with self.lock:
                    self.acked.add(op)
            except PyMongoError:
                with self.lock:
                    self.failed.add(op)
                time.sleep(0.05)

    def start(self):
        for t in self.threads:
            t.start()

    def halt(self):
        self.stop.set()
        for t in self.threads:
            t.join(60)
        self.client.close()


def check(port, writers):
    """Losses and duplicates so far, for each writer set."""
    c = pymongo.MongoClient("127.0.0.1", port, directConnection=True, serverSelectionTimeoutMS=60000)
    out = {}
    try:
        for w in writers:
            present = collections.Counter()
            for d in c.soak[w.coll.name].find():
                if d["_id"].startswith("counter"):
                    if d.get("n", 0) != len(d.get("ops", [])):
                        present["<counter n != len(ops)>"] += 2
                    present.update(d.get("ops", []))
                else:
                    present[d["_id"]] += 1
            with w.lock:
                acked, failed = set(w.acked), set(w.failed)
            lost = sorted(op for op in acked if present[op] == 0)
            dup = sorted(op for op, n in present.items() if n > 1)
            out[w.coll.name] = {"acked": len(acked), "failed": len(failed), "lost": lost, "duplicated": dup,
                                "failed_applied": sum(1 for op in failed if present[op])}
    finally:
        c.close()
    return out


def check_when_up(port, writers, timeout=180):
    """check, once tierdb serves again (PostgreSQL may be restarting)."""
    deadline = time.time() + timeout
    while True:
        try:
            return check(port, writers)
        except PyMongoError:
            if time.time() > deadline:
                raise
            time.sleep(1)


def kill_postmaster(data_dir, last, timeout=120):
    """kill -9 the primary's postmaster, once tierdb has restarted it after
    the last kill; returns the PID killed."""
    deadline = time.time() + timeout
    while True:
        try:
            pid = conftest.node_pids(data_dir)[0]
            if pid != last:
                os.kill(pid, signal.SIGKILL)
                return pid
        except (OSError, ValueError):
            pass  # restarting: no pid file yet, or a stale one
        if time.time() > deadline:
            raise RuntimeError("PostgreSQL was not restarted after the last kill")
        time.sleep(0.1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cycles", type=int, default=50, help="cycles of each fault")
    ap.add_argument("--faults", default="kill-tierdb,kill-postgres,stepdown")
    ap.add_argument("--bin", default=os.environ.get("TIERDB_BIN", os.path.join(conftest.ROOT, "bin", "tierdb")))
    ap.add_argument("--run-seconds", type=float, default=1.5, help="write time between faults")
    args = ap.parse_args()
    faults = args.faults.split(",")

    port = conftest.free_port()
    conftest.free_port = lambda: port  # restarts keep the port the clients know
    replicas = ["--replicas", "2"] if "stepdown" in faults else []
    t = conftest.Tierdb(args.bin, extra_args=replicas).start(timeout=180)
    results, failures = {}, 0
    try:
        for fault in faults:
            writers = [Writers(port, True, fault), Writers(port, False, fault)]
            for w in writers:
                w.start()
            t0, killed = time.time(), None
            for cycle in range(args.cycles):
                time.sleep(args.run_seconds)
                if fault == "kill-tierdb":
                    t.stop(sig=signal.SIGKILL)
                    t.start(timeout=180)
                elif fault == "kill-postgres":
                    killed = kill_postmaster(t.data_dir, killed)
                elif fault == "stepdown":
                    c = t.client(serverSelectionTimeoutMS=60000)
                    try:
                        c.admin.command("replSetStepDown", 60)
                    except PyMongoError as e:
                        print(f"stepdown {cycle}: {e}", file=sys.stderr)
                    finally:
                        c.close()
                print(f"{fault}: cycle {cycle + 1}/{args.cycles}", file=sys.stderr, flush=True)
            time.sleep(args.run_seconds)
            for w in writers:
                w.halt()
            res = check_when_up(port, writers)
            res["seconds"] = round(time.time() - t0)
            results[fault] = res
            for w in writers:
                name = "retry" if w.retry else "plain"
                r = res[w.coll.name]
                failures += len(r["lost"]) + len(r["duplicated"])
                print(f"{fault:13} {name:5} writers: {r['acked']} acknowledged, {len(r['lost'])} lost, "
                      f"{len(r['duplicated'])} duplicated; {r['failed']} failed "
                      f"({r['failed_applied']} of them applied once) over {args.cycles} cycles, {res['seconds']} s")
                if r["lost"] or r["duplicated"]:
                    print(f"  lost {r['lost'][:10]} duplicated {r['duplicated'][:10]}")
    finally:
        if t.proc.poll() is not None:
            print(t.read_log(), file=sys.stderr)
        t.cleanup()
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
