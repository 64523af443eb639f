# plait: two commands on a fresh machine.
#   make demo   builds plait and renders examples/getting-started
#   make test   installs what the tests need and runs every test

CARGO ?= cargo
PLAIT := target/release/plait

.PHONY: demo test setup build lint unit bench test-cluster-binaries

setup:
	@command -v rustup >/dev/null || { echo "rustup is required: https://rustup.rs"; exit 1; }
	rustup target add wasm32-wasip2
	rustup component add rustfmt clippy

build: setup
	$(CARGO) build --release -p plait

demo: build
	$(PLAIT) render examples/getting-started/xr.yaml examples/getting-started/composition.yaml \
		--xrd examples/getting-started/xrd.yaml

lint: setup
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# etcd, kube-apiserver and kube-controller-manager for the controller tests, built from Go
# modules once and cached under ~/.cache/plait/ (see docs/testing.md).
test-cluster-binaries:
	tests/cluster/build-binaries.sh

unit: setup test-cluster-binaries
	$(CARGO) test --workspace

test: lint unit

bench: setup
	$(CARGO) bench -p plait-runtime --bench call
