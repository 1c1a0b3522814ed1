# ethfab — `make` builds, `make test` runs every test (root-only integration
# tests skip themselves without root or Open vSwitch).
GO      ?= go
BIN     ?= bin/ethfab
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)

.PHONY: all build test vet fuzz sweep clean

all: build

build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/ethfab

vet:
	gofmt -l . | (! grep .) || (echo "gofmt needed"; exit 1)
	$(GO) vet ./...

test: vet
	$(GO) test -count=1 -timeout 30m ./...

# Short fuzz runs of every parser and the compaction; FUZZTIME=10m for more.
FUZZTIME ?= 20s
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzCompact -fuzztime $(FUZZTIME) ./emulator/compaction

sweep: build
	$(BIN) plan --sweep --out plan-sweep

clean:
	rm -rf bin plan-sweep
