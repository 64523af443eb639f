# plait: two commands on a fresh machine.
#   make demo   builds plait, runs it on a local control plane (plait dev) until
#               examples/getting-started's XR is Ready, then renders it offline
#   make test   installs what the tests need and runs every test

CARGO ?= cargo
TARGET_DIR ?= $(or $(CARGO_TARGET_DIR),$(CURDIR)/target)
PLAIT := $(TARGET_DIR)/release/plait

.PHONY: demo demo-deps test setup build-deps test-deps test-prereqs build lint unit bench test-cluster-binaries test-cosign upstream-crossplane toolchains functions bench-functions
.PHONY: test-helm test-kustomize kcl-oracle image image-deps image-build

# Installs Debian packages that are missing (as root, or through sudo).
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_INSTALL = DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y --no-install-recommends

# Toolchains for functions in other languages (examples/functions, `plait
# function new`), each cached under ~/.cache/plait/<tool>-<version>/ so a
# second run is instant. ~/.cache/plait/bin links them all; tests and the
# example build scripts look there first.
PLAIT_TOOLS ?= $(HOME)/.cache/plait
COMPONENTIZE_PY_VERSION := 0.25.1
COMPONENTIZE_JS_VERSION := 0.23.0
WASI_ADAPTER_VERSION := 48.0.8
CLANG_VERSION := 14
CPY_DIR := $(PLAIT_TOOLS)/componentize-py-$(COMPONENTIZE_PY_VERSION)
CJS_DIR := $(PLAIT_TOOLS)/componentize-js-$(COMPONENTIZE_JS_VERSION)
# `wit-bindgen c` and `wasm-tools component new` for the C builds come from
# host/guest-tools, built with the workspace's own dependencies: cold, a
# minute of CPU instead of two `cargo install`s of their CLIs (tens of
# minutes on a busy 2-core machine).
GUEST_TOOLS := $(TARGET_DIR)/debug/plait-guest-tools
ADAPTER_DIR := $(PLAIT_TOOLS)/wasi-adapter-$(WASI_ADAPTER_VERSION)
CLANG_DIR := $(PLAIT_TOOLS)/clang-wasi-$(CLANG_VERSION)
# The real KCL, the oracle of plait's KCL tests (guests/kcl/tests/oracle,
# tests/kcl/run-grammar.py): PyPI's kcl-lib at the version function-kcl
# embeds, with ruamel.yaml to compare YAML as KCL's own grammar runner does.
KCL_LIB_VERSION := 0.12.3
RUAMEL_YAML_VERSION := 0.18.6
KCL_ORACLE_DIR := $(PLAIT_TOOLS)/kcl-lib-$(KCL_LIB_VERSION)

setup:
	@command -v rustup >/dev/null || { echo "rustup is required: https://rustup.rs"; exit 1; }
	rustup target add wasm32-wasip2
	rustup component add rustfmt clippy

# The registry client links the system's TLS library. The built-in
# go-templating function is a Go component, built with plait: Go 1.21 or
# newer (GOTOOLCHAIN=auto fetches the 1.24 its go.mod asks for from the
# module proxy).
build-deps:
	@dpkg -s libssl-dev pkg-config >/dev/null 2>&1 || { \
		$(SUDO) apt-get update && $(APT_INSTALL) libssl-dev pkg-config; }
	@command -v go >/dev/null || { $(SUDO) apt-get update && $(APT_INSTALL) golang-go ca-certificates; }
	@go env GOVERSION | awk -F'[go.]' '{ if ($$3 > 1 || ($$3 == 1 && $$4 >= 21)) exit 0; print "Go 1.21 or newer is needed to build plait (found " $$0 "): https://go.dev/dl"; exit 1 }'

