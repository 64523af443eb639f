#!/usr/bin/env bash
# Builds kustomize from its Go module into
#   ~/.cache/plait/kustomize-<version>/bin/kustomize
# for the tests that build deploy/ as `kubectl apply -k` does
# (host/cli/tests/kustomize.rs), and does nothing if it is already there.
# Prints the binary's path on the last line of stdout. With --bin it only
# prints that path and builds nothing.
set -euo pipefail

KUSTOMIZE_VERSION="${PLAIT_KUSTOMIZE_VERSION:-v5.8.2}"

CACHE_ROOT="${PLAIT_CACHE_DIR:-$HOME/.cache/plait}"
DEST="$CACHE_ROOT/kustomize-${KUSTOMIZE_VERSION#v}"
SCRIPT=build-kustomize.sh
WHAT=kustomize
BIN_DIR="$DEST/bin"
BINARIES=(kustomize)
PRINTED="$BIN_DIR/kustomize"
PRINT_FLAG=--bin

. "$(dirname "${BASH_SOURCE[0]}")/../go-build.sh"
go_build_prepare "$@"
echo "build-kustomize.sh: building kustomize ${KUSTOMIZE_VERSION} into $PRINTED" >&2

# kustomize's go.mod has no replace directives, so `go install
# module@version` builds it exactly as released, with its go.sum; the
# version it reports comes from the module's build information. The
# standalone module is a few dozen small dependencies, where kubectl (which
# embeds the same kustomize/api) is most of k8s.io/kubernetes' client side.
export CGO_ENABLED=0
GOBIN="$OUT" GOFLAGS=-trimpath \
    go install -ldflags="-s -w" \
    "sigs.k8s.io/kustomize/kustomize/v5@${KUSTOMIZE_VERSION}" >&2

go_build_install
