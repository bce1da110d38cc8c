# Dovetail build, generation, verification and tests.
# Tools are pinned in hack/tools/go.mod and run with `go tool -modfile`.

SHELL := /usr/bin/env bash -o pipefail
GO ?= go
CONTROLLER_GEN := $(GO) tool -modfile=hack/tools/go.mod controller-gen
# golangci-lint has its own modfile: its dependencies must not move the
# versions controller-gen or the project build with.
GOLANGCI_LINT := bin/golangci-lint
# Generated files and the directories they live in; verify fails on any diff
# or untracked file under these paths.
PATHS_TO_VERIFY := api internal/catalog go.mod go.sum hack/tools/go.mod hack/tools/go.sum hack/tools/lint/go.mod hack/tools/lint/go.sum hack/controlplane/go.mod hack/controlplane/go.sum
PATHS_TO_VERIFY += charts hack/tools/helm/go.mod hack/tools/helm/go.sum hack/tools/image/go.mod hack/tools/image/go.sum
# Helm, pinned in its own module so that its Kubernetes libraries never
# meet the project's.
HELM := $(GO) tool -modfile=hack/tools/helm/go.mod helm

.PHONY: all build generate generate-chart helm-lint image verify chaos test test-unit test-race bench bench-e2e controlplane demo up clean

all: build

build: ## Build the dovetail binary into bin/
	$(GO) build -o bin/dovetail ./cmd/dovetail