# The test cluster is built with Go 1.21 or newer (GOTOOLCHAIN=auto fetches the version
# Kubernetes asks for from the module proxy), the Go guests with Go 1.24 or
# newer (go:wasmexport), the Python guests with a venv,
# the JavaScript guests with npm. Installed from Debian only when missing.
test-prereqs:
	@command -v go >/dev/null || { $(SUDO) apt-get update && $(APT_INSTALL) golang-go ca-certificates; }
	@python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || { $(SUDO) apt-get update && $(APT_INSTALL) python3 python3-venv; }
	@command -v npm >/dev/null || { $(SUDO) apt-get update && $(APT_INSTALL) nodejs npm; }

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

# `plait dev`'s control plane: the test cluster's etcd, kube-apiserver and
# kube-controller-manager, built from their Go modules once and cached under
# ~/.cache/plait/ (`make -j2 demo` builds them beside plait). The demo
# script reaches the API server with curl and reads JSON with python3.
demo-deps:
	@command -v curl >/dev/null || { $(SUDO) apt-get update && $(APT_INSTALL) curl ca-certificates; }
	@command -v python3 >/dev/null || { $(SUDO) apt-get update && $(APT_INSTALL) python3; }
	@command -v go >/dev/null || { $(SUDO) apt-get update && $(APT_INSTALL) golang-go ca-certificates; }
	host/controlplane/build-binaries.sh >/dev/null

demo: build demo-deps
	PLAIT=$(PLAIT) examples/getting-started/demo.sh
	@printf '\n== the same example rendered offline: plait render\n'
	$(PLAIT) render examples/getting-started/xr.yaml examples/getting-started/composition.yaml \
		--xrd examples/getting-started/xrd.yaml
	$(PLAIT) render examples/getting-started/xr.yaml examples/getting-started/composition.yaml \
		--xrd examples/getting-started/xrd.yaml -x | $(PLAIT) validate examples/getting-started/xrd.yaml -

# The controller image (docs/operations.md, "The controller image"): plait
# built statically for IMAGE_TARGET, stripped, packed by `plait image build`
# as one layer on scratch (a non-root user, CA certificates, the OCI
# labels) into the OCI image layout $(IMAGE_LAYOUT), and, when REGISTRY is
# set, pushed to $(REGISTRY)/plait:$(TAG) by `plait image push`, signed with
# the cosign key SIGN when set. PUSH_FLAGS reaches the registry (e.g.
# --insecure for one without TLS, --docker-config, --ca-file). No container
# engine is needed.
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
IMAGE_TARGET ?= x86_64-unknown-linux-musl
REGISTRY ?=
TAG ?= $(VERSION)
SIGN ?=
PUSH_FLAGS ?=
IMAGE = $(REGISTRY)/plait:$(TAG)
IMAGE_BINARY = $(TARGET_DIR)/$(IMAGE_TARGET)/release/plait
IMAGE_LAYOUT = $(TARGET_DIR)/image/$(IMAGE_TARGET)

# The static build compiles OpenSSL (the registry client's TLS), jemalloc
# and ring's C with musl-gcc.
image-deps:
	@command -v musl-gcc >/dev/null || { $(SUDO) apt-get update && $(APT_INSTALL) musl-tools; }
	@command -v perl >/dev/null || { $(SUDO) apt-get update && $(APT_INSTALL) perl; }
	@test -f /etc/ssl/certs/ca-certificates.crt || { $(SUDO) apt-get update && $(APT_INSTALL) ca-certificates; }
	@case "$(IMAGE_TARGET)" in x86_64-*-linux-musl) ;; *) \
		echo "IMAGE_TARGET=$(IMAGE_TARGET): only x86_64-unknown-linux-musl builds here (the C parts need a musl cross compiler for other targets)"; exit 1;; esac
	rustup target add $(IMAGE_TARGET)

image: setup build-deps image-deps
	$(MAKE) --no-print-directory image-build

