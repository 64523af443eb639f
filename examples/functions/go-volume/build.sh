#!/bin/sh
# Builds function.wasm: a WebAssembly component for plait, from Go. The Go
# toolchain builds a WASI preview 1 reactor; `plait function componentize`
# adds plait's contract and the WASI adapter.
set -eu
cd "$(dirname "$0")"
PLAIT="${PLAIT:-plait}"
mkdir -p gen
GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -ldflags='-s -w' -o gen/core.wasm .
"$PLAIT" function componentize gen/core.wasm -o function.wasm
