"""The benchmark harness end to end: `tierdb-bench --quick smoke` starts its
own PostgreSQL and tierdb, runs the time-sensitive clients in a process of
their own (internal/bench/clientproc.go) beside the noise clients in its
own, and reports both."""
import json
import os
import subprocess

from conftest import ROOT, _binary


def bench_binary():
    path = os.path.join(os.path.dirname(_binary()), "tierdb-bench")
    if not os.path.exists(path):
        subprocess.run(["go", "build", "-o", path, "./cmd/tierdb-bench"], cwd=ROOT, check=True)
    return path


def test_smoke_runs_the_time_sensitive_clients_in_a_process_of_their_own(tmp_path):
    out = tmp_path / "smoke"
    proc = subprocess.run([bench_binary(), "-tierdb", _binary(), "-quick", "-no-plots", "-out", str(out), "smoke"],
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    results = json.loads((out / "results.json").read_text())
    runs = {r["variant"]: r for r in results["runs"]}
    assert set(runs) == {"baseline", "off", "on-t1"}, runs.keys()
    for name, run in runs.items():
        groups = {g["name"]: g for g in run["groups"]}
        ts = groups["ts"]
        # Every operation of the client process came back, with its
        # latencies and the samples kept for the timeline.
        assert ts["ops"] > 0 and ts["errors"] == 0, (name, ts["ops"], ts.get("firstError"))
        assert ts["latency"]["n"] == ts["ops"] and len(ts["samples"]) == ts["clients"], name
        if name != "baseline":
            assert groups["noise"]["ops"] > 0, name
            assert 0 < ts["start"] < ts["end"], (name, ts["start"], ts["end"])
    # The harness's own process held only the noise clients: its goroutines'
    # scheduling delays are reported beside the figures.
    assert runs["on-t1"]["diagnostics"]["loadGenSched"]["count"] > 0
    assert "qosStatus" in runs["on-t1"]
