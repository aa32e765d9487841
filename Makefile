# berth: `make up` runs a single-node cluster, `make test` runs every test.
SHELL := /bin/bash
export PATH := /usr/local/go/bin:$(PATH)

BIN      := $(CURDIR)/bin
BERTH    := $(BIN)/berth
TEST_TIMEOUT  ?= 28m

.PHONY: all deps build vet test unit bench up clean

all: build

## deps: install the node prerequisites (containerd, runc, CNI plugins, busybox, iptables) when missing
deps:
	@./hack/deps.sh

## build: the berth binary and the static pause program (the sandbox image of `berth up`) in bin/
build:
	go build -o $(BERTH) ./cmd/berth
	CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o $(BIN)/pause ./cmd/pause

vet:
	go vet ./...

## test: every test, unit and integration, against real containerd
test: deps build vet
	BERTH_BIN=$(BERTH) go test -count=1 -timeout $(TEST_TIMEOUT) -v ./... 2>&1 | ./hack/testsummary.sh

## unit: the tests that need no runtime (fast feedback while editing)
unit: build
	BERTH_BIN=$(BERTH) go test -count=1 -short ./...

## bench: benchmarks, printed as tables
bench: deps build
	BERTH_BIN=$(BERTH) go test -run '^$$' -bench . -benchtime 1x ./...

## up: a single-node cluster on this machine (embedded etcd, real containerd); Ctrl-C stops it
DATA_DIR ?= /var/lib/berth
up: deps build
	$(BERTH) up --data-dir $(DATA_DIR)

clean:
	rm -rf $(BIN)
