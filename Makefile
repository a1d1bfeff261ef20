# agentd build. Go 1.27.3 is fetched by the go command itself as a toolchain.
export GOTOOLCHAIN := go1.27.3
GO ?= go

.PHONY: build test
build:
	$(GO) build -o bin/agentd ./cmd/agentd

test:
	$(GO) test ./...
