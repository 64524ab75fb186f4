"""Transactions and retryable writes (their withTransaction helpers), an
aggregation with $lookup and change streams through the official Node.js
and Java drivers, against a real tierdb. The drivers
come from npm and Maven Central; the first run fetches them."""
import os
import shutil
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd, cwd, timeout=600):
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r.stdout


@pytest.fixture(scope="module")
def node_driver():
    d = os.path.join(HERE, "node")
    if not os.path.isdir(os.path.join(d, "node_modules", "mongodb")):
        run(["npm", "ci", "--no-audit", "--no-fund"], d)
    return d


@pytest.fixture(scope="module")
def java_driver():
    d = os.path.join(HERE, "java")
    lib = os.path.join(d, "target", "lib")
    if not os.path.isdir(lib):
        run(["mvn", "-q", "-B", "dependency:copy-dependencies", f"-DoutputDirectory={lib}"], d)
    classes = os.path.join(d, "target", "classes")
    os.makedirs(classes, exist_ok=True)
    run(["javac", "-d", classes, "-cp", os.path.join(lib, "*"), "Txn.java", "AggWatch.java"], d)
    return f"{classes}:{os.path.join(lib, '*')}"


def test_node_driver_with_transaction_and_retryable_writes(server, node_driver):
    out = run(["node", "txn.js", f"mongodb://127.0.0.1:{server.port}/"], node_driver, timeout=120)
    assert out.strip().endswith("ok")


def test_java_driver_with_transaction_and_retryable_writes(server, java_driver):
    assert shutil.which("java"), "Java is needed (Debian: default-jdk-headless)"
    out = run(["java", "-cp", java_driver, "Txn", f"mongodb://127.0.0.1:{server.port}/"], HERE, timeout=120)
    assert out.strip().endswith("ok")


def test_node_driver_lookup_and_watch(server, node_driver):
    out = run(["node", "aggwatch.js", f"mongodb://127.0.0.1:{server.port}/?directConnection=true"], node_driver, timeout=120)
    assert out.strip().endswith("ok")


def test_java_driver_lookup_and_watch(server, java_driver):
    assert shutil.which("java"), "Java is needed (Debian: default-jdk-headless)"
    out = run(["java", "-cp", java_driver, "AggWatch", f"mongodb://127.0.0.1:{server.port}/?directConnection=true"], HERE, timeout=120)
    assert out.strip().endswith("ok")