# `make image` once its prerequisites are in place (host/cli/tests/image.rs runs it).
image-build:
	$(CARGO) build --release -p plait --target $(IMAGE_TARGET)
	mkdir -p $(TARGET_DIR)/image
	strip -o $(TARGET_DIR)/image/plait-$(IMAGE_TARGET) $(IMAGE_BINARY)
	SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct 2>/dev/null || echo 0) \
		$(IMAGE_BINARY) image build --binary $(TARGET_DIR)/image/plait-$(IMAGE_TARGET) \
		--output $(IMAGE_LAYOUT) --tag $(TAG) --version $(VERSION) \
		$$(git rev-parse HEAD >/dev/null 2>&1 && echo --revision $$(git rev-parse HEAD))
	@if [ -n "$(REGISTRY)" ]; then \
		echo $(IMAGE_BINARY) image push $(IMAGE_LAYOUT) $(IMAGE) $(PUSH_FLAGS) $(if $(SIGN),--sign $(SIGN)); \
		$(IMAGE_BINARY) image push $(IMAGE_LAYOUT) $(IMAGE) $(PUSH_FLAGS) $(if $(SIGN),--sign $(SIGN)) || exit 1; \
		echo "install it: plait install --image $(IMAGE)"; \
		echo "        or: helm install plait deploy/helm/plait -n plait-system --create-namespace --set image.repository=$(REGISTRY)/plait --set image.tag=$(TAG)"; \
	else \
		echo "$(IMAGE_LAYOUT) holds the image; push it with: make image REGISTRY=<registry/path> TAG=$(TAG)"; \
	fi

lint: setup build-deps
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# etcd, kube-apiserver and kube-controller-manager for the controller tests, built from Go
# modules once and cached under ~/.cache/plait/ (see docs/testing.md).
test-cluster-binaries: test-prereqs
	host/controlplane/build-binaries.sh

# cosign, for the signature tests, built from its Go module once and cached
# under ~/.cache/plait/ (see docs/testing.md).
test-cosign: test-prereqs
	tests/cosign/build-cosign.sh

# helm, for the chart tests (host/cli/tests/helm_chart.rs), built from its Go
# module once and cached under ~/.cache/plait/ (see docs/testing.md).
test-helm: test-prereqs
	tests/helm/build-helm.sh

# kustomize, for the tests that build deploy/ as `kubectl apply -k` does
# (host/cli/tests/kustomize.rs), built from its Go module once and cached
# under ~/.cache/plait/ (see docs/testing.md).
test-kustomize: test-prereqs
	tests/kustomize/build-kustomize.sh

# Upstream Crossplane's CLI, core and functions for the differential suite,
# built from Go modules once and cached under ~/.cache/plait/ (see docs/testing.md).
upstream-crossplane: test-prereqs
	tests/differential/build-upstream.sh

# tests/run-tests.py builds what `cargo test --workspace` builds and runs
# the test binaries that mostly wait beside the others (docs/testing.md).
unit: setup build-deps test-prereqs test-deps test-cluster-binaries test-cosign upstream-crossplane toolchains test-helm test-kustomize kcl-oracle image-deps
	CARGO=$(CARGO) python3 tests/run-tests.py --workspace

kcl-oracle: test-prereqs $(KCL_ORACLE_DIR)/.done

$(KCL_ORACLE_DIR)/.done:
	python3 -m venv $(KCL_ORACLE_DIR)
	$(KCL_ORACLE_DIR)/bin/pip install --quiet kcl-lib==$(KCL_LIB_VERSION) ruamel.yaml==$(RUAMEL_YAML_VERSION)
	touch $@

toolchains: test-prereqs $(CPY_DIR)/.done $(CJS_DIR)/.done $(ADAPTER_DIR)/.done $(CLANG_DIR)/.done
	$(CARGO) build -p plait-guest-tools
	mkdir -p $(PLAIT_TOOLS)/bin
	ln -sf $(CPY_DIR)/bin/componentize-py $(PLAIT_TOOLS)/bin/componentize-py
	ln -sf $(CJS_DIR)/node_modules/.bin/componentize-js $(PLAIT_TOOLS)/bin/componentize-js
	# A copy, not a link into this checkout: another checkout's tests use
	# it too, and a link would break when this one is removed.
	install -m 755 $(GUEST_TOOLS) $(PLAIT_TOOLS)/bin/plait-guest-tools
	ln -sf plait-guest-tools $(PLAIT_TOOLS)/bin/wit-bindgen
	ln -sf plait-guest-tools $(PLAIT_TOOLS)/bin/wasm-tools
	ln -sf $(ADAPTER_DIR)/wasi_snapshot_preview1.reactor.wasm $(PLAIT_TOOLS)/bin/wasi_snapshot_preview1.reactor.wasm

