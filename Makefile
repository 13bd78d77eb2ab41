# The agent-fleet toolkit. `make demo` shows the main job; `make test` runs every test.
# GO: go from PATH, else from /usr/local/go/bin, where Go's own archive puts it and which a
# non-login shell's PATH (a script, ssh host cmd, cron) lacks; that directory is then put on the
# recipes' PATH too, for the scripts and tests that run go. With no Go at all, the targets that
# need it say so in one line (have-go).
ifeq ($(origin GO),undefined)
ifeq ($(shell command -v go 2>/dev/null),)
ifneq ($(wildcard /usr/local/go/bin/go),)
GO := /usr/local/go/bin/go
export PATH := /usr/local/go/bin:$(PATH)
endif
endif
endif
GO      ?= go
PREFIX  ?= $(shell $(GO) env GOPATH)
BINDIR  ?= $(PREFIX)/bin
SHAREDIR ?= $(PREFIX)/share
# VERSION is what --version prints when git knows it: git's name for the checkout from its
# version tags (v0.1.0, v0.1.0-3-gabc1234 three commits later; -dirty with local changes); a tag
# that is not a version (nightly) is not taken. Before the first tag, or without git (a source
# archive), nothing is stamped and the binaries say the VERSION file's version (v0.1.0), with
# the commit that go build records when there is one (v0.1.0+abcdef123456). A release (make
# release) is built from its semantic version tag only, which must be VERSION's.
VERSION ?= $(shell git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null)
LDFLAGS := $(if $(VERSION),-X github.com/agentfleet/fleet/internal/cli.version=$(VERSION))

.PHONY: all have-go build docs install release release-check test test-short test-deps sshd vet fmt-check tidy-check bench demo fuzz clean

all: build

# have-go: a one-line error, instead of make's "go: No such file or directory", without Go.
have-go:
	@command -v $(GO) >/dev/null 2>&1 || { echo "make: Go not found ($(GO) is not on PATH, nor in /usr/local/go/bin): install Go 1.26 (https://go.dev/dl), or name it: make GO=/path/to/go" >&2; exit 1; }

## build: the binaries into bin/
build: have-go
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/ ./cmd/...

## docs: the man pages and shell completions, generated from the binaries' command lines,
## into share/ (man/man1, bash-completion, zsh, fish)
docs: build
	./scripts/gendocs.sh bin share

## install: the binaries into $(BINDIR) (default: $(go env GOPATH)/bin); the man pages and
## completions under $(SHAREDIR); the drop-in shims in $(SHAREDIR)/fleet/scripts, which find
## the binaries in $(BINDIR) (a workspace links its scripts to them: docs/cron.md)
# The directories reach the recipe's shell in its environment, never in its command lines: a
# path with a quote, a backslash or a $ (make's $$) was read by the shell there ("$(touch x)"
# in PREFIX ran at install time), and written into the shims as read.
install: export INSTALL_DESTBIN = $(DESTDIR)$(BINDIR)
install: export INSTALL_DESTSHARE = $(DESTDIR)$(SHAREDIR)
install: export INSTALL_BINDIR = $(BINDIR)
install: export INSTALL_SHAREDIR = $(SHAREDIR)
install: docs
	mkdir -p "$$INSTALL_DESTBIN"
	install -m 0755 bin/* "$$INSTALL_DESTBIN/"
	for d in man/man1 bash-completion/completions zsh/site-functions fish/vendor_completions.d; do \
		mkdir -p "$$INSTALL_DESTSHARE/$$d" && install -m 0644 share/$$d/* "$$INSTALL_DESTSHARE/$$d/" || exit 1; \
	done
	./scripts/install-shims.sh "$$INSTALL_DESTSHARE/fleet/scripts" "$$INSTALL_BINDIR"
	@printf 'installed: %s/{dispatch,validate-state,analyze-runs,swarm,ralph}, man pages and completions in %s, shims in %s/fleet/scripts\n' "$$INSTALL_BINDIR" "$$INSTALL_SHAREDIR" "$$INSTALL_SHAREDIR"

## release: static linux/amd64 and linux/arm64 archives of the tagged commit, with SHA256SUMS,
## in dist/VERSION (HEAD must carry the semantic version tag of the VERSION file: for 0.1.0,
## git tag -a v0.1.0 -m v0.1.0)
release: have-go
	GO=$(GO) ./scripts/release.sh

## release-check: make release twice (as version v0.0.0-check, from any checkout) and compare
## the archives byte for byte
release-check: have-go
	@rm -rf dist/check-a dist/check-b
	GO=$(GO) VERSION=v0.0.0-check ./scripts/release.sh dist/check-a >/dev/null
	GO=$(GO) VERSION=v0.0.0-check ./scripts/release.sh dist/check-b >/dev/null
	cmp dist/check-a/SHA256SUMS dist/check-b/SHA256SUMS
	@for f in dist/check-a/*.tar.gz; do cmp "$$f" "dist/check-b/$${f##*/}" || exit 1; done
	@echo "release-check: two builds, byte-identical:"; cat dist/check-a/SHA256SUMS
	@rm -rf dist/check-a dist/check-b

