# airlock: build, test, benchmark, fuzz, lint, demo.
GO        ?= go
BIN       ?= bin/airlock
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)
FUZZTIME  ?= 30s
# ISA-L's inflater (2.5x faster first fetch of a large catalog; docs/development.md) is built
# in when its development files are installed (Debian: libisal-dev); ISAL= builds
# without it, ISAL=1 insists.
ISAL      ?= $(shell test -f /usr/include/isa-l/igzip_lib.h && echo 1)
# containers_image_openpgp: containers/image's signature package (--policy)
# verifies GPG signatures in pure Go instead of through gpgme (cgo,
# libgpgme-dev): docs/signatures.md. Every build, test and lint uses it.
TAGS      := containers_image_openpgp $(if $(ISAL),isal)

.PHONY: all build install test test-short matrix bench fuzz lint demo conformance clean oc-mirror differential

all: build

build:
	$(GO) build -trimpath -tags "$(TAGS)" -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/airlock

# airlock into $GOBIN (default $(go env GOPATH)/bin), built as make build builds it. From a
# clone only: go install …/cmd/airlock@latest refuses a module whose go.mod has a replace.
install:
	$(GO) install -trimpath -tags "$(TAGS)" -ldflags "$(LDFLAGS)" ./cmd/airlock

# The full test suite, race detector on. This is what CI runs (then make matrix).
# go vet builds with -race so that the packages it compiles are the ones the
# tests link (without it a cold cache compiles the whole tree twice); make lint
# vets the build without it. TEST_FIRST are the packages whose tests run longest:
# named first, the go command builds and starts them first instead of last
# (docs/development.md, "Where make test spends its time"). go test's own vet
# pass is off: the go vet above has checked every package, test files included,
# with the same tags, so it would only do part of that work again.
# scripts/test-tmpdir.sh gives the tests a TMPDIR of their own on a tmpfs when
# /dev/shm has room (TEST_TMPFS=none: as it is): creating, syncing and deleting
# their many small files cost the kernel a quarter of the tests' CPU on disk.
TEST_FIRST ?= ./pipeline/ ./cmd/airlock/ ./bench/

test:
	$(GO) vet -race -tags "$(TAGS)" ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go' | grep -v '^conformance/'))" || (echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1)
	./scripts/test-tmpdir.sh $(GO) test -race -vet=off -tags "$(TAGS)" -timeout 20m -skip '^TestRegistryMatrix$$' $(TEST_FIRST) ./...

# The registry matrix (docs/registries.md): every workflow against Distribution
# 2.8 (Debian's docker-registry; its cells skip when it is not installed),
# Distribution v3, token auth, CDN redirects, a private CA and htpasswd, race
# detector on. About 95 s of CPU (3.5 minutes on 2 cores shared with other builds).
matrix:
	$(GO) test -race -tags "$(TAGS)" -timeout 15m -count=1 -v -run '^TestRegistryMatrix$$' ./pipeline/

test-short:
	$(GO) test -short ./...

# Benchmarks at real scale (docs/benchmarks.md): one table, kept with the
# date, the machine and the commit in bench/results/, from which the current
# tables of docs/benchmarks.md are rewritten. The full run takes about
# 4 minutes on 2 cores plus about 4 for the catalog-scale section over the
# WAN simulator; BENCH_QUICK=1 takes under 3. BENCH_FLAGS passes more
# flags to bench/cmd/airlock-bench (go run ./bench/cmd/airlock-bench -h), e.g.
# BENCH_FLAGS='-catalogs real -copy=false -docs ""'. BENCH_NOTE labels the run.
# The catalog-scale section (over the WAN simulator) seeds its registry once
# into /tmp/airlock-bench-cache (make clean removes it); BENCH_WAN=none skips it.
BENCH_QUICK ?=
BENCH_NOTE  ?=
BENCH_FLAGS ?=

