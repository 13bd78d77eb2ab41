#!/usr/bin/env bash
# The Action's install steps (action.yml): validate-state for this runner, from the release
# archive when there is one, verified against the release's SHA256SUMS, else built from this
# checkout.
#
#   scripts/action-install.sh version   the release to install: version=vX.Y.Z in $GITHUB_OUTPUT
#   scripts/action-install.sh install   validate-state into $FLEET_BIN_DIR
#
# Environment (the Action sets it from its inputs and the runner):
#   FLEET_VERSION      the release, v0.1.0 or 0.1.0; default: the VERSION file of this checkout
#   FLEET_FROM_SOURCE  true: build from this checkout, download nothing
#   FLEET_RELEASE_URL  where the releases are (default https://github.com/agentfleet/fleet/releases/download):
#                      $FLEET_RELEASE_URL/vX.Y.Z/fleet-vX.Y.Z-linux-ARCH.tar.gz and .../vX.Y.Z/SHA256SUMS
#   FLEET_CACHE_DIR    where downloaded archives are kept, a directory per version (the Action
#                      caches it with actions/cache)
#   FLEET_BIN_DIR      where validate-state is put
#   RUNNER_OS, RUNNER_ARCH  the runner's (Linux, macOS, Windows; X64, ARM64)
#
# install writes installed=release or installed=source to $GITHUB_OUTPUT; when it must build
# and no go is on PATH, it writes need-go=true and exits 0 (the Action then sets Go up and runs
# it again with FLEET_FROM_SOURCE=true). A checksum that does not match fails: never a fallback.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
semver='^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$'

say() { echo "validate-state action: $*" >&2; }
output() { if [ -n "${GITHUB_OUTPUT:-}" ]; then echo "$1" >>"$GITHUB_OUTPUT"; fi; }

# release_version: FLEET_VERSION or VERSION's, as the tags name it (v0.1.0), checked: it goes
# into a URL and a path.
release_version() {
  local v="${FLEET_VERSION:-}"
  if [ -z "$v" ]; then
    v="$(head -c 100 "$root/VERSION" | tr -d '[:space:]')"
  fi
  v="v${v#v}"
  if ! [[ "$v" =~ $semver ]]; then
    say "version '$v' is not a semantic version (v0.1.0): set the action's version input to a release's"
    exit 1
  fi
  echo "$v"
}

# release_arch: the archive's architecture for this runner, or nothing where no archive is
# built (make release: linux/amd64 and linux/arm64 only).
release_arch() {
  [ "${RUNNER_OS:-Linux}" = Linux ] || return 0
  case "${RUNNER_ARCH:-$(uname -m)}" in
  X64 | x86_64 | amd64) echo amd64 ;;
  ARM64 | aarch64 | arm64) echo arm64 ;;
  esac
}

# fetch URL FILE: 0 fetched, 2 not there (an HTTP 404, or no such file:// file), 1 another failure.
fetch() {
  local code rc=0
  code="$(curl -sSL --retry 3 --proto '=https,http,file' -o "$2" -w '%{http_code}' "$1")" || rc=$?
  if [ "$rc" -eq 0 ] && { [ "$code" = 200 ] || [ "$code" = 000 ]; }; then return 0; fi
  rm -f "$2"
  if [ "$code" = 404 ] || [ "$rc" -eq 37 ]; then return 2; fi
  if [ "$rc" -eq 0 ]; then rc="HTTP $code"; else rc="curl exit $rc"; fi
  say "could not download $1 ($rc)"
  return 1
}

# listed DIR NAME: the checksum DIR/SHA256SUMS gives NAME (sha256sum's lines: HASH  NAME).
listed() {
  awk -v n="$2" '$2 == n || $2 == "*" n { print $1; exit }' "$1/SHA256SUMS"
}

# verified DIR NAME: NAME in DIR has the checksum DIR/SHA256SUMS gives it.
verified() {
  local want got
  want="$(listed "$1" "$2")"
  got="$(sha256sum "$1/$2" | cut -d' ' -f1)"
  [ -n "$want" ] && [ "$want" = "$got" ]
}

