#!/bin/sh
# Builds function.wasm: a WebAssembly component for plait.
set -eu
cd "$(dirname "$0")"
cargo build --quiet --locked --release --target wasm32-wasip2
cp "${CARGO_TARGET_DIR:-target}/wasm32-wasip2/release/function_app.wasm" function.wasm
