# kube-extended-resource: every entry point a developer or CI needs.
SHELL := /bin/bash
.DEFAULT_GOAL := help

BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
IMAGE ?= kube-extended-resource
TAG ?= dev
NODES ?= 1

# Debian packages the build, the tests and the tools need.
DEB_PACKAGES := build-essential cmake pkg-config git openssl ca-certificates \
  libcurl4-openssl-dev libssl-dev nlohmann-json3-dev libyaml-cpp-dev libspdlog-dev \
  libgtest-dev libgmock-dev googletest libcpp-httplib-dev libprotobuf-dev protobuf-compiler \
  clang-format clang-16 libclang-rt-16-dev \
  runc containernetworking-plugins iptables nftables iproute2 conntrack busybox-static podman util-linux debootstrap \
  python3-yaml

.PHONY: help deps build test unit-test integration-test e2e-test controlplane-binaries run run-in-cluster fmt fmt-check docker-build clean

help: ## list the targets
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-22s %s\n", $$1, $$2}'

deps: ## install the Debian packages the build and tests need (idempotent)
	@missing=$$(for p in $(DEB_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing:" $$missing; \
	  SUDO=$$( [ $$(id -u) -eq 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
	else echo "deps: all Debian packages present"; fi

build: deps ## configure and compile everything
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(if $(CI),-DKER_WERROR=ON) $(CMAKE_FLAGS)
	cmake --build $(BUILD_DIR) -j $(JOBS)

controlplane-binaries: ## build (or reuse) the pinned control plane (etcd, kube-apiserver, ...) and node (kubelet, kube-proxy, containerd)
	test/controlplane/build-binaries.sh

unit-test: build ## run the unit tests only
	cd $(BUILD_DIR) && ctest -L unit --output-on-failure -j $(JOBS)

integration-test: build controlplane-binaries ## run the integration tests against a real control plane
	test/run-integration.sh $(BUILD_DIR)

# How long `make test` fuzzes each target (`make fuzz` runs longer).
TEST_FUZZ_SECONDS ?= 30

e2e-test: build controlplane-binaries ## run the end-to-end tests on a real node, with deploy/ running as pods from the image
	test/run-e2e.sh $(BUILD_DIR)

.PHONY: helm-test
helm-test: ## lint the Helm chart and check that its default render equals deploy/ and crds/ (builds the pinned helm once)
	test/helm/check-chart.sh

.PHONY: monitoring-test
monitoring-test: ## validate the Grafana dashboard and alerting rules of deploy/monitoring/ and that every metric they read is exported
	test/monitoring/check.sh

test: build controlplane-binaries ## run every test: unit, integration, end-to-end on a real node, the reduced chaos soak, a bounded fuzz run
	cd $(BUILD_DIR) && ctest -L unit --output-on-failure -j $(JOBS)
	test/helm/check-chart.sh
	test/monitoring/check.sh
	python3 test/tools/ker_devices_test.py
	test/run-integration.sh $(BUILD_DIR)
	test/run-e2e.sh $(BUILD_DIR)
	cd $(BUILD_DIR) && ctest -L soak --output-on-failure
	JOBS=$(JOBS) fuzz/run.sh $(TEST_FUZZ_SECONDS)

run: build controlplane-binaries ## run the whole system locally, the sample workload on real nodes (NODES=1..9, default 1; Ctrl-C stops it)
	deploy/run-local.sh --nodes $(NODES) $(BUILD_DIR)

run-in-cluster: build controlplane-binaries ## as run, but the components run as pods from deploy/ and the image (built first)
	deploy/run-local.sh --in-cluster --nodes $(NODES) $(BUILD_DIR)

fmt: ## format the C++ sources in place
	git ls-files -co --exclude-standard '*.cpp' '*.h' | xargs -r clang-format -i

fmt-check: ## fail if any C++ source is not formatted
	git ls-files -co --exclude-standard '*.cpp' '*.h' | xargs -r clang-format --dry-run --Werror

# Base images of the Dockerfile's two stages (test/images/build-images.sh passes local ones).
BUILD_IMAGE ?= debian:bookworm
RUNTIME_IMAGE ?= debian:bookworm-slim
# docker or podman; empty: docker when its engine answers, else podman.
CONTAINER_ENGINE ?=
docker-build: ## build the container image $(IMAGE):$(TAG) with docker, or podman when no Docker engine answers
	@set -euo pipefail; engine='$(CONTAINER_ENGINE)'; \
	if [ -z "$$engine" ]; then \
	  if command -v docker >/dev/null && timeout 30 docker info >/dev/null 2>&1; then engine=docker; \
	  elif command -v podman >/dev/null; then engine=podman; \
	  else echo "docker-build: needs a Docker engine or podman (apt-get install podman)" >&2; exit 1; fi; \
	fi; \
	net=; if [ "$$engine" = podman ]; then net=--network=host; fi; \
	cmd=("$$engine" build $$net --build-arg 'BUILD_IMAGE=$(BUILD_IMAGE)' --build-arg 'RUNTIME_IMAGE=$(RUNTIME_IMAGE)' -t '$(IMAGE):$(TAG)' .); \
	echo "+ $${cmd[*]}"; "$${cmd[@]}"; \
	size=$$("$$engine" image inspect --format '{{.Size}}' '$(IMAGE):$(TAG)'); \
	echo "docker-build: $(IMAGE):$(TAG) is $$((size / 1000000)) MB ($$size bytes, uncompressed)"

clean: ## remove the build folder
	rm -rf $(BUILD_DIR)

FUZZ_SECONDS ?= 60
.PHONY: fuzz
fuzz: deps ## build the libFuzzer targets with clang into build-fuzz/ and run each for FUZZ_SECONDS (default 60)
	JOBS=$(JOBS) fuzz/run.sh $(FUZZ_SECONDS)

SOAK_SECONDS ?= 300
.PHONY: soak
soak: build controlplane-binaries ## chaos soak on a real control plane: SOAK_SECONDS (default 300) of pod churn and faults, 300 nodes
	test/soak/run.sh --build-dir $(BUILD_DIR) --seconds $(SOAK_SECONDS)

REAL_NODE_SOAK_SECONDS ?= 1800
.PHONY: soak-real-node
soak-real-node: build controlplane-binaries ## chaos soak on two real nodes: REAL_NODE_SOAK_SECONDS (default 1800) of churn and faults, report in test/soak/realnode-report.md
	test/soak/realnode.sh --build-dir $(BUILD_DIR) --seconds $(REAL_NODE_SOAK_SECONDS)

BENCH_ARGS ?=
PIPELINE_ARGS ?=
.PHONY: bench bench-pipeline
bench: deps controlplane-binaries ## benchmark extender and controller on a real control plane (100/1,000/5,000 nodes), then bench-pipeline, into bench/results/
	JOBS=$(JOBS) bench/run.sh $(BENCH_ARGS)
	JOBS=$(JOBS) bench/pipeline.sh $(PIPELINE_ARGS)

bench-pipeline: deps controlplane-binaries ## pods/s and latency, creation to PodScheduled: this project vs DRA vs no claims, and claims from a template (500/2,000/5,000 nodes)
	JOBS=$(JOBS) bench/pipeline.sh $(PIPELINE_ARGS)
