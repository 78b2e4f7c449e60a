# Subako: `make run` starts the console on SQLite in ./data; `make test` runs the suite.
GO       ?= go
BIN      := bin/subako
export CGO_ENABLED := 0

.PHONY: run build packages generate test test-postgres check deps bench fuzz soak clean

run: build
	@command -v bwrap >/dev/null && command -v slirp4netns >/dev/null && command -v mkfs.ext4 >/dev/null && command -v mmdebstrap >/dev/null || { echo "installing bubblewrap, slirp4netns, e2fsprogs and mmdebstrap for sandboxes (apt-get)"; \
	  { apt-get update -qq && apt-get install -y -qq bubblewrap slirp4netns iproute2 e2fsprogs mmdebstrap >/dev/null; } || \
	  echo "could not install them: the console runs, and sandbox calls answer how to install bubblewrap"; }
	./$(BIN) serve

build: packages
	$(GO) build -o $(BIN) ./cmd/subako
	$(GO) build -o $(dir $(BIN))subako-agent ./cmd/subako-agent

# The shipped function packages (jq, html, javascript, github), built for
# GOOS=wasip1 into the folder cmd/subako embeds; git-ignored, never committed.
FNPACKAGES := cmd/subako/fnpackages
packages:
	sh runtime/fn/packages/build.sh $(FNPACKAGES)

generate:
	$(GO) tool templ generate -include-version=false

# The whole suite, on SQLite, or on PostgreSQL when SUBAKO_TEST_DATABASE_URL is set.
# deps installs what the browser tests need when it is missing (Debian).
# The sandbox release image (about 1 minute to build, 850 MB) is built once per
# machine into SUBAKO_RELEASE_CACHE (default /var/tmp/subako-releases) and shared.
test: deps
	$(GO) test -count=1 -timeout 30m ./...

test-postgres:
	SUBAKO_TEST_DATABASE_URL=$${SUBAKO_TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable} $(MAKE) test

# Every Go fuzz target in the tree, each for FUZZTIME (its seed corpus in
# testdata/fuzz also runs in `make test`). A failure leaves its input in testdata/fuzz.
FUZZTIME ?= 10s
fuzz:
	@mkdir -p build; set -e; for f in $$(grep -rl --include='*_test.go' '^func Fuzz' cmd handlers models runtime web); do \
	  for name in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$$f"); do \
	    echo "fuzz: $$name (./$$(dirname $$f)) for $(FUZZTIME)"; \
	    $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) ./$$(dirname $$f) > build/fuzz.log 2>&1 || \
	      if grep -q 'context deadline exceeded' build/fuzz.log && ! grep -q 'Failing input written' build/fuzz.log; then \
	        echo "fuzz: $$name hit its time mid-run (a go test -fuzz quirk), no failing input"; \
	      else tail -40 build/fuzz.log; exit 1; fi; \
	  done; \
	done

# 20 clients of mixed calls against one server for SOAK, after which
# goroutines, descriptors and heap must come back near their start.
SOAK ?= 30s
soak: deps
	SUBAKO_SOAK=$(SOAK) $(GO) test -count=1 -timeout 20m -run '^TestSoak' -v ./web/

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# House rules: formatted, vetted, generated files current, go.mod tidy, runtime free of the web layer.
check:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	$(GO) tool templ generate -include-version=false
	@git diff --exit-code -- '*_templ.go' || { echo "templ generate changed files: commit them"; exit 1; }
	$(GO) mod tidy
	@git diff --exit-code -- go.mod go.sum || { echo "go mod tidy changed go.mod/go.sum: commit them"; exit 1; }
	@! $(GO) list -deps ./runtime/... | grep -E 'labstack/echo|a-h/templ|subako/(handlers|views|web)$$' || { echo "runtime imports the web layer"; exit 1; }

# What the tests start for real: Chromium, bubblewrap and slirp4netns (Debian),
# the reference MCP server, axe-core, the typst compiler and tsc (npm). Installed only when missing.
MCP_TEST_SERVER := runtime/mcpclient/testdata/server-everything
AXE := web/testdata/axe
INSPECTOR := web/testdata/inspector
TYPST := runtime/fn/packages/typst/compiler
TYPESCRIPT := web/testdata/typescript
OPENAPI := web/testdata/openapi
deps:
	@missing=""; \
	command -v chromium >/dev/null || missing="$$missing chromium chromium-driver"; \
	command -v bwrap >/dev/null || missing="$$missing bubblewrap"; \
	command -v slirp4netns >/dev/null || missing="$$missing slirp4netns"; \
	command -v ip >/dev/null || missing="$$missing iproute2"; \
	command -v mkfs.ext4 >/dev/null || missing="$$missing e2fsprogs"; \
	command -v mmdebstrap >/dev/null || missing="$$missing mmdebstrap"; \
	command -v npm >/dev/null || missing="$$missing nodejs npm"; \
	if [ -n "$$missing" ]; then echo "installing$$missing"; apt-get update -qq && apt-get install -y -qq $$missing >/dev/null; fi
	@test -d $(MCP_TEST_SERVER)/node_modules || { echo "installing the MCP test server (npm ci)"; npm ci --prefix $(MCP_TEST_SERVER) --no-audit --no-fund --loglevel=error; }
	@test -d $(AXE)/node_modules || { echo "installing axe-core for the browser tests (npm ci)"; npm ci --prefix $(AXE) --no-audit --no-fund --loglevel=error; }
	@test -d $(INSPECTOR)/node_modules || { echo "installing the MCP Inspector for its strict tools/list check (npm ci)"; npm ci --prefix $(INSPECTOR) --no-audit --no-fund --loglevel=error; }
	@test -d $(TYPST)/node_modules || { echo "installing the typst package's compiler (npm ci)"; npm ci --prefix $(TYPST) --no-audit --no-fund --loglevel=error; }
	@sh runtime/objstore/s3test/build-weed.sh || echo "could not build SeaweedFS weed: the object store tests will skip"
	@test -d $(TYPESCRIPT)/node_modules || { echo "installing TypeScript for the typed client checks (npm ci)"; npm ci --prefix $(TYPESCRIPT) --no-audit --no-fund --loglevel=error; }
	@test -d $(OPENAPI)/node_modules || { echo "installing the OpenAPI validator for the openapi.json check (npm ci)"; npm ci --prefix $(OPENAPI) --no-audit --no-fund --loglevel=error; }

clean:
	rm -rf bin build
	rm -f $(FNPACKAGES)/*.wasm $(FNPACKAGES)/*.manifest.json
