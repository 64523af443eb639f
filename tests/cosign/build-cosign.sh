#!/usr/bin/env bash
# Builds cosign from its Go module into
#   ~/.cache/plait/cosign-<version>/bin/cosign
# for the signature tests, and does nothing if it is already there. Prints
# the binary's path on the last line of stdout. With --bin it only prints
# that path and builds nothing.
set -euo pipefail

COSIGN_VERSION="${PLAIT_COSIGN_VERSION:-v2.6.5}"

CACHE_ROOT="${PLAIT_CACHE_DIR:-$HOME/.cache/plait}"
DEST="$CACHE_ROOT/cosign-${COSIGN_VERSION#v}"
BIN="$DEST/bin/cosign"

if [ "${1:-}" = "--bin" ]; then
    echo "$BIN"
    exit 0
fi

if [ -x "$BIN" ]; then
    echo "$BIN"
    exit 0
fi

command -v go >/dev/null || { echo "build-cosign.sh: go is required to build cosign" >&2; exit 1; }

# Two builders (e.g. two test binaries) must not race on the same output.
mkdir -p "$DEST"
exec 9>"$DEST/.build.lock"
flock 9
if [ -x "$BIN" ]; then
    echo "$BIN"
    exit 0
fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
start=$(date +%s)
echo "build-cosign.sh: building cosign ${COSIGN_VERSION} into $BIN" >&2

# cosign's go.mod has no replace directives, so `go install module@version`
# builds it exactly as released, with the go.sum it was released with.
export CGO_ENABLED=0
GOBIN="$WORK/bin" GOFLAGS=-trimpath \
    go install -ldflags="-s -w" "github.com/sigstore/cosign/v2/cmd/cosign@${COSIGN_VERSION}" >&2

mkdir -p "$(dirname "$BIN")"
mv "$WORK/bin/cosign" "$BIN.tmp"
mv "$BIN.tmp" "$BIN"
echo "build-cosign.sh: built in $(( $(date +%s) - start ))s" >&2
echo "$BIN"