$(CPY_DIR)/.done:
	python3 -m venv $(CPY_DIR)
	$(CPY_DIR)/bin/pip install --quiet componentize-py==$(COMPONENTIZE_PY_VERSION)
	touch $@

$(CJS_DIR)/.done:
	mkdir -p $(CJS_DIR)
	npm install --prefix $(CJS_DIR) --no-audit --no-fund --loglevel=error \
		@bytecodealliance/componentize-js@$(COMPONENTIZE_JS_VERSION)
	touch $@

# The preview1 reactor adapter ships inside wasmtime's adapter-provider crate;
# a throw-away crate fetches it through cargo.
$(ADAPTER_DIR)/.done:
	mkdir -p $(ADAPTER_DIR)/fetch/src
	printf '[package]\nname = "fetch"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\nwasi-preview1-component-adapter-provider = "=$(WASI_ADAPTER_VERSION)"\n[workspace]\n' \
		> $(ADAPTER_DIR)/fetch/Cargo.toml
	touch $(ADAPTER_DIR)/fetch/src/lib.rs
	cd $(ADAPTER_DIR)/fetch && $(CARGO) metadata --format-version 1 \
		| python3 -c 'import json,sys,os; m=json.load(sys.stdin); print(next(os.path.dirname(p["manifest_path"]) for p in m["packages"] if p["name"]=="wasi-preview1-component-adapter-provider"))' \
		> $(ADAPTER_DIR)/crate-dir
	cp "$$(cat $(ADAPTER_DIR)/crate-dir)/artefacts/wasi_snapshot_preview1.reactor.wasm" $(ADAPTER_DIR)/
	touch $@

$(CLANG_DIR)/.done:
	command -v clang-$(CLANG_VERSION) >/dev/null && command -v wasm-ld >/dev/null \
		&& test -d /usr/lib/wasm32-wasi || { apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang-$(CLANG_VERSION) lld-$(CLANG_VERSION) \
		wasi-libc libclang-rt-$(CLANG_VERSION)-dev-wasm32 >/dev/null; }
	mkdir -p $(CLANG_DIR)
	touch $@

test: lint unit

bench: setup build-deps test-deps test-cluster-binaries upstream-crossplane kcl-oracle
	$(CARGO) bench -p plait-runtime --bench call
	$(CARGO) bench -p plait-runtime --bench patch_and_transform
	$(CARGO) bench -p plait-runtime --bench go_templating
	$(CARGO) bench -p plait-runtime --bench kcl
	$(CARGO) bench -p plait-kcl --bench composition
	$(CARGO) bench -p plait-oci --bench distribution
	$(CARGO) bench -p plait --bench controller
	$(CARGO) bench -p plait --bench fairness
	$(CARGO) bench -p plait --bench side_by_side
	$(CARGO) bench -p plait --bench faults

# Builds every example function from source. The Go example makes its
# component with `plait function componentize`.
functions: toolchains
	$(CARGO) build -p plait
	for f in examples/functions/*/build.sh; do PATH=$(PLAIT_TOOLS)/bin:$$PATH PLAIT=$(CURDIR)/target/debug/plait sh $$f || exit 1; done

# Size, compile, cached load and per-call time per language, and of a real
# Go function ported to plait beside the built-in it mirrors.
bench-functions: functions
	$(CARGO) bench -p plait --bench languages
	$(CARGO) bench -p plait --bench ported_go
