#!/bin/sh
# Builds function.wasm: a WebAssembly component for plait.
set -eu
cd "$(dirname "$0")"
SDK="${PLAIT_SDK_PYTHON:-../../../guests/sdk-python}"
WIT="${PLAIT_WIT:-../../../wit}"
componentize-py -d "$WIT" -w function componentize app -p . -p "$SDK" -o function.wasm
