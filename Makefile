# plait: two commands on a fresh machine.
#   make demo   builds plait and renders examples/getting-started
#   make test   installs what the tests need and runs every test

CARGO ?= cargo
PLAIT := target/release/plait

.PHONY: demo test setup build-deps test-deps build lint unit bench test-cluster-binaries

# Installs Debian packages that are missing (as root, or through sudo).
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_INSTALL = DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y --no-install-recommends

setup:
	@command -v rustup >/dev/null || { echo "rustup is required: https://rustup.rs"; exit 1; }
	rustup target add wasm32-wasip2
	rustup component add rustfmt clippy

# The registry client links the system's TLS library.
build-deps:
	@dpkg -s libssl-dev pkg-config >/dev/null 2>&1 || { \
		$(SUDO) apt-get update && $(APT_INSTALL) libssl-dev pkg-config; }

# Tests run a local OCI registry (Debian's docker-registry, CNCF distribution)
# and make htpasswd files. The package's own service is masked before
# installing so nothing listens beyond what the tests start.
test-deps:
	@if [ ! -x /usr/bin/docker-registry ] || ! command -v htpasswd >/dev/null; then \
		$(SUDO) systemctl mask docker-registry.service >/dev/null 2>&1 || true; \
		$(SUDO) apt-get update && $(APT_INSTALL) docker-registry apache2-utils; \
		$(SUDO) systemctl stop docker-registry.service >/dev/null 2>&1 || true; \
	fi

build: setup build-deps
	$(CARGO) build --release -p plait

demo: build
	$(PLAIT) render examples/getting-started/xr.yaml examples/getting-started/composition.yaml \
		--xrd examples/getting-started/xrd.yaml

lint: setup build-deps
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# etcd, kube-apiserver and kube-controller-manager for the controller tests, built from Go
# modules once and cached under ~/.cache/plait/ (see docs/testing.md).
test-cluster-binaries:
	tests/cluster/build-binaries.sh

unit: setup build-deps test-deps test-cluster-binaries
	$(CARGO) test --workspace

test: lint unit

bench: setup build-deps test-deps
	$(CARGO) bench -p plait-runtime --bench call
	$(CARGO) bench -p plait-runtime --bench patch_and_transform
	$(CARGO) bench -p plait-oci --bench distribution
