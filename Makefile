# tilesieve — `make help` lists the targets.

SHELL        := /bin/bash
GO           ?= go
GOBIN        ?= $(shell $(GO) env GOPATH)/bin
export PATH  := $(GOBIN):$(PATH)

# Pinned tools, installed from the Go module proxy by `make tools`.
RIE_VERSION         := v0.0.0-20261030222936-bef5c4ba774d
STATICCHECK_VERSION := v0.8.2

# Lambda runs provided.al2023 on arm64; SAM's makefile builds set ARTIFACTS_DIR.
LAMBDA_GOARCH ?= arm64
LAMBDA_BUILD   = CGO_ENABLED=0 GOOS=linux GOARCH=$(LAMBDA_GOARCH) $(GO) build -trimpath -tags lambda.norpc,envcreds -ldflags='-s -w'
ARTIFACTS_DIR ?= build

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_.-]+:.*## / {printf "  \033[36m%-20s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# `go run` exits 1 after Ctrl-C (the go command counts the interrupt against
# its build), so make would report an error: build, then run the binary.
DEVSTACK_BIN ?= build/devstack

.PHONY: run
run: ## Run the whole loop locally: embedded S3, tile function on :8080, worker, viewer (ARGS=flags)
	$(GO) build -o $(DEVSTACK_BIN) ./infra/devstack
	exec $(DEVSTACK_BIN) $(ARGS)

# go test vets every package it builds; -vet=all runs all of go vet's checks
# there, on the -race build, so `make test` does not compile the tree a second
# time without -race for a separate `go vet`. The bench module's tests run
# without -race: its comparisons against go-pmtiles and SQLite run many times
# slower under it, more than compiling its graph once more costs. They build
# as the emulator tests' bootstraps are built (no cgo, trimmed paths), so the
# standard library, the AWS SDK and SQLite compiled for those bootstraps serve
# them too instead of being compiled a third time.
#
# Each go test pipes its -json stream through build/testreport, which prints a
# line per package, a heartbeat while packages run, failures as they happen
# and a summary with every skipped test and its reason; the stream itself is
# kept in build/test-<target>*.json. pipefail keeps go test's own exit status.
# NO_RACE_TESTS count the allocations of answers built in pooled buffers,
# which the race detector's sync.Pool drops on purpose: under -race they
# skip, and make test runs them once more without it.
NO_RACE_TESTS = ^(TestBufferedDiskHitLeavesNoGarbage|TestSendToCopiesWithoutGarbage)$$

.PHONY: test
test: fmt-check tools ## gofmt check, go test -race with every go vet check (incl. fuzz seeds, RIE smoke tests), the bench module's tests
	$(GO) build -o build/testreport ./infra/testreport
	set -o pipefail; TILESIEVE_REQUIRE_RIE=1 $(GO) test -json -race -vet=all -count=1 -timeout 20m ./... 2>&1 | build/testreport -json build/test-test.json
	set -o pipefail; $(GO) test -json -race -vet=all -count=1 -tags envcreds ./shared/awsclient/ 2>&1 | build/testreport -json build/test-test-envcreds.json
	set -o pipefail; $(GO) test -json -vet=off -count=1 -run '$(NO_RACE_TESTS)' ./functions/tiles/ ./shared/tiers/disk/ 2>&1 | build/testreport -json build/test-test-norace.json
	set -o pipefail; cd bench && E2E_SMOKE=purge CGO_ENABLED=0 GOFLAGS='$(GOFLAGS) -trimpath' $(GO) test -json -vet=all -count=1 -timeout 10m ./... 2>&1 | ../build/testreport -module github.com/tilesieve/tilesieve -json ../build/test-test-bench.json

.PHONY: test-short
test-short: ## The inner loop: go test -short, no -race; no emulator, browser or Varnish runs, long property runs cut down
	$(GO) build -o build/testreport ./infra/testreport
	set -o pipefail; $(GO) test -json -short -count=1 ./... 2>&1 | build/testreport -json build/test-test-short.json
	set -o pipefail; $(GO) test -json -short -count=1 -tags envcreds ./shared/awsclient/ 2>&1 | build/testreport -json build/test-test-short-envcreds.json

.PHONY: fmt-check
fmt-check: ## Fail if gofmt would change a file
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

.PHONY: vet
vet: ## go vet
	$(GO) vet ./...

.PHONY: lint
lint: vet tools ## staticcheck on the product module and the bench module
	staticcheck ./...
	cd bench && staticcheck ./...

