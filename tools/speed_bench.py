#!/usr/bin/env python3
"""Query speed on one data set (issue 13, part 8): tierdb against direct PostgreSQL.

Loads N documents (default 100,000) into a tierdb, then times, as medians of
several runs:
  - sort+limit 10 on an indexed field, both directions, with and without an
    equality filter on a compound index's prefix, and through aggregate;
  - an unindexed count ({b: {$gt: x}}) and an unindexed $match (counted by
    $count in the pipeline, so no result shipping is measured);
  - a plain and a unique index build on a string field.
The same documents go into a jsonb table in tierdb's own PostgreSQL, where
the matching SQL is timed (psql's \\timing) for comparison.

Besides wall-clock medians it reports, when it knows the processes (it
started tierdb itself, or --tierdb-pid and --pg-data are given), the CPU
time per operation of tierdb and of its PostgreSQL: on a loaded machine
the wall clock measures the neighbours, CPU time the query. Throughput
"on one core" is documents / (tierdb + PostgreSQL CPU time).

  tools/speed_bench.py --bin /tmp/x/tierdb            # starts its own tierdb
  tools/speed_bench.py --uri mongodb://127.0.0.1:27017 --pg "host=... user=postgres dbname=tierdb"

Run it niced on a shared machine (nice -n 10). It prints one line per
figure and a JSON summary at the end.
"""
import argparse
import json
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import pymongo


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_tierdb(binary):
    data = tempfile.mkdtemp(prefix="tierdb-speed-", dir="/tmp")
    port = free_port()
    log = open(data + ".log", "ab")
    proc = subprocess.Popen([binary, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", data],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            c = pymongo.MongoClient("127.0.0.1", port, directConnection=True, serverSelectionTimeoutMS=1000)
            c.admin.command("ping")
            break
        except pymongo.errors.PyMongoError:
            if proc.poll() is not None:
                sys.exit("tierdb exited; see " + data + ".log")
            time.sleep(0.2)
    sock = open(os.path.join(data, "postgres.socketdir")).read().strip()
    return proc, data, f"mongodb://127.0.0.1:{port}/?directConnection=true", f"host={sock} user=postgres dbname=tierdb"


def make_docs(n, seed=13):
    rnd = random.Random(seed)
    docs = []
    for i in range(n):
        docs.append({
            "_id": i,
            "a": rnd.randrange(1_000_000),
            "b": rnd.randrange(1000),
            "g": rnd.randrange(10),
            "email": f"user{i:06d}.{rnd.randrange(10**6):06d}@example.com",
            "name": "n%d" % rnd.randrange(10**9),
            "pad": "x" * 64,
        })
    return docs


TCK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid):
    """user+system CPU seconds of one process (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TCK
    except (OSError, IndexError, ValueError):
        return 0.0


def children_cpu(parent):
    """CPU seconds of each child of parent (a postmaster's backends), by pid."""
    out = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if int(fields[1]) == parent:
                    out[int(d)] = (int(fields[11]) + int(fields[12])) / TCK
            except (OSError, IndexError, ValueError):
                pass
    return out


def pg_cpu_since(before):
    """CPU seconds the postmaster's children used since before (children
    that exited meanwhile are not counted; new ones count from 0)."""
    now = children_cpu(Procs.postmaster)
    return sum(v - before.get(pid, 0.0) for pid, v in now.items())


class Procs:
    tierdb = None      # pid
    postmaster = None  # pid


def timed(fn, runs):
    """Median wall ms, and mean CPU ms per run of tierdb and PostgreSQL."""
    fn()  # warm: plans, caches
    out = []
    c0 = proc_cpu(Procs.tierdb) if Procs.tierdb else 0
    p0 = children_cpu(Procs.postmaster) if Procs.postmaster else {}
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    cpu = None
    if Procs.tierdb and Procs.postmaster:
        cpu = ((proc_cpu(Procs.tierdb) - c0) * 1000 / runs, pg_cpu_since(p0) * 1000 / runs)
    return statistics.median(out), cpu


class Psql:
    """One psql session with \\timing, for the direct-PostgreSQL figures."""

    def __init__(self, conn):
        self.conn = conn

    def run(self, sql, stdin=None):
        p = subprocess.run(["psql", self.conn, "-v", "ON_ERROR_STOP=1", "-qAt", "-c", sql],
                           input=stdin, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(p.stderr)
        return p.stdout

    def median_ms(self, sql, runs):
        script = "\\timing on\n" + (sql + ";\n") * (runs + 1)
        p = subprocess.run(["psql", self.conn, "-v", "ON_ERROR_STOP=1", "-qAt"], input=script,
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(p.stderr)
        times = [float(x) for x in re.findall(r"^Time: ([0-9.]+) ms", p.stdout, re.M)][1:]
        return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", help="tierdb binary to start on a fresh data directory")
    ap.add_argument("--uri", help="an already running tierdb")
    ap.add_argument("--pg", help="libpq connection string of that tierdb's PostgreSQL (direct figures)")
    ap.add_argument("-n", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--keep", action="store_true", help="keep the data (with --uri)")
    ap.add_argument("--no-builds", action="store_true", help="skip the index build figures")
    ap.add_argument("--tierdb-pid", type=int, help="with --uri: tierdb's pid, for CPU times")
    ap.add_argument("--pg-data", help="with --uri: tierdb's --data-dir, for CPU times")
    args = ap.parse_args()
    proc = data = None
    if args.bin:
        proc, data, args.uri, args.pg = start_tierdb(args.bin)
        Procs.tierdb = proc.pid
        args.pg_data = data
    elif args.tierdb_pid:
        Procs.tierdb = args.tierdb_pid
    if args.pg_data:
        with open(os.path.join(args.pg_data, "pg", "postmaster.pid")) as f:
            Procs.postmaster = int(f.readline())
    if not args.uri:
        sys.exit("give --bin or --uri")
    results = {}

    def report(name, ms, cpu=None, docs=None):
        extra = ""
        results[name] = {"wall_ms": round(ms, 3)}
        if docs:
            extra += f" = {docs / ms * 1000:>11,.0f} docs/s wall"
        if cpu:
            results[name].update(tierdb_cpu_ms=round(cpu[0], 2), pg_cpu_ms=round(cpu[1], 2))
            extra += f"  | cpu tierdb {cpu[0]:7.1f} ms + pg {cpu[1]:7.1f} ms"
            if docs and sum(cpu) > 0:
                rate = docs / sum(cpu) * 1000
                results[name]["docs_per_cpu_s"] = round(rate)
                extra += f" = {rate:>11,.0f} docs/cpu-s"
        print(f"{name:45s} {ms:10.2f} ms{extra}", flush=True)

    try:
        client = pymongo.MongoClient(args.uri)
        db = client["speed_bench"]
        c = db.c
        docs = make_docs(args.n)
        if c.estimated_document_count() != args.n:
            c.drop()
            t = time.perf_counter()
            for i in range(0, len(docs), 1000):
                c.insert_many(docs[i:i + 1000], ordered=False)
            print(f"loaded {args.n} documents in {time.perf_counter() - t:.1f} s", flush=True)
        c.drop_indexes()

        # Index builds: plain, then unique, on the same string field
        # (median of three builds each).
        for unique in () if args.no_builds else (False, True):
            def build():
                c.drop_indexes()
                c.create_index("email", unique=unique)
            ms, cpu = timed(build, 3)
            report("index build email " + ("unique" if unique else "plain"), ms, cpu)
        c.drop_indexes()
        c.create_index("a")
        c.create_index([("g", 1), ("a", 1)])
        if args.pg:
            # Index builds rewrite every row (UPDATE ... SET k_n): vacuum the
            # dead versions now rather than whenever autovacuum comes, so
            # that scans read the table, not its leftovers.
            tbl = Psql(args.pg).run("SELECT tbl FROM tierdb.collections WHERE db = 'speed_bench' AND name = 'c'").strip()
            Psql(args.pg).run(f'VACUUM ANALYZE tierdb_data."{tbl}"')

        runs = args.runs
        x = 500  # b > 500: about half the documents
        n = args.n
        cases = [
            ("find sort {a:1} limit 10 (indexed)", lambda: list(c.find({}).sort("a", 1).limit(10)), None),
            ("find sort {a:-1} limit 10 (indexed)", lambda: list(c.find({}).sort("a", -1).limit(10)), None),
            ("find sort {a:1} skip 50 limit 10 (indexed)", lambda: list(c.find({}).sort("a", 1).skip(50).limit(10)), None),
            ("find {g:3} sort {a:1} limit 10 (compound)", lambda: list(c.find({"g": 3}).sort("a", 1).limit(10)), None),
            ("aggregate $match/$sort/$limit 10 (compound)", lambda: list(c.aggregate([{"$match": {"g": 3}}, {"$sort": {"a": -1}}, {"$limit": 10}])), None),
            ("find sort {b:1} limit 10 (unindexed)", lambda: list(c.find({}).sort("b", 1).limit(10)), n),
            ("count cmd {b:{$gt:500}} (unindexed)", lambda: db.command("count", "c", query={"b": {"$gt": x}}), n),
            ("count_documents {b:{$gt:500}} (unindexed)", lambda: c.count_documents({"b": {"$gt": x}}), n),
            ("aggregate $match {b:{$gt:500}} + $group", lambda: list(c.aggregate([{"$match": {"b": {"$gt": x}}}, {"$group": {"_id": "$g", "n": {"$sum": 1}}}])), n),
            ("find {b:{$gt:998}} (unindexed, ~100 results)", lambda: list(c.find({"b": {"$gt": 998}})), n),
            ("count_documents {}", lambda: c.count_documents({}), None),
        ]
        for name, fn, ndocs in cases:
            ms, cpu = timed(fn, runs)
            report(name, ms, cpu, ndocs)

        if args.pg:
            pg = Psql(args.pg)
            pg.run("DROP TABLE IF EXISTS speed_bench_jsonb")
            pg.run("CREATE TABLE speed_bench_jsonb (id int PRIMARY KEY, doc jsonb NOT NULL)")
            rows = "".join(f"{d['_id']}\t{json.dumps(d)}\n" for d in docs)
            pg.run("COPY speed_bench_jsonb FROM STDIN", stdin=rows)
            pg.run("CREATE INDEX speed_bench_jsonb_a ON speed_bench_jsonb (((doc->'a')))")
            pg.run("ANALYZE speed_bench_jsonb")
            report("pg: ORDER BY doc->'a' LIMIT 10 (index)", pg.median_ms("SELECT doc FROM speed_bench_jsonb ORDER BY doc->'a' LIMIT 10", runs))
            report("pg: count WHERE (doc->>'b')::int > 500", pg.median_ms("SELECT count(*) FROM speed_bench_jsonb WHERE (doc->>'b')::int > 500", runs), docs=n)
            report("pg: count WHERE doc->'b' > '500'", pg.median_ms("SELECT count(*) FROM speed_bench_jsonb WHERE doc->'b' > '500'::jsonb", runs), docs=n)
            tbl = pg.run("SELECT tbl FROM tierdb.collections WHERE db = 'speed_bench' AND name = 'c'").strip()
            report("pg: tierdb's table, read every doc", pg.median_ms(f"SELECT count(length(doc)) FROM tierdb_data.\"{tbl}\"", runs), docs=n)
            for unique in () if args.no_builds else (False, True):
                pg.run("DROP INDEX IF EXISTS speed_bench_jsonb_email")
                t = time.perf_counter()
                pg.run(f"CREATE {'UNIQUE ' if unique else ''}INDEX speed_bench_jsonb_email ON speed_bench_jsonb ((doc->>'email'))")
                report("pg: index build email " + ("unique" if unique else "plain"), (time.perf_counter() - t) * 1000)
            pg.run("DROP TABLE speed_bench_jsonb")
        print(json.dumps(results, indent=1))
        if not args.keep and not proc:
            client.drop_database("speed_bench")
    finally:
        if proc:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
            shutil.rmtree(data, ignore_errors=True)
            try:
                os.unlink(data + ".log")
            except OSError:
                pass


if __name__ == "__main__":
    main()
