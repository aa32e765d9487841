# berth: `make up` runs a single-node cluster, `make test` runs every test.
SHELL := /bin/bash
export PATH := /usr/local/go/bin:$(PATH)

BIN      := $(CURDIR)/bin
BERTH    := $(BIN)/berth
TEST_TIMEOUT  ?= 28m

.PHONY: all deps build vet kubectls conformance-bin test unit bench bench-upstream fuzz soak up demo conformance clean

# `berth kubectl` (k8s.io/kubectl built in) reports the Kubernetes release of
# its k8s.io/kubectl module (v0.37.2 is v1.37.2); kubectl version needs it.
KUBE_VERSION := $(shell PATH=/usr/local/go/bin:$$PATH go list -m -f '{{.Version}}' k8s.io/kubectl | sed 's/^v0\./v1./')
KUBE_LDFLAGS := $(foreach p,k8s.io/component-base/version k8s.io/client-go/pkg/version,-X $(p).gitVersion=$(KUBE_VERSION) -X $(p).gitMajor=1 -X $(p).gitMinor=$(word 2,$(subst ., ,$(KUBE_VERSION))))

# Upstream kubectl of every release the tests drive, as v1.XX.Y/kubectl:
# internal/prereq.Kubectl finds them here.
export BERTH_KUBECTL_DIR ?= /var/cache/berth/kubectl

all: build

## deps: install the node prerequisites (containerd, runc, CNI plugins, busybox, iptables) when missing
deps:
	@./hack/deps.sh

## build: the berth binary and the static pause program (the sandbox image of `berth up`) in bin/
build:
	go build -ldflags '$(KUBE_LDFLAGS)' -o $(BERTH) ./cmd/berth
	CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o $(BIN)/pause ./cmd/pause

vet:
	go vet ./...

## kubectls: upstream kubectl of each release the tests drive (1.27–1.34, hack/kubectl), built from the module proxy into $(BERTH_KUBECTL_DIR) when missing
kubectls:
	./hack/kubectl/build.sh

## conformance-bin: upstream's e2e.test, ginkgo, kubectl and the e2e images' programs (hack/conformance/build.sh), built into /var/cache/berth/conformance when missing or stale
conformance-bin:
	./hack/conformance/build.sh

## test: every test against real containerd: the unit packages under the race detector, then the integration suites
test: deps build vet kubectls conformance-bin
	{ BERTH_BIN=$(BERTH) go test -race -count=1 -timeout $(TEST_TIMEOUT) -v $$(go list ./... | grep -v '^berth/integration/'); \
	  BERTH_BIN=$(BERTH) go test -count=1 -timeout $(TEST_TIMEOUT) -v ./integration/...; } 2>&1 | ./hack/testsummary.sh

## unit: the tests that need no runtime (fast feedback while editing)
unit: build
	BERTH_BIN=$(BERTH) go test -count=1 -short ./...

## bench: benchmarks, printed as tables (with upstream kube-proxy built for integration/proxy's baseline), and bench-upstream at small sizes
bench: deps build
	./hack/conformance/build.sh proxy
	BERTH_BIN=$(BERTH) go test -run '^$$' -bench . -benchtime 1x ./...
	$(MAKE) bench-upstream BENCH_UPSTREAM_ARGS='$(BENCH_UPSTREAM_SMALL)'

## bench-upstream: berth against upstream Kubernetes v1.34 in one run on this machine (hack/bench-upstream): pod startup (agent vs kubelet vs a CRI floor), end to end (berth up vs upstream's control plane + kubelet), the control plane at scale, the job and daemonset controllers vs kube-controller-manager's; as root, offline; markdown tables, results.json under /var/cache/berth/bench-upstream/
BENCH_UPSTREAM_ARGS  ?=
BENCH_UPSTREAM_SMALL := -n 1,10 -reps 1 -replicas 10 -nodes 100 -pods 500 -rates 0,50 -big-nodes 0 -job-completions 100 -job-parallelism 10 -controller-nodes 100
bench-upstream: deps build
	./hack/conformance/build.sh upstream-control-plane kubelet
	go build -o $(BIN)/bench-upstream ./hack/bench-upstream
	$(BIN)/bench-upstream -berth $(BERTH) $(BENCH_UPSTREAM_ARGS)

## fuzz: every native Go fuzz target for FUZZTIME each (hack/fuzz.sh); `make test` runs only their seed corpora
FUZZTIME ?= 2m
fuzz:
	FUZZTIME=$(FUZZTIME) ./hack/fuzz.sh

## soak: the long variants of the reliability tests (the idle-after-workload measurement at the issue's size: 50 namespaces, a minute idle)
soak: deps build
	BERTH_BIN=$(BERTH) BERTH_SOAK=1 go test -count=1 -timeout 60m -v -run 'TestIdleAfterMixedWorkload' ./integration/up

## up: a single-node cluster on this machine (embedded etcd, real containerd); Ctrl-C stops it
DATA_DIR ?= /var/lib/berth
# ENCRYPTION_CONFIG=FILE: encrypt what the EncryptionConfiguration lists in etcd
up: deps build
	$(BERTH) up --data-dir $(DATA_DIR) $(if $(ENCRYPTION_CONFIG),--encryption-provider-config $(ENCRYPTION_CONFIG))

## demo: as root, offline: berth up, examples/ applied with berth kubectl, scaled, rolled out, deleted, stopped (hack/demo.sh)
demo: deps build
	BERTH=$(BERTH) ./hack/demo.sh

## conformance: upstream's e2e suite (e2e.test v1.34.4) against `berth up`, offline (hack/conformance/run.sh);
## knobs (from the command line or the environment) FOCUS, SKIP, NODES, TARGET=upstream-control-plane; not part of `make test`
conformance: deps build
	BERTH=$(BERTH) ./hack/conformance/run.sh

clean:
	rm -rf $(BIN)
