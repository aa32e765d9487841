#!/usr/bin/env bash
# Builds upstream's test and control-plane binaries from this wrapper module
# into $CONFORMANCE_CACHE/bin (default /var/cache/berth/conformance/bin), only
# those missing or stale: a binary is rebuilt when go.mod, go.sum, the Go
# version or its build flags changed (recorded in bin/.NAME.stamp). A second
# run builds nothing.
#
#   build.sh [SET...]   SET: e2e (default: e2e.test, ginkgo, kubectl, agnhost,
#                       nnp), aggregator (sample-apiserver, etcd-static: the
#                       Aggregator spec's images, for make conformance only),
#                       upstream-control-plane (kube-apiserver,
#                       kube-controller-manager, kube-scheduler, etcd), proxy
#                       (kube-proxy, the baseline of integration/proxy's
#                       BenchmarkSync), kubelet (the baseline of
#                       hack/bench-upstream), all
#
# Kubernetes binaries are stamped with the module's release (v1.34.4 for
# k8s.io/kubernetes v1.34.4), as upstream's own build does. Cold, on 2 cores:
# e2e.test ≈ 15–25 min, each control-plane binary ≈ 3–6 min.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${CONFORMANCE_CACHE:-/var/cache/berth/conformance}
bin=$cache/bin
export PATH=/usr/local/go/bin:$PATH
cd "$here"
mkdir -p "$bin"

version=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
minor=$(echo "$version" | cut -d. -f2)
ldflags=""
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+="-X $p.gitVersion=$version -X $p.gitMajor=1 -X $p.gitMinor=$minor "
done
inputs=$( (cat go.mod go.sum; go version) | sha256sum | cut -d' ' -f1)

# build NAME KIND PKG [ENV...]: KIND is "test" (go test -c) or "build".
build() {
  local name=$1 kind=$2 pkg=$3
  shift 3
  local flags=$ldflags
  [ "$name" != ginkgo ] || flags=""
  local stamp
  stamp=$(printf '%s\n' "$inputs" "$kind" "$pkg" "$flags" "$*" | sha256sum | cut -d' ' -f1)
  if [ -x "$bin/$name" ] && [ "$(cat "$bin/.$name.stamp" 2>/dev/null)" = "$stamp" ]; then
    echo "build: $name is up to date"
    return
  fi
  echo "build: $name ($pkg)"
  local start=$SECONDS
  if [ "$kind" = test ]; then
    env "$@" go test -c -vet=off -o "$bin/$name.new" -ldflags "$flags" "$pkg"
  else
    env "$@" go build -o "$bin/$name.new" -ldflags "$flags" "$pkg"
  fi
  mv "$bin/$name.new" "$bin/$name"
  echo "$stamp" >"$bin/.$name.stamp"
  echo "build: $name built in $((SECONDS - start)) s"
}

# build_in_copy NAME KIND PKG [GOFLAG...]: build in a copy of this module that may add
# go.sum entries: kube-proxy's dependencies (knftables, netlink, ipvs) are
# not in go.sum, and adding them here would restamp, so rebuild, every
# binary above.
build_in_copy() {
  local tmp
  tmp=$(mktemp -d)
  cp go.mod go.sum "$tmp/"
  local name=$1 kind=$2 pkg=$3
  shift 3
  (cd "$tmp" && build "$name" "$kind" "$pkg" GOFLAGS="-mod=mod${*:+ $*}")
  rm -rf "$tmp"
}

sets=("$@")
[ ${#sets[@]} -gt 0 ] || sets=(e2e)
for set in "${sets[@]}"; do
  case $set in
  e2e)
    build e2e.test test k8s.io/kubernetes/test/e2e
    build ginkgo build github.com/onsi/ginkgo/v2/ginkgo
    build kubectl build k8s.io/kubernetes/cmd/kubectl
    # The images hold no libc: static.
    build agnhost build k8s.io/kubernetes/test/images/agnhost CGO_ENABLED=0
    build nnp build k8s.io/kubernetes/test/images/nonewprivs CGO_ENABLED=0
    ;;
  aggregator)
    # The Aggregator spec's extension apiserver and its etcd sidecar, for
    # their images (hack/e2eimages).
    build sample-apiserver build k8s.io/sample-apiserver CGO_ENABLED=0
    build etcd-static build go.etcd.io/etcd/server/v3 CGO_ENABLED=0
    ;;
  upstream-control-plane)
    build kube-apiserver build k8s.io/kubernetes/cmd/kube-apiserver
    build kube-controller-manager build k8s.io/kubernetes/cmd/kube-controller-manager
    build kube-scheduler build k8s.io/kubernetes/cmd/kube-scheduler
    build etcd build go.etcd.io/etcd/server/v3
    ;;
  proxy)
    build_in_copy kube-proxy build k8s.io/kubernetes/cmd/kube-proxy
    ;;
  kubelet)
    # The largest of them, built one package at a time: cold ≈ 6–10 min.
    build_in_copy kubelet build k8s.io/kubernetes/cmd/kubelet -p=1
    ;;
  all) "$0" e2e aggregator upstream-control-plane proxy kubelet ;;
  *)
    echo "build: unknown set $set (want e2e, aggregator, upstream-control-plane, proxy, kubelet or all)" >&2
    exit 2
    ;;
  esac
done
