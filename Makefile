# The README's two commands are `make run` and `make test`; everything else is set-up they call.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
ASSETS = $$(bash hack/envtest-assets.sh | tail -n 1)

SCENARIO ?= default

.PHONY: run sim-all test venv envtest-assets lint typecheck unit integration bench crds k8s-schemas clean image image-test

## run: the main job on the embedded default (a local API server, the fake Actions service, the simulator)
run: venv envtest-assets
	KUBEBUILDER_ASSETS="$(ASSETS)" $(BIN)/arc-sim $(SCENARIO)

## sim-all: the three shipped scenarios (default, rollout, restart) one after the other
sim-all: venv envtest-assets
	for s in default rollout restart; do KUBEBUILDER_ASSETS="$(ASSETS)" $(BIN)/arc-sim $$s --out arc-sim-out/$$s; done

## test: every gate CI runs: lint, types, unit tests, integration tests on a real kube-apiserver
test: venv envtest-assets lint typecheck unit integration image-test

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "make: $(PYTHON) not found (need Python >= 3.11)" >&2; exit 1; }
	$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "make: need Python >= 3.11" >&2; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,bench,sim]'
	touch $(STAMP)

venv: $(STAMP)

envtest-assets:
	@bash hack/envtest-assets.sh >/dev/null

lint: venv
	$(BIN)/ruff check src tests envtest benchmarks examples
	$(BIN)/lint-imports

typecheck: venv
	$(BIN)/mypy

unit: venv
	$(BIN)/pytest -q tests

integration: venv envtest-assets
	KUBEBUILDER_ASSETS="$(ASSETS)" $(BIN)/pytest -q envtest

bench: venv envtest-assets
	KUBEBUILDER_ASSETS="$(ASSETS)" $(BIN)/python -m benchmarks

## crds: regenerate config/crd/*.yaml from the models in arc_controllers.api.v1alpha1
crds: venv
	$(BIN)/python -m arc_controllers.api.v1alpha1.crdgen --out config/crd

## k8s-schemas: re-read the embedded Kubernetes schemas (pod template, ...) from the envtest kube-apiserver
k8s-schemas: venv envtest-assets
	KUBEBUILDER_ASSETS="$(ASSETS)" $(BIN)/python hack/snapshot_k8s_schemas.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache

# -- the controller image ---------------------------------------------------------------------
# `make image` installs podman & co. when missing (apt-get, as root), makes the base (python:3.11-slim-bookworm
# when a registry serves it, else bookworm from Debian's packages, cached in ~/.cache/reconcilekit/image)
# and builds ./Dockerfile; `make image-test` runs the image under the chart's contract (envtest/arc_controllers/test_image.py).
IMAGE ?= localhost/arc-controllers-python:dev

## image: the controller image from ./Dockerfile, built with podman (hack/image.sh; PYTHON_IMAGE picks the base)
image:
	IMAGE="$(IMAGE)" bash hack/image.sh build

## image-test: /manager and /ghalistener from the image, read-only as 65532, against envtest and the fake Actions service
image-test: venv envtest-assets image
	KUBEBUILDER_ASSETS="$(ASSETS)" ARC_IMAGE="$(IMAGE)" $(BIN)/pytest -q -m image envtest/arc_controllers/test_image.py
