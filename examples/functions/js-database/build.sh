#!/bin/sh
# Builds function.wasm: a WebAssembly component for plait.
set -eu
cd "$(dirname "$0")"
WIT="${PLAIT_WIT:-../../../wit}"
# componentize-js resolves imports only beside app.js: bring the helpers here.
cp "${PLAIT_SDK_JS:-../../../guests/sdk-js}/plait-function.js" plait-function.js
# -d http fetch-event: the component imports only what plait provides.
componentize-js app.js --wit "$WIT" --world-name function -d http fetch-event -o function.wasm