.PHONY: fuzz
fuzz: ## Fuzz every parser of outside input for FUZZTIME each (default 30s)
	@set -e; for t in \
	    FuzzKeyFromPath:./shared/tile/ \
	    FuzzDecode:./shared/purge/s3event/ \
	    FuzzRequestFromEvent:./functions/tiles/ \
	    FuzzDecode:./shared/tile/coding/ \
	    FuzzConditionalHeaders:./shared/tileserver/internal/httpspec/ \
	    FuzzParseManifest:./shared/origin/stage/ \
	    FuzzDecodeFile:./shared/tiers/disk/ \
	    FuzzOps:./shared/tiers/memory/ \
	    FuzzParseHeader:./shared/formats/pmtiles/ \
	    FuzzParseDirectory:./shared/formats/pmtiles/ \
	    FuzzReader:./shared/formats/pmtiles/ \
	    FuzzDecompress:./shared/formats/pmtiles/ \
	    FuzzRewriteID:./shared/docs/iiif/ \
	    FuzzRewrite:./shared/docs/style/ \
	    FuzzDecode:./shared/docs/glyphs/ \
	    FuzzParseKey:./shared/docs/glyphs/ \
	    FuzzFromMetadata:./shared/formats/tileset/ \
	    FuzzOpen:./shared/formats/mbtiles/ \
	    FuzzOpen:./shared/formats/tiff/ \
	    FuzzChain:./shared/formats/tiff/internal/ifd/ \
	    FuzzDecompress:./shared/formats/tiff/internal/codec/ \
	    FuzzTables:./shared/formats/tiff/internal/jpegseg/ \
	    FuzzParseKeys:./shared/formats/tiff/geotiff/ \
	    FuzzParseMetadata:./shared/formats/tiff/gdalmeta/ \
	    FuzzParseStructure:./shared/formats/tiff/gdalmeta/ \
	    FuzzParse:./shared/images/iiif/ \
	    FuzzParsePath:./shared/images/iiif/ \
	    FuzzNew:./shared/images/xyz/ \
	    FuzzPlan:./shared/images/xyz/ \
	    FuzzProjection:./shared/images/geo/ ; do \
	  echo "== $${t%%:*} ($${t#*:})"; \
	  $(GO) test -run '^$$' -fuzz "^$${t%%:*}$$" -fuzztime $(or $(FUZZTIME),30s) "$${t#*:}"; \
	done

.PHONY: tools
tools: $(GOBIN)/aws-lambda-rie $(GOBIN)/staticcheck ## Install the pinned test tools (Lambda RIE, staticcheck)

$(GOBIN)/aws-lambda-rie:
	$(GO) install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@$(RIE_VERSION)

$(GOBIN)/staticcheck:
	$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

.PHONY: build
build: ## Build both Lambda bootstraps for linux/arm64 (LAMBDA_GOARCH) into build/
	$(LAMBDA_BUILD) -o build/tiles/bootstrap ./functions/tiles
	$(LAMBDA_BUILD) -o build/worker/bootstrap ./worker

SIZE_BUDGET ?= .ci/size-budget

.PHONY: size-check
size-check: build ## Fail when a stripped arm64 bootstrap is more than 5% over its budget in .ci/size-budget
	@set -e; fail=0; while read -r name budget; do \
	  case "$$name" in ''|'#'*) continue;; esac; \
	  size=$$(stat -c %s build/$$name/bootstrap); \
	  limit=$$(( budget + budget / 20 )); \
	  pct=$$(awk -v s=$$size -v b=$$budget 'BEGIN {printf "%+.1f", (s - b) * 100 / b}'); \
	  if [ "$$size" -gt "$$limit" ]; then \
	    echo "size-check: build/$$name/bootstrap is $$size bytes, $$pct% over its budget of $$budget (limit $$limit)"; fail=1; \
	  else \
	    echo "size-check: build/$$name/bootstrap $$size bytes ($$pct% against its budget of $$budget)"; \
	  fi; \
	done < $(SIZE_BUDGET); exit $$fail

.PHONY: size-budget
size-budget: build ## Rewrite .ci/size-budget with the sizes of the bootstraps just built
	@{ grep '^#' $(SIZE_BUDGET); for n in tiles worker; do echo "$$n $$(stat -c %s build/$$n/bootstrap)"; done; } > $(SIZE_BUDGET).new && mv $(SIZE_BUDGET).new $(SIZE_BUDGET) && cat $(SIZE_BUDGET)

