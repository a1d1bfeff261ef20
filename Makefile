# agentd build. Go 1.27.3 is fetched by the go command itself as a toolchain
# (the standard library of older releases has known vulnerabilities).
export GOTOOLCHAIN := go1.27.3
GO ?= go

TOOLS := $(CURDIR)/bin/tools
STATICCHECK_VERSION := v0.8.2
GOVULNCHECK_VERSION := v1.9.0
# `make run` listens on WebSocket port 4500 and on the default Unix socket
# (<home>/app-server-control/app-server-control.sock).
RUN_LISTEN ?= --listen ws://127.0.0.1:4500 --listen unix://
# `make run` selects the built-in offline demo model, so it needs no API key
# (the default provider is openai). RUN_CONFIG= serves your own config.
RUN_CONFIG ?= -c 'model_provider="demo"'
FUZZTIME ?= 10s
# Where `make schema` writes stable.schemas.json and experimental.schemas.json.
SCHEMA_DIR ?= schema

.PHONY: build run test race bench bench-history load systemd-e2e fuzz lint fmt tidy vet staticcheck vuln schema clean

build:
	$(GO) build -o bin/agentd ./cmd/agentd

run: build
	bin/agentd serve $(RUN_LISTEN) $(RUN_CONFIG)

test:
	$(GO) test -count=1 ./...

# The daemon's concurrent packages under the race detector.
race:
	$(GO) test -count=1 -race ./server/... ./cmd/...

# Micro-benchmarks by time; the end-to-end turn benchmarks (a fresh daemon
# per op, seconds each) by count. BENCH_COUNT=3 repeats each for ranges.
BENCH_COUNT ?= 1
BENCH_E2E := 'Turn20k|DeltaLatency'

bench:
	$(GO) test -run '^$$' -bench . -benchtime 2s -count $(BENCH_COUNT) ./server/rpc/ ./core/ ./core/mcp/
	$(GO) test -run '^$$' -bench . -skip $(BENCH_E2E) -benchtime 2s -count $(BENCH_COUNT) ./test/
	$(GO) test -run '^$$' -bench $(BENCH_E2E) -benchtime 3x -count $(BENCH_COUNT) -timeout 30m ./test/

# thread/resume at a named pipe, /dev/zero, a 200 MB file with no newline
# and a stored line past the 64 MiB cap: time and peak RSS above idle.
bench-history:
	$(GO) test -run '^$$' -bench HostileResume -benchtime 5x -count $(BENCH_COUNT) ./test/

# The load harness (test/load): agentd and the mock model as processes,
# real WebSocket clients, one table of figures; a few minutes at its
# default sizes. LOAD_FLAGS=-full for the issue's sizes; LOAD_REFERENCE=PATH
# to the reference binary (codex) runs the same scenarios against it too.
LOAD_FLAGS ?=
LOAD_REFERENCE ?=

load: build
	$(GO) build -o bin/agentd-load ./test/load
	bin/agentd-load -agentd bin/agentd $(if $(LOAD_REFERENCE),-reference $(LOAD_REFERENCE)) $(LOAD_FLAGS)

# The shipped units under a real systemd manager (root's user manager in
# its own cgroup and mount namespace; containers and CI machines where
# systemd is installed but not PID 1). Opt-in: make test skips it.
systemd-e2e:
	AGENTD_SYSTEMD_E2E=1 $(GO) test -count=1 -run 'TestSystemdManager' -v ./test/

fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzLineReader$$' -fuzztime $(FUZZTIME) ./server/transport/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeMessage$$' -fuzztime $(FUZZTIME) ./server/rpc/
	$(GO) test -run '^$$' -fuzz '^FuzzOutputElider$$' -fuzztime $(FUZZTIME) ./core/model/
	$(GO) test -run '^$$' -fuzz '^FuzzScanEvent$$' -fuzztime $(FUZZTIME) ./core/model/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeParams$$' -fuzztime $(FUZZTIME) ./protocol/

lint: fmt tidy vet staticcheck

fmt:
	@files=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$files" ]; then echo "gofmt needed:"; echo "$$files"; exit 1; fi

# go.mod and go.sum say exactly what the code imports.
tidy:
	@out=$$($(GO) mod tidy -diff 2>&1); \
	if [ -n "$$out" ]; then echo "go mod tidy needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# Known vulnerabilities in the code paths agentd uses, from the Go
# vulnerability database; skipped, with a message, when it is unreachable.
vuln:
	@if [ ! -x $(TOOLS)/govulncheck ] && ! GOBIN=$(TOOLS) $(GO) install golang.org/x/vuln/cmd/govulncheck@$(GOVULNCHECK_VERSION); then \
		echo "make vuln: skipped, govulncheck $(GOVULNCHECK_VERSION) could not be installed"; \
	elif curl -fsS -m 10 -o /dev/null https://vuln.go.dev/index/db.json 2>/dev/null; then \
		$(TOOLS)/govulncheck ./...; \
	else echo "make vuln: skipped, the vulnerability database (vuln.go.dev) is unreachable"; fi

staticcheck: $(TOOLS)/staticcheck
	$(TOOLS)/staticcheck ./...

$(TOOLS)/staticcheck:
	GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

schema: build
	bin/agentd schema --out $(SCHEMA_DIR)
	bin/agentd schema --experimental --out $(SCHEMA_DIR)

clean:
	rm -rf bin
