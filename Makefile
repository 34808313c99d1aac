# shmdoctor: make demo runs the doctor on the bundled LLM stack, make test runs every test.
GO       ?= go
BIN      ?= bin/shmdoctor
FUZZTIME ?= 10s
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X main.buildVersion=$(VERSION)

.PHONY: build demo test fuzz bench vet install install-plugin clean docs

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/shmdoctor

# Exit status 1 means "findings", which is what the demo is for.
demo: build
	./$(BIN) testdata/demo || test $$? -eq 1

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo 'gofmt needed'; exit 1; }

test: vet
	$(GO) test -count=1 ./...
	$(MAKE) fuzz

# A short run of every fuzz target; go test -fuzz takes one target per run.
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime $(FUZZTIME) ./analyze
	$(GO) test -run '^$$' -fuzz '^FuzzResolve$$' -fuzztime $(FUZZTIME) ./analyze

# Static analysis against docker compose config, then the probe against docker run and dd.
# docs/rules/*.md are generated from the rule registry; TestRuleDocs fails when they are stale.
docs:
	$(GO) test -count=1 -run '^TestRuleDocs$$' ./analyze -update-docs

bench:
	./scripts/bench.sh
	./scripts/bench-probe.sh

install:
	CGO_ENABLED=0 $(GO) install -trimpath -ldflags '$(LDFLAGS)' ./cmd/shmdoctor

# docker shmdoctor ...: the same binary as a docker CLI plugin.
PLUGIN_DIR ?= $(HOME)/.docker/cli-plugins
install-plugin: build
	mkdir -p $(PLUGIN_DIR)
	cp $(BIN) $(PLUGIN_DIR)/docker-shmdoctor

clean:
	rm -rf bin dist
