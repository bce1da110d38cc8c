# Dovetail build, generation, verification and tests.
# Tools are pinned in hack/tools/go.mod and run with `go tool -modfile`.

SHELL := /usr/bin/env bash -o pipefail
GO ?= go
CONTROLLER_GEN := $(GO) tool -modfile=hack/tools/go.mod controller-gen
# Generated files and the directories they live in; verify fails on any diff
# or untracked file under these paths.
PATHS_TO_VERIFY := api internal/catalog go.mod go.sum hack/tools/go.mod hack/tools/go.sum hack/controlplane/go.mod hack/controlplane/go.sum

.PHONY: all build generate verify test test-unit test-race bench bench-e2e controlplane demo up clean

all: build

build: ## Build the dovetail binary into bin/
	$(GO) build -o bin/dovetail ./cmd/dovetail

generate: ## Regenerate deepcopy, CRDs and the embedded catalog
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...
	rm -f api/crds/*.yaml
	$(CONTROLLER_GEN) crd paths=./api/karpenter/... paths=./api/aws/... paths=./api/kwok/... output:crd:artifacts:config=api/crds
	$(GO) generate ./internal/...

verify: generate ## Fail when a generated file is stale or untracked, or code is unformatted
	@hack/verify.sh $(PATHS_TO_VERIFY)

controlplane: ## Build etcd, kube-apiserver, kube-scheduler, kube-controller-manager and kwok into bin/
	hack/build-controlplane.sh

# Packages whose goroutines share state (the model, the queues, the
# controllers) and the integration tests that drive them concurrently.
RACE_PACKAGES = ./internal/state/... ./internal/podwatch/ ./internal/controllers/... ./internal/disruption/... \
	./internal/localaws/... ./internal/cloudprovider/aws/... \
	./test/integration/disruption/ ./test/integration/provisioning/ ./test/integration/termination/ \
	./test/integration/aws/ ./test/integration/localaws/ ./test/integration/interruption/

test: controlplane ## Run every test: unit, integration (real apiserver) and end-to-end (full control plane), then the concurrent packages under the race detector
	$(GO) test ./...
	$(GO) test -race $(RACE_PACKAGES)

test-race: controlplane ## Run the concurrent packages under the race detector
	$(GO) test -race $(RACE_PACKAGES)

test-unit: ## Run the tests that need no control plane (everything outside test/)
	$(GO) test $$($(GO) list ./... | grep -v /test/)

bench: ## Run the simulator benchmarks
	$(GO) test -run '^$$' -bench . -benchmem ./internal/simulator/...

demo: build controlplane ## Watch Dovetail launch, price, drain and consolidate nodes on a local cluster (about two minutes)
	bin/dovetail demo

bench-e2e: controlplane ## Run the end-to-end benchmarks on the local control plane
	$(GO) test ./test/e2e/bench -run '^$$' -bench . -benchtime 1x -timeout 30m

up: build controlplane ## Run a local cluster with Dovetail until interrupted
	bin/dovetail up

clean:
	rm -rf bin/
