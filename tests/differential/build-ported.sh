#!/usr/bin/env bash
# Ports an upstream Go composition function to plait the way
# docs/authoring.md tells a function author to: its module as published,
# with main.go replaced by ported/<function>/main.go, built with
# guests/sdk-go for GOOS=wasip1 and made a component by `plait function
# componentize` ($PLAIT, default `plait`).
#
#   build-ported.sh [function-auto-ready | function-patch-and-transform]
#
# The function is the release build-upstream.sh serves over gRPC
# (function-auto-ready when none is named). The result is cached in
#   ~/.cache/plait/<function>-<version>-wasm-<hash>/function.wasm
# keyed by the SDK's sources and the componentize step, so changing either
# builds it again. Needs Go. Prints the component's path on the last line of
# stdout.
set -euo pipefail

FUNCTION="${1:-function-auto-ready}"
case "$FUNCTION" in
    function-auto-ready)
        VERSION="${PLAIT_FUNCTION_AUTO_READY_VERSION:-v0.7.0}" ;;
    function-patch-and-transform)
        VERSION="${PLAIT_FUNCTION_PATCH_AND_TRANSFORM_VERSION:-v0.10.7}" ;;
    *)
        echo "build-ported.sh: no port of $FUNCTION: function-auto-ready or function-patch-and-transform" >&2
        exit 2 ;;
esac
MODULE="github.com/crossplane-contrib/$FUNCTION"
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
SDK="$REPO/guests/sdk-go"
PLAIT="${PLAIT:-plait}"

HASH="$(cd "$REPO" && cat guests/sdk-go/go.mod guests/sdk-go/go.sum guests/sdk-go/plait/*.go guests/sdk-go/component/*.go wit/function.wit \
    host/componentize/src/*.rs tests/differential/build-ported.sh "tests/differential/ported/$FUNCTION/main.go" | sha256sum | cut -c1-12)"
CACHE_ROOT="${PLAIT_CACHE_DIR:-$HOME/.cache/plait}"
DEST="$CACHE_ROOT/$FUNCTION-${VERSION#v}-wasm-$HASH"
OUT="$DEST/function.wasm"

if [ -f "$OUT" ]; then
    echo "$OUT"
    exit 0
fi
command -v go >/dev/null || { echo "build-ported.sh: go is required" >&2; exit 1; }
command -v "$PLAIT" >/dev/null || { echo "build-ported.sh: $PLAIT is missing: set PLAIT to the plait binary" >&2; exit 1; }

mkdir -p "$DEST"
exec 9>"$DEST/.build.lock"
flock 9
if [ -f "$OUT" ]; then
    echo "$OUT"
    exit 0
fi

WORK="$(mktemp -d)"
trap 'chmod -R u+w "$WORK" 2>/dev/null; rm -rf "$WORK"' EXIT
start=$(date +%s)
echo "build-ported.sh: porting $FUNCTION ${VERSION} to plait into $OUT" >&2

export GOFLAGS="-mod=mod"
cat >"$WORK/go.mod" <<MOD
module plait.test/ported-fetch

go 1.24
MOD
dir="$(cd "$WORK" && go mod download -json "$MODULE@${VERSION}" \
    | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[ -n "$dir" ] || { echo "build-ported.sh: cannot download $MODULE@${VERSION}" >&2; exit 1; }
cp -r "$dir" "$WORK/src"
chmod -R u+w "$WORK/src"

# The port: one file replaced, the SDK required.
cp "$HERE/ported/$FUNCTION/main.go" "$WORK/src/main.go"
(cd "$WORK/src" \
    && go mod edit -require=github.com/plait-dev/plait/guests/sdk-go@v0.0.0 \
        -replace=github.com/plait-dev/plait/guests/sdk-go="$SDK" \
    && GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -ldflags="-s -w" -o "$WORK/core.wasm" .) >&2
"$PLAIT" function componentize "$WORK/core.wasm" -o "$WORK/function.wasm" >&2
mv "$WORK/function.wasm" "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
echo "build-ported.sh: built in $(( $(date +%s) - start ))s" >&2
echo "$OUT"