.PHONY: build-TilesFunction
build-TilesFunction: ## SAM makefile build of the tile function (writes bootstrap into ARTIFACTS_DIR)
	$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/tiles

.PHONY: build-SyncWorker
build-SyncWorker: ## SAM makefile build of the sync worker (writes bootstrap into ARTIFACTS_DIR)
	$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./worker

.PHONY: bench-cache
bench-cache: ## Memory-tier benchmarks vs peers; writes docs/BENCHMARKS.md
	cd bench && $(GO) run ./cmd/benchreport -out ../docs/BENCHMARKS.md

.PHONY: bench-invoke
bench-invoke: tools ## Whole Lambda invocations vs their floors: in process (BenchmarkInvoke*) and under the Lambda emulator; writes docs/BENCHMARKS.md
	cd bench && $(GO) run ./cmd/invokebench -out ../docs/BENCHMARKS.md

.PHONY: bench-mbtiles
bench-mbtiles: ## The SQLite library of shared/formats/mbtiles vs the other pure-Go one: bootstrap size, cold start, tile reads; writes docs/BENCHMARKS.md
	cd bench && $(GO) run ./cmd/mbtilesbench -out ../docs/BENCHMARKS.md

.PHONY: bench-tiers
bench-tiers: ## The tiers in process: a purge while 32 fills write to the disk tier (fsync vs not), a disk hit vs os.ReadFile; writes docs/BENCHMARKS.md
	cd bench && $(GO) run ./cmd/tierbench -out ../docs/BENCHMARKS.md

.PHONY: bench-compare
bench-compare: tools ## The product at BEFORE=REV beside this tree: sections 0 and 2 and the invocations, in interleaved rounds; writes docs/BENCHMARKS.md
	@if [ -z "$(BEFORE)" ]; then echo "bench-compare: set BEFORE to the revision before the change, e.g. make bench-compare BEFORE=main"; exit 2; fi
	bash bench/e2e/install-tools.sh
	cd bench && $(GO) run ./cmd/compare -before $(BEFORE) -out ../docs/BENCHMARKS.md

.PHONY: bench
bench: bench-cache bench-invoke bench-mbtiles bench-tiers ## All benchmarks: memory tier vs peers, invocations, the MBTiles SQLite library, the tiers in process, then end-to-end (bench/e2e); rewrites docs/BENCHMARKS.md and docs/bench/*.png
	bash bench/e2e/install-tools.sh
	cd bench && $(GO) run ./cmd/e2ebench -out ../docs/BENCHMARKS.md

.PHONY: localstack-up
localstack-up: ## Start LocalStack (Docker) and wait for the tiles bucket
	@bash localstack/up.sh

.PHONY: localstack-deploy
localstack-deploy: ## Build for this host and deploy both functions into LocalStack (re-run to update)
	@bash localstack/deploy.sh

.PHONY: localstack-smoke
localstack-smoke: ## Upload, fetch, re-upload; wait until the worker's purge reaches the function
	@bash localstack/smoke.sh

.PHONY: localstack-down
localstack-down: ## Stop LocalStack and drop its state
	@bash localstack/down.sh

.PHONY: localstack-e2e
localstack-e2e: ## up + deploy + smoke + down; prints one line and skips where no Docker engine answers
	@bash localstack/e2e.sh

.PHONY: validate
validate: ## Check template.yaml: its Go test (SAM transform, CloudFront Function under Node), and cfn-lint with informational rules when installed
	$(GO) test -count=1 ./infra/templatetest/
	@$(MAKE) --no-print-directory cfn-lint

.PHONY: cfn-lint
cfn-lint: ## cfn-lint on template.yaml, informational rules included, when installed (the lint half of make validate)
	@if command -v cfn-lint >/dev/null; then cfn-lint --include-checks I --non-zero-exit-code informational -- template.yaml && echo "cfn-lint: template.yaml clean (informational rules included)"; \
	else echo "cfn-lint not installed: skipped (no Debian package provides it; pip install cfn-lint where PyPI is reachable)"; fi

# The first run asks for the stack name, region and a few optional settings (see
# infra/deploy/first-deploy.sh) and records the name and region in samconfig.toml;
# every later run is a plain sam deploy.
.PHONY: deploy
deploy: ## Build and deploy to AWS with SAM (asks for the stack name and region the first time)
	sam build
	@if grep -q '^\[default\.global\.parameters\]' samconfig.toml; then sam deploy; \
	else bash infra/deploy/first-deploy.sh; fi

.PHONY: clean
clean: ## Remove build output
	rm -rf build .aws-sam
