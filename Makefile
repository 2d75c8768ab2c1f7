# svc build, test and run. `make run` and `make test` are the two commands a
# new user needs; everything else is a step of them.

GO       ?= go
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X github.com/svc-gateway/svc/internal/version.Version=$(VERSION)
PLUGINS  := $(patsubst plugins/%/,%,$(wildcard plugins/*/))
FUZZTIME ?= 30s
# staticcheck at a pinned version, built by `go run` outside go.mod (so its
# dependencies never touch svc's build); the first run fetches it.
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: all build svc plugins client run test test-go test-postgres test-ts test-compat fuzz bench bench-go lint proto clean

all: build

## build: bin/svc and every plugin into bin/plugins/svc-<name>
build: svc plugins

svc:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/svc ./cmd/svc

plugins:
	@mkdir -p bin/plugins
	@for p in $(PLUGINS); do \
		echo "$(GO) build -o bin/plugins/svc-$$p ./plugins/$$p"; \
		$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/plugins/svc-$$p ./plugins/$$p || exit 1; \
	done

## client: the TypeScript client, clients/typescript/dist (needs Node 18+ and
## npm; its dev dependencies come from its lockfile)
client:
	cd clients/typescript && npm ci --no-audit --no-fund && npm run build

## run: build and serve on :4100 with the embedded SQLite and the mock provider
run: build
	./bin/svc

## test: every test
test: build test-go test-postgres test-ts test-compat

## test-go: every Go package under the race detector but pkg/som, then
## pkg/som without it. pkg/som's tests compile a corpus of real pages, ten
## times the CPU under the detector, and the package starts no goroutine,
## its tests included (its TestNoGoroutines fails on a go statement), so the
## detector has nothing there to watch; its callers' tests (internal/browse,
## plugins/som-external) run its code under the detector.
test-go:
	$(GO) test -race -count=1 $$($(GO) list ./... | grep -v '/pkg/som$$')
	$(GO) test -count=1 ./pkg/som

## test-postgres: the store's tests and those of every package that opens
## its stores through storetest, again on PostgreSQL (SVC_TEST_DB=postgres:
## a throwaway cluster per test process, and a test fails without one). On a
## machine without PostgreSQL's programs (initdb on PATH, or
## /usr/lib/postgresql/*/bin/postgres) the target says SKIPPED and passes. internal/httpapi and internal/app are left out: their
## servers are built by app.New on an SQLite file, and their tests of
## several replicas run on PostgreSQL in test-go already. No race detector here: test-go runs these
## tests under it, and the tests only PostgreSQL has (several replicas) with
## it too; this run is about the SQL, and keeps make test short.
PG_PKGS := $(filter-out internal/httpapi/ internal/app/,$(sort $(dir $(shell grep -rl --include='*_test.go' 'internal/store/storetest"' internal))))
test-postgres:
	@if command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then \
		echo 'SVC_TEST_DB=postgres $(GO) test -count=1 $(addprefix ./,$(PG_PKGS))'; \
		SVC_TEST_DB=postgres $(GO) test -count=1 $(addprefix ./,$(PG_PKGS)); \
	else \
		echo '*** SKIPPED: PostgreSQL not installed (no initdb on PATH, no /usr/lib/postgresql/*/bin/postgres): the PostgreSQL tests did not run; install Debian'"'"'s postgresql package to run them ***'; \
	fi

## test-ts: the TypeScript client's unit tests, and its tests against bin/svc
test-ts: build client
	cd clients/typescript && npm test

## test-compat: bin/svc driven by the clients applications use: the official
## openai package and the Vercel AI SDK (clients/compat, dev dependencies from
## its lockfile), and the official Go SDK (clients/compat/go, a module of its
## own so the SDK stays out of svc's go.mod). SVC_COMPAT_PENDING=1 also runs
## the tests of features not served yet as ordinary tests.
test-compat: build
	cd clients/compat && npm ci --no-audit --no-fund && npm test
	cd clients/compat/go && $(GO) test -count=1 ./...

## fuzz: each fuzz target for FUZZTIME (seeds also run in every `make test`)
fuzz:
	@for target in $$($(GO) test -list '^Fuzz' ./... 2>/dev/null | grep '^Fuzz'); do \
		pkg=$$(grep -rl "func $$target(" --include='*_test.go' . | xargs -n1 dirname | head -1); \
		echo "fuzz $$target in $$pkg"; \
		$(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	done

## bench: svc in front of an upstream with a fixed latency, through
## provider-openai: added latency, streaming first byte, throughput, memory,
## and the CPU a call metrics and tracing add
bench: build
	$(GO) run ./cmd/svc-bench

## bench-go: the Go micro-benchmarks
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem ./...

## lint: gofmt, go vet and staticcheck (its default checks; a false positive
## is silenced where it is, with //lint:ignore and the reason)
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...

## proto: regenerate the plugin protocol's Go code (needs protoc, protoc-gen-go
## and protoc-gen-go-grpc on PATH; the generated files are committed). The
## committed code came from Debian's protobuf-compiler (3.21.12) and
## `go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
## google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2`.
proto:
	protoc --go_out=. --go_opt=paths=source_relative \
		--go-grpc_out=. --go-grpc_opt=paths=source_relative \
		pkg/pluginapi/proto/pluginapi.proto

clean:
	rm -rf bin clients/typescript/dist clients/typescript/node_modules clients/compat/node_modules
