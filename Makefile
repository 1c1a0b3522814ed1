# ethfab — `make` builds, `make test` runs every test (root-only integration
# tests skip themselves without root or Open vSwitch).
GO      ?= go
BIN     ?= bin/ethfab
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)

.PHONY: bpf all build test vet race reliability fuzz sweep clean quickstart mpibench

all: build

build:
	$(GO) build -ldflags "-X main.version=$(VERSION) -X main.commit=$(COMMIT)" -o $(BIN) ./cmd/ethfab

# The BPF programs (the eBPF datapath's emulator/datapath/bpf/switch.c,
# the traffic engine's send stamp hostagent/traffic/bpf/stamp.c, the tagged
# host ports' emulator/fabric/bpf/vlanport.c) are
# compiled here and their objects committed, so building ethfab needs no clang; after
# editing the C, run `make bpf` (clang and libbpf-dev: apt install clang
# libbpf-dev) and commit the object. TestObjectIsBuiltFromSource and
# TestStampObjectIsBuiltFromSource and TestVLANPortObjectIsBuiltFromSource check each pair
# agrees wherever clang is installed.
BPF_SRC = emulator/datapath/bpf/switch.c hostagent/traffic/bpf/stamp.c emulator/fabric/bpf/vlanport.c
bpf:
	for src in $(BPF_SRC); do \
		obj=$$(dirname $$(dirname $$src))/$$(basename $$src .c).bpf.o; \
		clang -O2 -g -target bpf -Wall -Werror -I/usr/include/$$(uname -m)-linux-gnu \
			-fdebug-prefix-map=$(CURDIR)=. -c $$src -o $$obj && llvm-strip -g $$obj || exit 1; \
	done

# The MPI microbenchmark (bench/mpi/mpibench.c), with Open MPI's mpicc
# (apt install libopenmpi-dev); scripts/provision.sh installs it as
# /usr/local/bin/ethfab-mpibench, where mpi phases find it.
mpibench:
	mpicc -O2 -Wall -Wextra -o bin/ethfab-mpibench bench/mpi/mpibench.c

vet:
	gofmt -l . | (! grep .) || (echo "gofmt needed"; exit 1)
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

# The race detector on the concurrent pure core, whose tests need no root
# (the controller compiles switches in parallel); -short keeps the
# exhaustive shape walks to a sample. The root packages run real fabrics,
# whose timing the detector's 5-10x slowdown would distort; plan and
# results (plot rendering) took 141 s and 89 s under it here.
RACE_PKGS = ./topology ./addressing ./compaction ./controller \
	./emulator/resources ./scenario ./traffic ./qcn ./qcnswitch ./snoopar ./vlan ./switchprofile ./partition
race:
	$(GO) test -race -short -count=1 $(RACE_PKGS)

# -p 1: the integration tests measure real throughput and loss on a shared
# 2-core machine; packages running side by side would measure each other.
test: vet race
	$(GO) test -count=1 -p 1 -timeout 30m ./...
	cd python && python3 -m unittest discover -s tests

# The reliability campaign's long runs (root): up and down killed at
# random moments round after round, labs whose daemons die under load,
# oversized fabrics, the hostile names and files; RELIABILITY_ROUNDS=100
# for more. `make test` runs one pass of each already.
RELIABILITY_ROUNDS ?= 20
reliability:
	ETHFAB_RELIABILITY=$(RELIABILITY_ROUNDS) $(GO) test -count=1 -p 1 -timeout 60m \
		-run 'Campaign|Killed|Dead|Oversized|Refuses|Limits|LabName|Down|Spoof|Guard' \
		./emulator/fabric ./emulator/run ./scenario ./hostagent/... ./cmd/ethfab
	$(GO) test -count=3 -run 'TestDeadDaemonFailsRun' ./emulator/run

# Short fuzz runs of every parser and the compaction; FUZZTIME=10m for more.
FUZZTIME ?= 20s
FUZZ_TARGETS = \
	FuzzCompact:./compaction \
	FuzzParseSpec:./topology \
	FuzzParseMachines:./partition \
	FuzzDecode:./emulator/gpmetis \
	FuzzParseConstants:./emulator/power \
	FuzzParseTCAMCurve:./emulator/power \
	FuzzParse:./scenario \
	FuzzParseRate:./internal/rate \
	FuzzFormat:./internal/rate \
	FuzzParsePacketDiag:./kernel \
	FuzzParseQdisc:./kernel \
	FuzzParseMemAvailable:./kernel \
	FuzzCapacity:./emulator/doctor \
	FuzzDecode:./traffic \
	FuzzDecode:./qcn \
	FuzzTranslate:./kernel/packet \
	FuzzParsePacketIn:./ovs/openflow \
	FuzzParseFlowStats:./ovs/openflow \
	FuzzParsePortStats:./ovs/openflow \
	FuzzParse:./hostagent/dmp \
	FuzzParseAnnouncement:./hostagent/omx \
	FuzzParseConnect:./hostagent/omx \
	FuzzHandle:./hostagent \
	FuzzResolve:./emulator/capture
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "fuzz $${t%%:*} in $${t#*:}"; \
		$(GO) test -run '^$$' -fuzz "^$${t%%:*}$$" -fuzztime $(FUZZTIME) $${t#*:}; \
	done

sweep: build
	$(BIN) plan --sweep --out plan-sweep

# The main job in one command (as root): install what is missing (a few
# seconds when nothing is), build, then run scenarios/quickstart.yaml end to
# end; it ends with the run directory and a summary. E.g.
# make quickstart QUICKSTART_FLAGS="--set name=qs2" for a second lab.
QUICKSTART_FLAGS ?=
quickstart:
	bash scripts/provision.sh --quiet
	$(BIN) run scenarios/quickstart.yaml $(QUICKSTART_FLAGS)

clean:
	rm -rf bin plan-sweep
