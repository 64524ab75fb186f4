# tierdb — see README.md. `make run` and `make test` install what they need.
SHELL := /bin/bash
GO ?= go
BIN := bin/tierdb
BENCH_BIN := bin/tierdb-bench
VENV := .venv
PY := $(VENV)/bin/python
ARGS ?=

.PHONY: all build run test test-go test-py fuzz deps deps-postgres deps-python deps-tools deps-drivers soak bench bench-smoke bench-repl bench-baseline clean

all: build

# The server, and the benchmark harness as a binary of its own (the server
# links none of its code; cmd/tierdb's TestServerLinksNoHarness checks).
build: $(BIN) $(BENCH_BIN)

GO_SOURCES := $(shell find cmd internal -name '*.go' -not -name '*_test.go') go.mod go.sum

# -buildvcs=auto stamps the git commit (`tierdb version`) even where GOFLAGS
# says -buildvcs=false, and builds without it outside a git checkout; the
# git index and HEAD make a new commit rebuild the binary.
$(BIN): $(GO_SOURCES) $(wildcard .git/HEAD .git/index)
	@command -v $(GO) >/dev/null || { echo "Go 1.21+ is required (https://go.dev/dl); it fetches the toolchain go.mod asks for"; exit 1; }
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/tierdb

$(BENCH_BIN): $(GO_SOURCES) $(wildcard internal/bench/scenarios/*.yaml)
	@command -v $(GO) >/dev/null || { echo "Go 1.21+ is required (https://go.dev/dl); it fetches the toolchain go.mod asks for"; exit 1; }
	$(GO) build -o $(BENCH_BIN) ./cmd/tierdb-bench

# PostgreSQL comes from Debian's packages; tierdb runs it as an unprivileged user.
deps-postgres:
	@if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 && ! command -v pg_config >/dev/null; then \
		echo "installing PostgreSQL from Debian packages"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q postgresql </dev/null; \
	fi

# Test dependencies live in a private virtualenv (Debian's Python is externally managed).
deps-python: $(VENV)/.ok
$(VENV)/.ok: tests/requirements.txt
	@python3 -m venv --help >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q python3-venv </dev/null; }
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q -r tests/requirements.txt
	touch $@

# The TLS tests make certificates with the openssl command; the status
# page test drives Debian's chromium through chromium-driver (selenium).
deps-tools:
	@command -v openssl >/dev/null || { \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q openssl </dev/null; }
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || { \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q chromium chromium-driver </dev/null; }

# The Node.js and Java driver tests (tests/test_drivers.py) need node, npm,
# a JDK and Maven; their drivers come from npm and Maven Central.
deps-drivers:
	@command -v node >/dev/null && command -v npm >/dev/null && command -v javac >/dev/null && command -v mvn >/dev/null || { \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q nodejs npm default-jdk-headless maven </dev/null; }
	cd tests/node && npm ci --no-audit --no-fund
	cd tests/java && mvn -q -B dependency:copy-dependencies -DoutputDirectory=target/lib

deps: deps-postgres deps-python deps-tools deps-drivers

# The main job: build and run tierdb on its embedded PostgreSQL (./tierdb-data).
run: deps-postgres build
	./$(BIN) serve $(ARGS)

test: deps build test-go test-py

# The fuzzers run a number of inputs, not a time: Go 1.26's fuzzing
# coordinator can report its own -fuzztime deadline as a failure when a
# busy machine starves a worker at that moment (golang/go#75804, fixed in
# Go 1.27); a count has no deadline to race.
test-go:
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...
	$(GO) test -run '^$$' -fuzz FuzzReadMessage -fuzztime 250000x ./internal/wire
	$(GO) test -run '^$$' -fuzz FuzzSCRAMMessages -fuzztime 150000x ./internal/auth
	$(GO) test -run '^$$' -fuzz FuzzParseLSID -fuzztime 150000x ./internal/session

test-py: deps-python deps-tools build
	TIERDB_BIN=$(abspath $(BIN)) $(PY) -m pytest -q tests

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzReadMessage -fuzztime 1000000x ./internal/wire

# The papers' experiments, QoS off against on, report and plots under
# bench-results/, with the harness binary (bin/tierdb-bench -h lists all).
bench: deps-postgres build
	./$(BENCH_BIN) fig4
	./$(BENCH_BIN) fig5

bench-smoke: deps-postgres build
	./$(BENCH_BIN) --quick smoke

# Replication (issue 5): adaptive reads, bounded staleness, majority writes
# under noise; each PostgreSQL node in its own cgroup v1 CPU quota (root).
bench-repl: deps-postgres build
	./$(BENCH_BIN) decongestant-clients
	./$(BENCH_BIN) staleness
	./$(BENCH_BIN) fig5b
	./$(BENCH_BIN) fig5b-paper

# Fault soak (not in CI): kill -9 of tierdb and of PostgreSQL, step-downs,
# under retried and plain writes; fails on any lost or duplicated write.
SOAK_ARGS ?= --cycles 50
soak: deps-postgres deps-python build
	TIERDB_BIN=$(abspath $(BIN)) $(PY) tests/soak.py $(SOAK_ARGS)

# tierdb against the same operations as SQL straight on its PostgreSQL;
# ARGS='--help' lists the flags.
bench-baseline: deps-postgres build
	./$(BENCH_BIN) baseline $(ARGS)

clean:
	rm -rf bin $(VENV)
