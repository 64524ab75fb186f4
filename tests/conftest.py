"""Test bed: real tierdb processes on their embedded PostgreSQL, driven by pymongo."""
import os
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import tempfile
import time
import uuid

import bson
import pymongo
import pytest

import rawwire

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _binary():
    path = os.environ.get("TIERDB_BIN")
    if path:
        return path
    path = os.path.join(ROOT, "bin", "tierdb")
    subprocess.run(["go", "build", "-o", path, "./cmd/tierdb"], cwd=ROOT, check=True)
    return path


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PortTaken(Exception):
    """tierdb could not bind the port picked for it."""


class Tierdb:
    """One tierdb server process with its own data directory."""

    def __init__(self, binary, data_dir=None, extra_args=(), env=None, listen_host="127.0.0.1", tls=None):
        """env: extra environment variables (e.g. TIERDB_ADMIN_PASSWORD);
        listen_host: the address tierdb listens on (readiness is checked
        over 127.0.0.1); tls: {"ca": ..., "cert": ...} to check readiness
        over TLS (cert is a client PEM with key, when the server wants one)."""
        self.binary = binary
        self.env = env
        self.listen_host = listen_host
        self.tls = tls
        # /tmp is reachable by the unprivileged PostgreSQL user; pytest's
        # per-user temp root is not.
        self.data_dir = data_dir or tempfile.mkdtemp(prefix="tierdb-test-", dir="/tmp")
        self.extra_args = list(extra_args)
        self.proc = None
        self.port = None
        self.log_path = os.path.join(self.data_dir + ".log")

    def start(self, timeout=90):
        # The port is free when picked but another process on this shared
        # machine may take it before tierdb binds it: then pick another.
        for attempt in range(3):
            try:
                return self._start_once(timeout)
            except PortTaken:
                if attempt == 2:
                    raise

    def _start_once(self, timeout):
        self.port = free_port()
        self.log = open(self.log_path, "ab")
        log_start = self.log.tell()
        self.proc = subprocess.Popen(
            [self.binary, "serve", "--listen", f"{self.listen_host}:{self.port}", "--data-dir", self.data_dir, *self.extra_args],
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env={**os.environ, **(self.env or {})},
        )
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                self.log.close()
                with open(self.log_path, "rb") as f:
                    f.seek(log_start)
                    if b"address already in use" in f.read():
                        raise PortTaken(self.port)
                raise RuntimeError(f"tierdb exited with {self.proc.returncode}:\n{self.read_log()}")
            if self._answers_hello():
                return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"tierdb did not start in {timeout}s:\n{self.read_log()}")

    def _answers_hello(self):
        """Ready means tierdb itself answers on the port, not merely that
        something accepts connections there."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.settimeout(1)
                if self.tls:
                    ctx = ssl.create_default_context(cafile=self.tls["ca"])
                    if self.tls.get("cert"):
                        ctx.load_cert_chain(self.tls["cert"])
                    with ctx.wrap_socket(s, server_hostname="127.0.0.1") as ts:
                        return rawwire.command(ts, {"hello": 1, "$db": "admin"}).get("ok") == 1.0
                return rawwire.command(s, {"hello": 1, "$db": "admin"}).get("ok") == 1.0
        except (OSError, AssertionError, struct.error, bson.errors.BSONError):
            return False

    def read_log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")[-8000:]

    def client(self, **kw):
        kw.setdefault("serverSelectionTimeoutMS", 10000)
        return pymongo.MongoClient("127.0.0.1", self.port, directConnection=True, **kw)

    def stop(self, sig=signal.SIGTERM, timeout=60):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if getattr(self, "log", None):
            self.log.close()

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.data_dir, ignore_errors=True)
        try:
            os.unlink(self.log_path)
        except OSError:
            pass


@pytest.fixture(scope="session")
def tierdb_bin():
    return _binary()


@pytest.fixture(scope="session")
def server(tierdb_bin):
    """One tierdb shared by the tests of a session."""
    t = Tierdb(tierdb_bin, extra_args=["--cursor-timeout", "3s"]).start()
    yield t
    died = t.proc.poll()
    log = t.read_log()
    t.cleanup()
    # A crash of the shared server would otherwise only show as unrelated
    # connection errors in whichever tests ran after it.
    assert died is None, f"the shared tierdb exited during the session with {died}:\n{log}"


@pytest.fixture
def new_server(tierdb_bin):
    """A factory for tierdb servers owned by one test (restarts, kill -9)."""
    made = []

    def make(**kw):
        t = Tierdb(tierdb_bin, **kw)
        made.append(t)
        return t

    yield make
    for t in made:
        t.cleanup()


@pytest.fixture(scope="session")
def client(server):
    c = server.client()
    yield c
    c.close()


@pytest.fixture
def db(client):
    """A fresh database per test, dropped afterwards."""
    name = "t_" + uuid.uuid4().hex[:12]
    yield client[name]
    client.drop_database(name)


def node_pids(data_dir):
    """The postmaster of an embedded PostgreSQL (data_dir holds pg/) and
    its children, postmaster first."""
    with open(os.path.join(data_dir, "pg", "postmaster.pid")) as f:
        postmaster = int(f.readline())
    pids = [postmaster]
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == postmaster:
                        pids.append(int(d))
            except (OSError, IndexError, ValueError):
                pass  # gone meanwhile
    return pids


def helper_pid(data_dir, kind):
    """The PID of the PostgreSQL helper process whose title ends in kind
    ("checkpointer", "walwriter", "startup", "walsender …")."""
    for pid in node_pids(data_dir)[1:]:
        try:
            with open(f"/proc/{pid}/cmdline") as f:
                if f.read().replace("\0", " ").split(": ")[-1].startswith(kind):
                    return pid
        except OSError:
            pass
    raise AssertionError(f"no {kind} process in {data_dir}")


def ionice(pid):
    return subprocess.run(["ionice", "-p", str(pid)], capture_output=True, text=True, check=True).stdout.strip()
