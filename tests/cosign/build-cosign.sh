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
SCRIPT=build-cosign.sh
WHAT=cosign
BIN_DIR="$DEST/bin"
BINARIES=(cosign)
PRINTED="$BIN_DIR/cosign"
PRINT_FLAG=--bin

. "$(dirname "${BASH_SOURCE[0]}")/../go-build.sh"
go_build_prepare "$@"
echo "build-cosign.sh: building cosign ${COSIGN_VERSION} into $PRINTED" >&2

# cosign's go.mod has no replace directives, so `go install module@version`
# builds it exactly as released, with the go.sum it was released with.
export CGO_ENABLED=0
GOBIN="$OUT" GOFLAGS=-trimpath \
    go install -ldflags="-s -w" "github.com/sigstore/cosign/v2/cmd/cosign@${COSIGN_VERSION}" >&2

go_build_install
