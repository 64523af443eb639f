#!/bin/sh
# Builds function.wasm: a WebAssembly component for plait.
set -eu
cd "$(dirname "$0")"
WIT="${PLAIT_WIT:-../../../wit}"
SDK="${PLAIT_SDK_C:-../../../guests/sdk-c}"
CC="${CC:-clang-14}"
ADAPTER="${WASI_ADAPTER:-$HOME/.cache/plait/bin/wasi_snapshot_preview1.reactor.wasm}"
wit-bindgen c "$WIT" --world function --out-dir gen >/dev/null
"$CC" --target=wasm32-wasi --sysroot=/usr -O2 -mexec-model=reactor -Wall -Wextra -Werror -Igen -I"$SDK" \
  -o gen/core.wasm labels.c "$SDK/plait_function.c" gen/function.c gen/function_component_type.o
wasm-tools component new gen/core.wasm --adapt "$ADAPTER" -o function.wasm
