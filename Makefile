# shmdoctor: make demo runs the doctor on the bundled LLM stack, make test runs every test.
GO       ?= go
BIN      ?= bin/shmdoctor
FUZZTIME ?= 10s
# The tag when the commit has one (v1.2.3, v1.2.3-4-gabcdef0 after it), else the commit
# (abcdef0), with -dirty for uncommitted changes.
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# The commit's time, never the build's: release builds are reproducible.
COMMIT      ?= $(shell git rev-parse HEAD 2>/dev/null)
COMMIT_TIME ?= $(shell git log -1 --format=%cI 2>/dev/null)
LDFLAGS  := -s -w -X main.buildVersion=$(VERSION) -X main.buildCommit=$(COMMIT) -X main.buildCommitTime=$(COMMIT_TIME)
RELEASE_TARGETS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
AGENT_TARGETS   ?= linux/amd64 linux/arm64

.PHONY: build demo reference test faults hostile lab fuzz bench vet install install-plugin clean docs release image

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/shmdoctor

# dist/shmdoctor_$(VERSION)_OS_ARCH[.exe] for every target, each embedding the linux agents
# (so that a macOS or Windows build probes Docker Desktop's engine), and dist/SHA256SUMS.
release:
	GO='$(GO)' $(GO) run ./scripts/release -version '$(VERSION)' -ldflags '$(LDFLAGS)' \
		-targets '$(RELEASE_TARGETS)' -agents '$(AGENT_TARGETS)' -dist dist

# localhost/shmdoctor:VERSION, FROM scratch with the static binary alone; the build context is
# bin/. The localhost/ name is no Docker Hub name, so a run with --pull=never never fetches
# another image of that name. The last line printed is the image's name.
IMAGE ?= localhost/shmdoctor:$(VERSION)
image: build
	docker build -q -f Dockerfile -t $(IMAGE) $(dir $(BIN)) >/dev/null
	@echo $(IMAGE)

# Exit status 1 means "findings", which is what the demo is for.
demo: build
	./$(BIN) testdata/demo || test $$? -eq 1

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo 'gofmt needed'; exit 1; }

# The conformance tests hold the doctor to the real docker compose v2, built once from its Go
# module (some minutes) and cached in $${XDG_CACHE_HOME:-~/.cache}/shmdoctor-reference: a step
# of its own, so that no test's timeout covers the build.
reference:
	@echo "make: the reference docker compose (built once, then cached)"
	@scripts/reference-compose.sh >/dev/null
	@echo "make: reference docker compose ready: $$(scripts/reference-compose.sh)"

test: vet reference
	@echo "make: go test ./... (the probe, watch and integration tests use the Docker Engine)"
	$(GO) test -count=1 -timeout 20m ./...
	@echo "make: a short run of each fuzz target"
	$(MAKE) fuzz

# The fault suite (root, Linux): the built binary against a private dockerd the suite starts
# and stops itself; it prints the fault matrix. FAULTS_N runs per fault.
FAULTS_N ?= 3
faults: build
	FAULTS_N=$(FAULTS_N) SHMDOCTOR_BIN=$(abspath $(BIN)) $(GO) test -tags faults -count=1 -timeout 15m -v ./internal/faults

# A short run of every fuzz target; go test -fuzz takes one target per run. A new input is
# minimised for at most FUZZMIN: FuzzDoctor runs the whole command, some 10 ms an input.
FUZZMIN ?= 5s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMIN) ./analyze/compose
	$(GO) test -run '^$$' -fuzz '^FuzzResolve$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMIN) ./analyze/compose
	$(GO) test -run '^$$' -fuzz '^FuzzParseEnv$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMIN) ./analyze/compose
	$(GO) test -run '^$$' -fuzz '^FuzzDoctor$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMIN) ./cmd/shmdoctor

# The hostile-input suite: the built binary on what a stranger's pull request can hold
# (secrets in every key, reads and writes outside the project, control characters and
# workflow commands, expansion bombs in a memory cgroup); it prints the matrix. Root, and a
# Docker Engine for the probed cases.
hostile: build
	SHMDOCTOR_BIN=$(abspath $(BIN)) $(GO) test -tags hostile -count=1 -v -parallel 6 -timeout 40m ./internal/hostile

# The truth lab: builds its Debian images where missing (mmdebstrap, docker import), runs the
# real workloads of testdata/lab against the engine, prints the agreement table and writes
# docs/lab.md; fails when a verdict disagrees with the real outcome.
lab:
	$(GO) test -tags lab -count=1 -v -timeout 40m -run '^TestLab$$' ./internal/lab

# docs/rules/*.md are generated from the rule registry; TestRuleDocs fails when they are stale.
docs:
	$(GO) test -count=1 -run '^TestRuleDocs$$' ./analyze/rules -update-docs

# Static analysis against docker compose config, then the probe against docker run and dd.
bench:
	./scripts/bench.sh
	./scripts/bench-probe.sh

install:
	CGO_ENABLED=0 $(GO) install -trimpath -ldflags '$(LDFLAGS)' ./cmd/shmdoctor

# docker shmdoctor ...: the same binary as a docker CLI plugin, in the folder the docker CLI
# reads plugins from: $DOCKER_CONFIG/cli-plugins, else ~/.docker/cli-plugins.
PLUGIN_DIR ?= $(or $(DOCKER_CONFIG),$(HOME)/.docker)/cli-plugins
install-plugin: build
	mkdir -p $(PLUGIN_DIR)
	cp $(BIN) $(PLUGIN_DIR)/docker-shmdoctor

clean:
	rm -rf bin dist engine/agents
