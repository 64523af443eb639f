#!/usr/bin/env bash
# Builds upstream Crossplane's render path from its Go modules into
#   ~/.cache/plait/crossplane-<core>-cli-<cli>-pt-<pt>-ar-<ar>/bin/
# and does nothing if it is already there:
#   crossplane       the CLI (github.com/crossplane/cli/v2), `crossplane render`
#   crossplane-core  the core (github.com/crossplane/crossplane/v2), whose
#                    `crossplane internal render` the CLI runs with --crossplane-binary
#   function-patch-and-transform, function-auto-ready  the functions, run as
#                    local gRPC servers with --insecure
# Each is built from its own module with the dependency versions its release
# pins, so what runs is what Crossplane ships. Prints the bin directory on the
# last line of stdout. With --bin-dir it only prints that directory.
set -euo pipefail

CORE_VERSION="${PLAIT_CROSSPLANE_VERSION:-v2.3.4}"
CLI_VERSION="${PLAIT_CROSSPLANE_CLI_VERSION:-v2.5.0}"
PT_VERSION="${PLAIT_FUNCTION_PT_VERSION:-v0.10.7}"
AUTO_READY_VERSION="${PLAIT_FUNCTION_AUTO_READY_VERSION:-v0.7.0}"

CACHE_ROOT="${PLAIT_CACHE_DIR:-$HOME/.cache/plait}"
DEST="$CACHE_ROOT/crossplane-${CORE_VERSION#v}-cli-${CLI_VERSION#v}-pt-${PT_VERSION#v}-ar-${AUTO_READY_VERSION#v}"
SCRIPT=build-upstream.sh
WHAT="upstream Crossplane"
BIN_DIR="$DEST/bin"
BINARIES=(crossplane crossplane-core function-patch-and-transform function-auto-ready)
PRINTED="$BIN_DIR"
PRINT_FLAG=--bin-dir

. "$(dirname "${BASH_SOURCE[0]}")/../go-build.sh"
go_build_prepare "$@"
echo "build-upstream.sh: building crossplane ${CORE_VERSION}, cli ${CLI_VERSION}, function-patch-and-transform ${PT_VERSION}, function-auto-ready ${AUTO_READY_VERSION} into $BIN_DIR (cold build takes a while)" >&2

export GOFLAGS="-mod=mod"
export CGO_ENABLED=0

# Copies a module's source out of the module cache into a writable tree.
fetch() {
    local module="$1" version="$2" into="$3"
    local dir
    dir="$(cd "$WORK" && go mod download -json "${module}@${version}" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
    [ -n "$dir" ] || { echo "build-upstream.sh: cannot download ${module}@${version}" >&2; exit 1; }
    cp -r "$dir" "$into"
    chmod -R u+w "$into"
}

cat >"$WORK/go.mod" <<MOD
module plait.test/upstream-fetch

go 1.25
MOD

fetch github.com/crossplane/crossplane/v2 "$CORE_VERSION" "$WORK/core"
# The release points its apis module at ./apis, which the module zip leaves
# out; the published apis module of the same tag is that directory.
(cd "$WORK/core" \
    && go mod edit -dropreplace=github.com/crossplane/crossplane/apis/v2 \
        -require="github.com/crossplane/crossplane/apis/v2@${CORE_VERSION}" \
    && go build -trimpath -ldflags="-s -w" -o "$OUT/crossplane-core" ./cmd/crossplane) >&2

fetch github.com/crossplane/cli/v2 "$CLI_VERSION" "$WORK/cli"
(cd "$WORK/cli" && go build -trimpath -ldflags="-s -w" -o "$OUT/crossplane" ./cmd/crossplane) >&2

fetch github.com/crossplane-contrib/function-patch-and-transform "$PT_VERSION" "$WORK/pt"
(cd "$WORK/pt" && go build -trimpath -ldflags="-s -w" -o "$OUT/function-patch-and-transform" .) >&2

# Published under crossplane-contrib while its go.mod still names
# github.com/crossplane/function-auto-ready; built in place, the name does not matter.
fetch github.com/crossplane-contrib/function-auto-ready "$AUTO_READY_VERSION" "$WORK/auto-ready"
(cd "$WORK/auto-ready" && go build -trimpath -ldflags="-s -w" -o "$OUT/function-auto-ready" .) >&2

go_build_install
