#!/usr/bin/env bash
# make release: static linux/amd64 and linux/arm64 builds of the toolkit, in tar.gz archives
# with a SHA256SUMS file, byte for byte the same on every run from the same commit.
#
#   scripts/release.sh [OUTDIR]     (default dist/VERSION)
#
# VERSION is the semantic version tag at HEAD (vMAJOR.MINOR.PATCH[-PRERELEASE]), which must be
# the VERSION file's (v0.1.0 for 0.1.0: what a build without git says it is); without one, with
# another, and with local changes, it refuses. VERSION=... in the environment names another version
# (make release-check's, never a published one). What makes the archives reproducible:
# CGO_ENABLED=0, -trimpath, -buildvcs=false (the version comes from -ldflags, not from the
# checkout's state), SOURCE_DATE_EPOCH from the commit for every file's mtime, entries sorted
# by name, owner and group 0, modes normalised, gzip -n (no name or time in the header).
set -euo pipefail
cd "$(dirname "$0")/.."
GO="${GO:-go}"

semver='^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$'
if [ -z "${VERSION:-}" ]; then
  file="v$(head -c 100 VERSION 2>/dev/null | tr -d '[:space:]')"
  if ! VERSION="$(git describe --tags --exact-match --match 'v[0-9]*' HEAD 2>/dev/null)"; then
    echo "release: HEAD ($(git describe --tags --always --dirty 2>/dev/null || echo 'no git')) has no version tag; tag it first: git tag -a $file -m $file" >&2
    exit 1
  fi
  if [ "$VERSION" != "$file" ]; then
    echo "release: the tag $VERSION is not the VERSION file's $file; a release's binaries say what VERSION says: change VERSION in a commit and tag that commit" >&2
    exit 1
  fi
  if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
    echo "release: the checkout has local changes; a release is built from the tagged commit as it is" >&2
    exit 1
  fi
fi
if ! [[ "$VERSION" =~ $semver ]]; then
  echo "release: $VERSION is not a semantic version (vMAJOR.MINOR.PATCH[-PRERELEASE])" >&2
  exit 1
fi
out="${1:-dist/$VERSION}"
SOURCE_DATE_EPOCH="$(git log -1 --format=%ct HEAD)"
export SOURCE_DATE_EPOCH CGO_ENABLED=0 GOFLAGS=-buildvcs=false
ldflags="-s -w -buildid= -X github.com/agentfleet/fleet/internal/cli.version=$VERSION"

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
rm -rf "$out"
mkdir -p "$out"
# The man pages and completions come from the binaries' own command lines, built for this
# machine with the same version (they are the same on every architecture).
"$GO" build -trimpath -ldflags "$ldflags" -o "$stage/host/" ./cmd/...
for arch in amd64 arm64; do
  name="fleet-$VERSION-linux-$arch"
  root="$stage/$name"
  mkdir -p "$root/bin"
  GOOS=linux GOARCH=$arch "$GO" build -trimpath -ldflags "$ldflags" -o "$root/bin/" ./cmd/...
  ./scripts/gendocs.sh "$stage/host" "$root/share"
  cp LICENSE README.md "$root/"
  mkdir -p "$root/docs"
  cp docs/*.md "$root/docs/"
  ./scripts/install-shims.sh "$root/share/fleet/scripts" ""
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" \
    --mode='u+rwX,go+rX,go-w' --format=gnu -C "$stage" -cf - "$name" | gzip -n -9 >"$out/$name.tar.gz"
done
(cd "$out" && sha256sum -- *.tar.gz >SHA256SUMS)
echo "release: $VERSION in $out:"
cat "$out/SHA256SUMS"