# TESTFLAGS: how many packages' tests (-p) and how many tests of a package (-parallel) run at
# once. The long packages (cmd/dispatch, cmd/ralph, cmd/swarm) wait on agents, tmux and
# timeouts far more than on the CPU, so they run side by side, each with several scripts at a
# time, even on 2 cores.
TESTFLAGS ?= -p 4 -parallel 8
# TESTFIRST: the packages whose tests take longest (a minute or more each, measured), named
# before ./... so that go test starts them first: started last, in alphabetical order,
# internal/swarmrun ran alone for the suite's last two minutes.
TESTFIRST = ./cmd/ralph ./cmd/dispatch ./cmd/swarm ./internal/swarmrun ./internal/ralph/queue/runner \
	./internal/ralph/aiwg ./internal/ralph/loop ./internal/report ./internal/top/ui ./internal/top \
	./internal/ralph/queue ./cmd/validate-state

## test: vet, formatting, a tidy go.mod, and every test with the race detector; go test's
## lines as the packages end, a line every 30 s naming the packages still running; at the end
## the tests that skipped and why, and one line: packages, tests, time, the failures by name
test: have-go vet fmt-check tidy-check sshd test-deps
	GO=$(GO) $(GO) run ./tools/testprogress -- -race -count=1 $(TESTFLAGS) $(TESTFIRST) ./...

## test-short: a quick round: every test without the race detector and with -short, which
## leaves out the scripts and tests that start agents in tmux ([short] skip 'needs tmux')
test-short: have-go
	GO=$(GO) $(GO) run ./tools/testprogress -- -short -count=1 $(TESTFLAGS) $(TESTFIRST) ./...

## sshd: openssh-server and iproute2 for the remote hosts' tests (internal/testenv/sshlab), when
## missing, as root where apt-get is (CI: Debian as root); anywhere else this says so and those
## tests skip with one line (fail under CI=true)
sshd:
	@./scripts/test-deps.sh sshd

## test-deps: the consumers some tests hand output to (pre-commit, a JUnit reader, man, zsh, fish),
## from Debian's packages when missing and run as root; otherwise those tests skip, saying why in
## one line, or fail under CI=true (README: What make test installs)
test-deps:
	@./scripts/test-deps.sh

vet: have-go
	$(GO) vet ./...

fmt-check:
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# tidy-check: go.mod and go.sum are what go mod tidy would make them (a direct dependency marked
# indirect, a missing or stale line). It changes nothing: it shows the diff and fails.
tidy-check: have-go
	@if ! out="$$($(GO) mod tidy -diff 2>&1)"; then \
		echo "go.mod or go.sum is not tidy; run go mod tidy:"; echo "$$out"; exit 1; fi

## bench: each tool against the one it replaces, on the same generated data (scripts/bench/*.sh;
## each runs its tool's `go test -bench` benchmarks or times the binary itself)
bench: build
	./scripts/bench.sh

## demo: the main job on a throwaway workspace
demo: have-go
	GO=$(GO) LDFLAGS='$(LDFLAGS)' ./scripts/demo.sh

## fuzz: every fuzz target of the repository, FUZZTIME each (20s; corpora are kept in testdata):
## the readers of what a state directory holds (records, raw data, whole directories with links,
## named pipes, directories and huge keys, schemas and the fast path), terminal text and screens,
## names. The targets are found in the sources, so a new one is fuzzed without a change here.
FUZZTIME ?= 20s
fuzz: have-go
	@set -e; grep -rl --include='*_test.go' --exclude-dir=testdata '^func Fuzz' . | sort | while read -r file; do \
		pkg=./$$(dirname "$${file#./}"); \
		for fn in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$$file"); do \
			echo "fuzz $$fn ($$pkg, $(FUZZTIME))"; \
			$(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) "$$pkg"; \
		done; \
	done

clean:
	rm -rf bin/ share/ dist/