bench: build
	$(GO) run ./bench/cmd/airlock-bench -airlock $(BIN) -go-tags "$(TAGS)" $(if $(filter 1 true yes,$(BENCH_QUICK)),-quick) $(if $(BENCH_NOTE),-note "$(BENCH_NOTE)") $(BENCH_FLAGS)

# oc-mirror v2 for the comparisons (bench/ocmirror/README.md): built from a source
# snapshot (OCM_GIT_DIR) with stand-ins for the two modules the Go module proxy
# refuses, into ~/.cache/airlock-bench/oc-mirror (AIRLOCK_BENCH_CACHE), where the
# benchmarks and make differential find it.
oc-mirror:
	./scripts/build-oc-mirror.sh

# airlock's and oc-mirror v2's release selection for every configuration of
# release/graph's Choose goldens, against the same test update service
# (docs/releases.md). Not part of make test; skips when oc-mirror is not built
# (make oc-mirror). OC_MIRROR=PATH picks a binary; -update rewrites the table.
differential:
	$(GO) test -tags "$(TAGS) differential" -count=1 -timeout 60m -v -run 'TestDifferential|TestCasesMatchGoldens' ./bench/differential/ $(if $(UPDATE),-args -update)

# Every fuzz target for FUZZTIME each (make fuzz FUZZTIME=5m for a long run).
fuzz:
	TAGS="$(TAGS)" ./scripts/fuzz.sh $(FUZZTIME)

# go vet, gofmt and staticcheck (pinned; fetched through the Go module proxy on
# first use, then cached). STATICCHECK=staticcheck uses an installed one.
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2

lint:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(STATICCHECK) ./...
	$(if $(TAGS),$(GO) vet -tags "$(TAGS)" ./... && $(STATICCHECK) -tags "$(TAGS)" ./...)

# The one-command demo (docs/demo.md): a source registry seeded with
# testdata/demo/catalog, mirror-to-disk, the source stopped, disk-to-mirror into a
# second registry. Needs no registry and no internet; leaves nothing running.
# DEMO_DIR=DIR keeps the work files in DIR.
DEMO_SCRIPT ?= scripts/demo.sh

demo: build
	AIRLOCK=$(BIN) bash $(DEMO_SCRIPT)

# Differential conformance against opm's library (operator-registry), and
# airlock mirror's output handed to the real consumers (operator-registry's
# server, containers/image's mirror rules, the API server's CRD validation), in
# its own module (conformance/) so that the main module never depends on them.
# About 4.5 minutes on a quiet 2-core machine (1.5 of them the SQLite agreement tests): the tests, then the two fuzz
# targets for about 20 s each. The test timeout leaves room for a loaded machine (the same tests
# took 15 minutes with five builds running beside them). See
# docs/conformance.md. The fuzz budget is a number of executions, not a duration: with a
# duration Go 1.26's fuzz coordinator can fail a target with a bare "context deadline
# exceeded" at the end of the window on a loaded machine (go.dev/issue/75804, fixed in Go 1.27).
CONFORMANCE_FUZZTIME ?= 500x
# The release signature consumer (containers/image's signedBy) needs TAGS'
# containers_image_openpgp like every other build here.
conformance:
	cd conformance && $(GO) vet -tags "$(TAGS)" ./...
	@cd conformance && test -z "$$(gofmt -l .)" || (echo "gofmt needed in conformance/:"; gofmt -l .; exit 1)
	cd conformance && $(STATICCHECK) -tags "$(TAGS)" ./...
	cd conformance && $(GO) test -tags "$(TAGS)" -timeout 30m ./...
	cd conformance && $(GO) test -run '^$$' -fuzz '^FuzzValidateAgreement$$' -fuzztime $(CONFORMANCE_FUZZTIME) .
	cd conformance && $(GO) test -run '^$$' -fuzz '^FuzzSelectionAgreement$$' -fuzztime $(CONFORMANCE_FUZZTIME) .

clean:
	rm -rf bin /tmp/airlock-bench-cache