# download VERSION ARCH: the archive and SHA256SUMS into the cache, verified; 2 when the release
# does not exist.
download() {
  local v="$1" name="fleet-$1-linux-$2.tar.gz" dir="$FLEET_CACHE_DIR/$1"
  local base="${FLEET_RELEASE_URL:-https://github.com/agentfleet/fleet/releases/download}/$v"
  if [ -f "$dir/SHA256SUMS" ] && [ -f "$dir/$name" ]; then
    if verified "$dir" "$name"; then
      say "$name from the cache"
      return 0
    fi
    say "the cached $name does not match its SHA256SUMS: downloading it again"
  fi
  rm -rf "$dir"
  mkdir -p "$dir"
  local rc=0
  fetch "$base/SHA256SUMS" "$dir/SHA256SUMS" || rc=$?
  if [ "$rc" -eq 2 ]; then
    rm -rf "$dir"
    return 2
  fi
  [ "$rc" -eq 0 ] || exit 1
  if [ -z "$(listed "$dir" "$name")" ]; then
    rm -rf "$dir"
    say "release $v has no $name in its SHA256SUMS"
    return 2
  fi
  fetch "$base/$name" "$dir/$name" || { rm -rf "$dir"; exit 1; }
  if ! verified "$dir" "$name"; then
    rm -rf "$dir"
    say "$base/$name does not match the release's SHA256SUMS: not installed"
    exit 1
  fi
  say "$name downloaded, its SHA-256 is the release's"
}

# install_release VERSION ARCH: validate-state from the cached archive into FLEET_BIN_DIR.
install_release() {
  local v="$1" name="fleet-$1-linux-$2" unpack
  unpack="$(mktemp -d)"
  tar -xzf "$FLEET_CACHE_DIR/$v/$name.tar.gz" -C "$unpack" --no-same-owner "$name/bin/validate-state"
  mkdir -p "$FLEET_BIN_DIR"
  install -m 0755 "$unpack/$name/bin/validate-state" "$FLEET_BIN_DIR/validate-state"
  rm -rf "$unpack"
  # The archive's name is checked above; this checks what the binary itself says it is.
  local says
  says="$("$FLEET_BIN_DIR/validate-state" --version)"
  if [ "$says" != "validate-state version $v" ]; then
    rm -f "$FLEET_BIN_DIR/validate-state"
    say "the release $v's validate-state says '$says'"
    exit 1
  fi
  echo "$says (release archive $name.tar.gz)"
  output installed=release
}

# build_from_source: this checkout's validate-state, with the go on PATH. GOTOOLCHAIN=auto lets
# an older go fetch the one go.mod asks for into the module cache, without changing the go the
# caller's later steps run; the caller's GOFLAGS and go.work are not this module's.
build_from_source() {
  if ! command -v go >/dev/null 2>&1; then
    say "no go on PATH to build validate-state from source"
    output need-go=true
    return 0
  fi
  mkdir -p "$FLEET_BIN_DIR"
  (cd "$root" && GOTOOLCHAIN=auto GOFLAGS=-mod=readonly GOWORK=off CGO_ENABLED=0 \
    go build -trimpath -o "$FLEET_BIN_DIR/validate-state" ./cmd/validate-state)
  echo "$("$FLEET_BIN_DIR/validate-state" --version) (built from source with $(go version | cut -d' ' -f3))"
  output installed=source
}

install_validate_state() {
  : "${FLEET_BIN_DIR:?FLEET_BIN_DIR: where validate-state goes}"
  : "${FLEET_CACHE_DIR:=${RUNNER_TEMP:-/tmp}/fleet-release-cache}"
  if [ "${FLEET_FROM_SOURCE:-false}" = true ]; then
    build_from_source
    return
  fi
  local v arch rc=0
  v="$(release_version)"
  arch="$(release_arch)"
  if [ -z "$arch" ]; then
    say "no release archive for ${RUNNER_OS:-}/${RUNNER_ARCH:-} (releases are linux/amd64 and linux/arm64): building from source"
    build_from_source
    return
  fi
  download "$v" "$arch" || rc=$?
  if [ "$rc" -eq 2 ]; then
    # The source here is VERSION's: it is no stand-in for another release.
    if [ "$v" != "$(FLEET_VERSION='' release_version)" ]; then
      say "no release $v for linux/$arch, and the action's source is $(FLEET_VERSION='' release_version), not $v: use the action of that tag (agentfleet/fleet@$v) or no version input"
      exit 1
    fi
    say "no release $v for linux/$arch: building from source"
    build_from_source
    return
  fi
  install_release "$v" "$arch"
}

case "${1:-}" in
version)
  v="$(release_version)"
  echo "$v"
  output "version=$v"
  ;;
install) install_validate_state ;;
*)
  echo "usage: $0 version|install" >&2
  exit 2
  ;;
esac