generate: ## Regenerate deepcopy, CRDs and the embedded catalog
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...
	rm -f api/crds/*.yaml
	$(CONTROLLER_GEN) crd paths=./api/karpenter/... paths=./api/aws/... paths=./api/kwok/... output:crd:artifacts:config=api/crds
	$(GO) run ./hack/crdpatch -dir api/crds
	$(GO) generate ./internal/...
	$(MAKE) --no-print-directory generate-chart

# The charts' generated parts: the CRDs copied verbatim from api/crds, and
# the RBAC rules from the +kubebuilder:rbac markers, one file per part the
# chart grants separately.
RBAC_PARTS := core:./internal/controllers/...,./internal/operator kwok:./internal/cloudprovider/kwok aws:./internal/cloudprovider/aws webhook:./internal/conversion/webhook
generate-chart: ## Regenerate the charts' CRDs and RBAC rules
	rm -f charts/dovetail-crd/files/*.yaml charts/dovetail-crd/files/policies/*.yaml
	cp api/crds/*.yaml charts/dovetail-crd/files/
	mkdir -p charts/dovetail-crd/files/policies
	cp internal/crdinstall/policies/*.yaml charts/dovetail-crd/files/policies/
	rm -rf charts/dovetail/files/rbac
	@set -e; for part in $(RBAC_PARTS); do \
	  name=$${part%%:*}; paths=$${part#*:}; args=; \
	  for p in $${paths//,/ }; do args="$$args paths=$$p"; done; \
	  echo "controller-gen rbac ($$name)"; \
	  $(CONTROLLER_GEN) rbac:roleName=dovetail-$$name $$args output:rbac:artifacts:config=charts/dovetail/files/rbac/$$name; \
	done

# The controller image: a static binary on an empty base, built without a
# container engine (hack/tools/image, go-containerregistry). The same
# source gives the same digest.
IMAGE_REPO ?= ghcr.io/dovetail-autoscaler/dovetail
IMAGE_TAG ?= $(shell sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$$/\1/p' charts/dovetail/Chart.yaml)
IMAGE_ARCH ?= amd64
image: ## Build the controller image as an OCI layout (bin/image/oci) and a tarball (bin/image/dovetail.tar)
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build -trimpath -buildvcs=false -ldflags='-s -w -buildid=' -o bin/image/dovetail ./cmd/dovetail
	cd hack/tools/image && $(GO) run . -arch $(IMAGE_ARCH) -binary $(CURDIR)/bin/image/dovetail \
	  -ref $(IMAGE_REPO):$(IMAGE_TAG) -layout $(CURDIR)/bin/image/oci -tarball $(CURDIR)/bin/image/dovetail.tar

helm-lint: ## Lint both charts with the pinned Helm
	$(HELM) lint --strict charts/dovetail-crd
	$(HELM) lint --strict charts/dovetail --set settings.clusterName=lint
	$(HELM) lint --strict charts/dovetail --set cloudProvider=kwok

verify: generate lint ## Fail when a generated file is stale or untracked, code is unformatted, or the linter finds something
	@hack/verify.sh $(PATHS_TO_VERIFY)

$(GOLANGCI_LINT): hack/tools/lint/go.mod hack/tools/lint/go.sum
	$(GO) build -modfile=hack/tools/lint/go.mod -o $@ github.com/golangci/golangci-lint/v2/cmd/golangci-lint

lint: $(GOLANGCI_LINT) ## Run golangci-lint with .golangci.yaml over every package
	$(GOLANGCI_LINT) run ./...

controlplane: ## Build etcd, kube-apiserver, kube-scheduler, kube-controller-manager and kwok into bin/
	hack/build-controlplane.sh

# Packages whose goroutines share state (the model, the queues, the
# controllers) and the integration tests that drive them concurrently.
RACE_PACKAGES = ./internal/state/... ./internal/podwatch/ ./internal/controllers/... ./internal/disruption/... \
	./internal/localaws/... ./internal/cloudprovider/... ./internal/catalog/... ./internal/conversion/... \
	./internal/operator/... ./internal/cli/... ./internal/crdinstall/ ./internal/runaway/ ./internal/nodepoolutil/ ./internal/view/ \
	./test/integration/disruption/ ./test/integration/provisioning/ ./test/integration/termination/ \
	./test/integration/aws/ ./test/integration/localaws/ ./test/integration/interruption/ ./test/integration/repair/ ./test/integration/view/ \
	./test/integration/shadow/ ./test/integration/handoff/ ./test/integration/static/ ./test/integration/overlay/ ./test/integration/podmetrics/

# Per test binary: the end-to-end packages run for minutes each; go test's
# default of 10 minutes cut one off under load. They run one package at a
# time (-p 1): each starts a full control plane and a controller, and two
# side by side on 2 cores starved each other into timeouts.
TEST_TIMEOUT ?= 30m

test: controlplane ## Run every test: unit, integration (real apiserver) and end-to-end (full control plane), then the concurrent packages under the race detector
	$(GO) test -timeout $(TEST_TIMEOUT) $$($(GO) list ./... | grep -v -e /test/e2e -e /test/chaos)
	$(GO) test -p 1 -timeout $(TEST_TIMEOUT) ./test/e2e/... ./test/chaos/...
	cd hack/tools/image && $(GO) test ./...
	cd test/oracle && $(GO) test -timeout $(TEST_TIMEOUT) ./...
	$(GO) test -race -timeout $(TEST_TIMEOUT) $(RACE_PACKAGES)

test-race: controlplane ## Run the concurrent packages under the race detector
	$(GO) test -race $(RACE_PACKAGES)

test-unit: ## Run the tests that need no control plane (everything outside test/)
	$(GO) test $$($(GO) list ./... | grep -v /test/)

bench: ## Run the simulator benchmarks, then the kube-scheduler oracle on their plans up to 20,000 pods
	$(GO) test -run '^$$' -bench . -benchmem ./internal/simulator/...
	cd test/oracle && DOVETAIL_ORACLE_SIZES=1000,5000,20000 $(GO) test -count=1 -v -timeout 60m -run TestSimulatorPlans ./... | grep -E 'pods on|^(ok|FAIL|---)'

demo: build controlplane ## Watch Dovetail launch, price, drain and consolidate nodes on a local cluster (about two minutes)
	bin/dovetail demo

chaos: controlplane ## Run the chaos suite: 20 iterations of faults during scale-out and consolidation (make test runs 2); DOVETAIL_CHAOS_SEED replays one
	DOVETAIL_CHAOS_ITERATIONS=$${DOVETAIL_CHAOS_ITERATIONS:-20} $(GO) test ./test/chaos -run TestChaos -v -count=1 -timeout 80m

bench-e2e: controlplane ## Run the end-to-end benchmarks on the local control plane
	$(GO) test ./test/e2e/bench -run '^$$' -bench . -benchtime 1x -timeout 120m

up: build controlplane ## Run a local cluster with Dovetail until interrupted
	bin/dovetail up

clean:
	rm -rf bin/
