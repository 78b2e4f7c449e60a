#!/bin/sh
# Builds SeaweedFS's weed (a real S3 server, Apache-2.0) into
# ${SUBAKO_TOOLS:-/var/tmp/subako-tools}/weed for the object store tests,
# once per machine and version: a second run finds it and returns at once.
# `go install …/weed@version` refuses the module (its go.mod has a replace
# directive), so it is built from a throwaway module that requires it and
# repeats that replace. Needs the Go module proxy the first time.
set -eu
VERSION=v0.0.0-20261109003541-7506e5f91cd6
TOOLS=${SUBAKO_TOOLS:-/var/tmp/subako-tools}
if [ -x "$TOOLS/weed" ] && [ "$(cat "$TOOLS/weed.version" 2>/dev/null)" = "$VERSION" ]; then
  exit 0
fi
echo "building SeaweedFS weed $VERSION into $TOOLS for the object store tests (once per machine, a few minutes)"
mkdir -p "$TOOLS"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/go.mod" <<EOF
module subako.local/weedbuild

go 1.26

require github.com/seaweedfs/seaweedfs $VERSION

// As in seaweedfs's own go.mod.
replace github.com/tyler-smith/go-bip39 => github.com/cosmos/go-bip39 v1.0.0
EOF
cd "$work"
# The Go build cache is shared with any earlier build of it on the machine
# when the settings match: cgo where a C compiler is, -trimpath, no VCS stamp.
# Bounded in time: past it the tests skip rather than hold CI up.
if command -v gcc >/dev/null; then export CGO_ENABLED=1; else export CGO_ENABLED=0; fi
export GOFLAGS=-buildvcs=false
go get "github.com/seaweedfs/seaweedfs/weed@$VERSION" >/dev/null 2>&1 || go get "github.com/seaweedfs/seaweedfs/weed@$VERSION"
timeout "${WEED_BUILD_TIMEOUT:-1800}" go build -trimpath -ldflags=-s -o "$TOOLS/weed.tmp" github.com/seaweedfs/seaweedfs/weed
mv "$TOOLS/weed.tmp" "$TOOLS/weed"
echo "$VERSION" > "$TOOLS/weed.version"
echo "built $TOOLS/weed"
