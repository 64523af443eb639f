#!/usr/bin/env bash
# Builds the Kubernetes test cluster binaries (etcd, kube-apiserver,
# kube-controller-manager) from Go modules into
#   ~/.cache/plait/kube-<k8s>-etcd-<etcd>/bin/
# and does nothing if they are already there. Prints the bin directory on
# the last line of stdout so callers can find it. With --bin-dir it only
# prints that directory and builds nothing.
set -euo pipefail

KUBE_VERSION="${PLAIT_KUBE_VERSION:-v1.34.4}"
# The etcd release k8s.io/kubernetes@${KUBE_VERSION} itself requires.
ETCD_VERSION="${PLAIT_ETCD_VERSION:-v3.6.4}"
STAGING_VERSION="v0.${KUBE_VERSION#v1.}"

CACHE_ROOT="${PLAIT_CACHE_DIR:-$HOME/.cache/plait}"
DEST="$CACHE_ROOT/kube-${KUBE_VERSION#v}-etcd-${ETCD_VERSION#v}"
SCRIPT=build-binaries.sh
WHAT="the test cluster"
BIN_DIR="$DEST/bin"
BINARIES=(etcd kube-apiserver kube-controller-manager)
PRINTED="$BIN_DIR"
PRINT_FLAG=--bin-dir

. "$(dirname "${BASH_SOURCE[0]}")/../../tests/go-build.sh"
go_build_prepare "$@"
echo "build-binaries.sh: building kube ${KUBE_VERSION} and etcd ${ETCD_VERSION} into $BIN_DIR (cold build takes a while)" >&2

cd "$WORK"
cat >go.mod <<MOD
module plait.test/cluster-binaries

go 1.24.0

require k8s.io/kubernetes ${KUBE_VERSION}
MOD

# k8s.io/kubernetes points its staging modules at ./staging/src/...; the
# published equivalents are v0.<minor>.<patch> of each k8s.io module.
go mod download -json "k8s.io/kubernetes@${KUBE_VERSION}" >/dev/null
KMOD="$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/${KUBE_VERSION}.mod"
{
    echo "replace ("
    sed -n 's#^[[:space:]]*\(k8s.io/[A-Za-z0-9._-]*\) => \./staging/src/.*$#\t\1 => \1 '"${STAGING_VERSION}"'#p' "$KMOD"
    echo ")"
} >>go.mod

export GOFLAGS="-mod=mod"
go get "k8s.io/kubernetes/cmd/kube-apiserver@${KUBE_VERSION}" \
    "k8s.io/kubernetes/cmd/kube-controller-manager@${KUBE_VERSION}" \
    "go.etcd.io/etcd/server/v3@${ETCD_VERSION}" >&2

export CGO_ENABLED=0
go build -trimpath -ldflags="-s -w" -o "$OUT/etcd" go.etcd.io/etcd/server/v3 >&2
go build -trimpath -ldflags="-s -w" -o "$OUT/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver >&2
go build -trimpath -ldflags="-s -w" -o "$OUT/kube-controller-manager" k8s.io/kubernetes/cmd/kube-controller-manager >&2

go_build_install
