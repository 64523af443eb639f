#!/usr/bin/env bash
# Builds helm from its Go module into
#   ~/.cache/plait/helm-<version>/bin/helm
# for the chart tests (host/cli/tests/helm_chart.rs), and does nothing if it
# is already there. Prints the binary's path on the last line of stdout.
# With --bin it only prints that path and builds nothing.
set -euo pipefail

HELM_VERSION="${PLAIT_HELM_VERSION:-v3.20.2}"

CACHE_ROOT="${PLAIT_CACHE_DIR:-$HOME/.cache/plait}"
DEST="$CACHE_ROOT/helm-${HELM_VERSION#v}"
SCRIPT=build-helm.sh
WHAT=helm
BIN_DIR="$DEST/bin"
BINARIES=(helm)
PRINTED="$BIN_DIR/helm"
PRINT_FLAG=--bin

. "$(dirname "${BASH_SOURCE[0]}")/../go-build.sh"
go_build_prepare "$@"
echo "build-helm.sh: building helm ${HELM_VERSION} into $PRINTED" >&2

# helm's go.mod has no replace directives, so `go install module@version`
# builds it exactly as released, with the go.sum it was released with. The
# version helm reports is set the way its own Makefile sets it.
export CGO_ENABLED=0
GOBIN="$OUT" GOFLAGS=-trimpath \
    go install -ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=${HELM_VERSION}" \
    "helm.sh/helm/v3/cmd/helm@${HELM_VERSION}" >&2

go_build_install
