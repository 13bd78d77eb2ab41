# The agent-fleet toolkit. `make demo` shows the main job; `make test` runs every test.
GO      ?= go
PREFIX  ?= $(shell $(GO) env GOPATH)
BINDIR  ?= $(PREFIX)/bin

.PHONY: all build install test vet fmt-check bench demo fuzz clean

all: build

## build: the binaries into bin/
build:
	$(GO) build -o bin/ ./cmd/...

## install: the binaries into $(PREFIX)/bin (default: $(go env GOPATH)/bin)
install: build
	mkdir -p "$(DESTDIR)$(BINDIR)"
	install -m 0755 bin/* "$(DESTDIR)$(BINDIR)/"

## test: vet, formatting, and every test with the race detector
test: vet fmt-check
	$(GO) test -race -count=1 ./...

vet:
	$(GO) vet ./...

fmt-check:
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

## bench: each tool against the one it replaces, on the same generated data (scripts/bench/*.sh;
## each runs its tool's `go test -bench` benchmarks or times the binary itself)
bench: build
	./scripts/bench.sh

## demo: the main job on a throwaway workspace
demo:
	./scripts/demo.sh

## fuzz: a minute of fuzzing on the record reader (the corpus is kept in testdata)
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime 60s ./internal/record/

clean:
	rm -rf bin/
