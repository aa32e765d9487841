#!/usr/bin/env bash
# `make conformance`: upstream's e2e suite (e2e.test of the k8s.io/kubernetes
# release this module pins) against a berth cluster on this machine, offline.
# As root:
#
#   1. builds what is missing (hack/conformance/build.sh: e2e.test, ginkgo,
#      kubectl, agnhost, nnp; with TARGET=upstream-control-plane also
#      kube-apiserver, kube-controller-manager, kube-scheduler and etcd);
#   2. builds the e2e test images and serves them from a registry on
#      127.0.0.1 under registry.k8s.io's names (hack/e2eimages);
#   3. starts the cluster on its own data dir, bridge, pod subnet and ports,
#      with registry.k8s.io mirrored to that registry, and waits for its node
#      to be Ready:
#        TARGET=berth-up (default): `berth up`;
#        TARGET=upstream-control-plane: etcd, kube-apiserver,
#        kube-controller-manager and kube-scheduler, with `berth agent` as
#        the only node (hack/conformance/upstream.sh);
#        TARGET=testbed: several nodes (integration/testbed: TESTBED_NODES
#        network namespaces, default 3, each with its own containerd and
#        `berth agent`, on an underlay bridge; two `berth server` replicas
#        on a three-member etcd, the cluster DNS on the underlay; names
#        TESTBED_PREFIX*, default bmn, pods in TESTBED_CLUSTER_CIDR (default
#        10.64.0.0/16, a /24 per node), Services in CONFORMANCE_SERVICE_CIDR
#        (default 10.164.0.0/20), the underlay TESTBED_UNDERLAY (default
#        10.254.64.0/24)), for the specs that need several nodes;
#   4. runs e2e.test under `ginkgo -p` (NODES processes) with FOCUS and SKIP;
#   5. stops everything it started (SIGTERM, then waits), checks no network
#      namespace, link or mount of the run is left, and prints a table per
#      SIG and every failure with its first message line.
#
# Knobs (environment): FOCUS (default '\[Conformance\]'), SKIP (default
# '\[Serial\]|\[Disruptive\]'), NODES (ginkgo processes, default 3), TARGET,
# TESTBED_NODES, TESTBED_PREFIX, TESTBED_CLUSTER_CIDR and TESTBED_UNDERLAY
# (TARGET=testbed),
# BERTH (default bin/berth), CONFORMANCE_CACHE (built binaries, default
# /var/cache/berth/conformance), RESULTS_DIR (default
# $CONFORMANCE_CACHE/results/<UTC time>-<target>: junit_01.xml, ginkgo.log,
# the cluster's and the registry's logs, summary.txt, failures.txt),
# CONFORMANCE_POD_CIDR (default 10.47.0.0/24), CONFORMANCE_BRIDGE (default
# berthconf0), CONFORMANCE_SERVICE_CIDR (the cluster's service range,
# default berth's own, the upstream control plane's 10.96.0.0/16, the test
# bed's 10.164.0.0/20; give each cluster run beside another its own, as
# their service proxies share the host's network namespace), GINKGO_TIMEOUT
# (default 3h), E2E_ARGS (more e2e.test flags),
# CONFORMANCE_KEEP=1 (keep the cluster's data dir), BEFORE_E2E (a shell
# command run once the node is Ready, with KUBECONFIG and KUBECTL set: for
# experiments, e.g. creating an object the cluster lacks).
#
# Exit status: 0 when every spec that ran passed, 1 when one failed, 2 when
# the harness itself failed.
# The whole script is one { … } block: bash parses it before running it, so
# editing this file cannot upset a run in progress.
{
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=../lib/stop.sh
. "$repo/hack/lib/stop.sh"
BERTH=${BERTH:-$repo/bin/berth}
FOCUS=${FOCUS:-'\[Conformance\]'}
SKIP=${SKIP-'\[Serial\]|\[Disruptive\]'}
NODES=${NODES:-3}
TARGET=${TARGET:-berth-up}
cache=${CONFORMANCE_CACHE:-/var/cache/berth/conformance}
bin=$cache/bin
POD_CIDR=${CONFORMANCE_POD_CIDR:-10.47.0.0/24}
BRIDGE=${CONFORMANCE_BRIDGE:-berthconf0}
SERVICE_CIDR=${CONFORMANCE_SERVICE_CIDR:-}
export PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH
export CONFORMANCE_CACHE=$cache

step=starting
registry_pid=
cluster_pid=
work=
results=

say() { printf '\n\033[1m==> %s\033[0m\n' "$*"; step=$*; }
die() {
  echo "conformance: $*" >&2
  exit 2
}

# stop PID: SIGTERM, then SIGKILL after 120 s; returns the exit status.
stop() { stop_pid conformance 120 "$1"; }

# leftovers: what of this run is still on the machine (its bridge, mounts
# under its work dir, its pods' network namespaces), reported; fails when any.
leftovers() {
  local found=0
  if ip link show "$BRIDGE" >/dev/null 2>&1; then
    echo "conformance: the pod bridge $BRIDGE is still there" >&2
    found=1
  fi
  if [ -n "$work" ] && grep -qF " $work/" /proc/self/mountinfo; then
    echo "conformance: mounts are left under $work:" >&2
    grep -F " $work/" /proc/self/mountinfo | awk '{print "  " $5}' >&2
    found=1
  fi
  # The network namespaces of the pods the cluster still had when it was
  # stopped (recorded from its containerd by pod_netns).
  local ns
  for ns in $(cat "$work/netns.ours" 2>/dev/null); do
    if [ -e "/var/run/netns/$ns" ]; then
      echo "conformance: network namespace $ns of a pod of this run is still there" >&2
      found=1
    fi
  done
  return "$found"
}

# pod_netns: the network namespaces of the pods in the cluster's containerd
# (from each container's OCI spec), into $work/netns.ours.
pod_netns() {
  local sock=$work/data/containerd/containerd.sock id
  [ -S "$sock" ] || return 0
  for id in $(ctr --address "$sock" -n k8s.io containers list -q 2>/dev/null); do
    ctr --address "$sock" -n k8s.io containers info "$id" 2>/dev/null | grep -o '/var/run/netns/cni-[0-9a-f-]*' || true
  done | sed 's|.*/||' | sort -u >"$work/netns.ours"
}

cleanup() {
  local rc=$?
  trap - EXIT
  # Before the results step every failure is the harness's own.
  if [ "$rc" -ne 0 ] && [ "${step#results}" = "$step" ]; then
    rc=2
    echo >&2
    echo "conformance: harness FAILED (exit $rc) at step: $step" >&2
    if [ -n "$results" ] && [ -s "$results/cluster.log" ]; then
      echo "conformance: last lines of the cluster's log ($results/cluster.log):" >&2
      tail -n 30 "$results/cluster.log" >&2 || true
    fi
  fi
  if [ -n "$cluster_pid" ]; then
    pod_netns
    echo "conformance: stopping the cluster (pid $cluster_pid)"
    stop "$cluster_pid" || echo "conformance: the cluster exited with status $?" >&2
  fi
  if [ -n "$registry_pid" ]; then stop "$registry_pid" || true; fi
  if [ -n "$work" ] && [ -d "$work" ]; then
    if ! leftovers; then
      echo "conformance: work dir kept: $work" >&2
      [ "$rc" -ne 0 ] || rc=2
    elif [ "${CONFORMANCE_KEEP:-}" = 1 ]; then
      echo "conformance: work dir kept: $work"
    else
      rm -rf "$work"
    fi
  fi
  [ -z "$results" ] || echo "conformance: results in $results"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# until_ok DESCRIPTION SECONDS COMMAND...: run COMMAND every second until it
# succeeds; fail naming DESCRIPTION after SECONDS, or at once when the
# cluster exits.
until_ok() {
  local what=$1 secs=$2 i
  shift 2
  for ((i = 0; i < secs; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    if [ -n "$cluster_pid" ] && ! kill -0 "$cluster_pid" 2>/dev/null; then
      die "the cluster exited while waiting for $what"
    fi
    sleep 1
  done
  die "timed out after ${secs}s waiting for $what"
}

# free_port FROM: the first port from FROM nothing listens on.
free_port() {
  local p
  for ((p = $1; p < $1 + 200; p++)); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return
    fi
  done
  die "no free port in $1-$(($1 + 199))"
}

say "checking the prerequisites"
[ "$(id -u)" -eq 0 ] || die "must run as root (the cluster runs containerd and sets up the pod network)"
case $TARGET in
berth-up | upstream-control-plane) ;;
testbed) BRIDGE=${TESTBED_PREFIX:-bmn}0 ;; # the underlay bridge, checked for leftovers
*) die "TARGET=$TARGET: want berth-up, upstream-control-plane or testbed" ;;
esac
[ -x "$BERTH" ] || die "no berth binary at $BERTH (run: make build)"
[ -x "$(dirname "$BERTH")/pause" ] || die "no pause binary beside $BERTH (run: make build)"
for cmd in go containerd runc iptables ip; do
  command -v "$cmd" >/dev/null || die "$cmd is not installed (run: make deps)"
done
[ -x /bin/busybox ] || die "/bin/busybox (Debian's busybox-static) is missing: apt-get install busybox-static"
[ -x /bin/bash-static ] || die "/bin/bash-static (Debian's bash-static) is missing: apt-get install bash-static"
if ip link show "$BRIDGE" >/dev/null 2>&1; then
  die "bridge $BRIDGE exists already: is another conformance run going? Set CONFORMANCE_BRIDGE and CONFORMANCE_POD_CIDR to run beside it"
fi

say "building what is missing"
sets=(e2e aggregator)
[ "$TARGET" != upstream-control-plane ] || sets+=(upstream-control-plane)
"$here/build.sh" "${sets[@]}"
(cd "$here" && go build -o "$bin/junitsummary" ./junitsummary)

results=${RESULTS_DIR:-$cache/results/$(date -u +%Y%m%dT%H%M%SZ)-$TARGET}
mkdir -p "$results"
# results/latest: the last run that kept its results in the cache.
[ -n "${RESULTS_DIR:-}" ] || ln -sfn "$results" "$cache/results/latest"
work=$(mktemp -d /tmp/berth-conformance.XXXXXX)
mkdir -p "$work/registry" "$work/data"
echo "results in $results; work dir $work; pod network $POD_CIDR on bridge $BRIDGE"

say "building the e2e test images and serving them from a registry on 127.0.0.1"
(cd "$repo" && go build -o "$work/e2eimages" ./hack/e2eimages &&
  CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$work/sh" ./hack/e2eimages/sh)
kube_dir=$(cd "$here" && go list -m -f '{{.Dir}}' k8s.io/kubernetes)
"$work/e2eimages" -dir "$work/registry" -agnhost "$bin/agnhost" -agnhost-src "$kube_dir/test/images/agnhost" \
  -nnp "$bin/nnp" -pause "$(dirname "$BERTH")/pause" -sh "$work/sh" \
  -sample-apiserver "$bin/sample-apiserver" -etcd "$bin/etcd-static" >"$results/registry.log" 2>&1 &
registry_pid=$!
for ((i = 0; i < 1800; i++)); do
  [ -e "$work/registry/ready" ] && break
  kill -0 "$registry_pid" 2>/dev/null || {
    cat "$results/registry.log" >&2
    die "e2eimages exited"
  }
  sleep 0.1
done
[ -e "$work/registry/ready" ] || die "e2eimages did not get ready within 180 s"
cat "$results/registry.log"
# Every image e2e.test names under registry.k8s.io that is not served is
# listed, so a spec pulling one is known to fail for want of an image.
"$bin/e2e.test" --list-images 2>/dev/null | grep '^registry.k8s.io/' | sort >"$work/wanted.txt" || true
missing=$(comm -23 "$work/wanted.txt" "$work/registry/images.txt" | tr '\n' ' ')
[ -z "$missing" ] || echo "images e2e.test names that are not served (specs using them cannot pull): $missing"

kubelet_port=$(free_port 10270)
kubeconfig=
case $TARGET in
berth-up)
  say "starting the cluster: berth up"
  args=(up --data-dir "$work/data" --listen 0.0.0.0:0 --pod-cidr "$POD_CIDR" --cni-bridge "$BRIDGE"
    --kubelet-port "$kubelet_port" --read-only-port 0 --registries "$work/registry/registries.yaml")
  [ -z "$SERVICE_CIDR" ] || args+=(--service-cluster-ip-range "$SERVICE_CIDR")
  # The ingress controller on free ports, not the machine's :80 and :443
  # (another cluster may hold them; berth up would then run without it).
  args+=(--ingress-http-port "$(free_port 18080)" --ingress-https-port "$(free_port 18443)")
  # Offline: the cluster DNS forwards names outside the cluster to nothing
  # beyond this machine.
  echo "nameserver 127.0.0.1" >"$work/resolv.conf"
  args+=(--resolv-conf "$work/resolv.conf")
  echo "$BERTH ${args[*]}"
  "$BERTH" "${args[@]}" >"$results/cluster.log" 2>&1 &
  cluster_pid=$!
  until_ok "berth up to report the cluster ready" 300 grep -q "berth up: use: kubectl" "$results/cluster.log"
  grep '^berth up:' "$results/cluster.log"
  kubeconfig=$work/data/admin.kubeconfig
  ;;
testbed)
  say "starting the cluster: integration/testbed (${TESTBED_NODES:-3} nodes, 2 server replicas, a 3-member etcd)"
  (cd "$repo" && go build -o "$work/berth-testbed" ./integration/testbed/cmd/berth-testbed)
  bed_args=(-nodes "${TESTBED_NODES:-3}" -prefix "${TESTBED_PREFIX:-bmn}")
  [ -z "${TESTBED_CLUSTER_CIDR:-}" ] || bed_args+=(-cluster-cidr "$TESTBED_CLUSTER_CIDR")
  [ -z "${TESTBED_UNDERLAY:-}" ] || bed_args+=(-underlay "$TESTBED_UNDERLAY")
  [ -z "$SERVICE_CIDR" ] || bed_args+=(-service-cluster-ip-range "$SERVICE_CIDR")
  BERTH_BIN=$BERTH "$work/berth-testbed" "${bed_args[@]}" \
    -registries "$work/registry/registries.yaml" -kubeconfig "$work/data/admin.kubeconfig" -ready "$work/data/ready" \
    >"$results/cluster.log" 2>&1 &
  cluster_pid=$!
  until_ok "the test bed's nodes to be Ready" 300 test -e "$work/data/ready"
  kubeconfig=$work/data/admin.kubeconfig
  ;;
upstream-control-plane)
  say "starting the cluster: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and berth agent"
  BERTH=$BERTH BIN=$bin WORK=$work/data POD_CIDR=$POD_CIDR BRIDGE=$BRIDGE KUBELET_PORT=$kubelet_port \
    REGISTRIES=$work/registry/registries.yaml LOGS=$results SERVICE_CIDR=$SERVICE_CIDR "$here/upstream.sh" >"$results/cluster.log" 2>&1 &
  cluster_pid=$!
  until_ok "the upstream control plane and berth agent to be ready" 300 test -e "$work/data/ready"
  kubeconfig=$work/data/admin.kubeconfig
  ;;
esac
k() { "$bin/kubectl" --kubeconfig "$kubeconfig" "$@"; }
until_ok "a node to be registered" 120 sh -c "'$bin/kubectl' --kubeconfig '$kubeconfig' get nodes -o name | grep -q ."
k wait --for=condition=Ready nodes --all --timeout=180s
k get nodes -o wide
k version || true

if [ -n "${BEFORE_E2E:-}" ]; then
  say "running BEFORE_E2E: $BEFORE_E2E"
  KUBECONFIG=$kubeconfig KUBECTL=$bin/kubectl bash -c "$BEFORE_E2E"
fi

say "running e2e.test: focus '$FOCUS', skip '$SKIP', $NODES ginkgo processes"
start=$SECONDS
ginkgo_args=(--procs="$NODES" --focus="$FOCUS" --no-color --timeout="${GINKGO_TIMEOUT:-3h}")
[ -z "$SKIP" ] || ginkgo_args+=(--skip="$SKIP")
# shellcheck disable=SC2086 # E2E_ARGS is a list of flags
e2e_args=(--kubeconfig="$kubeconfig" --provider=skeleton --kubectl-path="$bin/kubectl"
  --report-dir="$results" --dump-logs-on-failure=false
  --allowed-not-ready-nodes=0 --node-os-distro=debian ${E2E_ARGS:-})
echo "ginkgo ${ginkgo_args[*]} e2e.test -- ${e2e_args[*]}"
e2e_rc=0
(cd "$results" && "$bin/ginkgo" "${ginkgo_args[@]}" "$bin/e2e.test" -- "${e2e_args[@]}") >"$results/ginkgo.log" 2>&1 || e2e_rc=$?
elapsed=$((SECONDS - start))
tail -n 5 "$results/ginkgo.log"
echo "e2e.test ran for $((elapsed / 60)) min $((elapsed % 60)) s (ginkgo exit status $e2e_rc)"

say "stopping the cluster"
pod_netns
rc=0
stop "$cluster_pid" || rc=$?
cluster_pid=
[ "$rc" -eq 0 ] || echo "conformance: the cluster exited with status $rc" >&2
stop "$registry_pid" || true
registry_pid=
leftovers || die "the run left state behind (above)"
echo "nothing left behind: no bridge $BRIDGE, no pod network namespace ($(cat "$work/netns.ours" 2>/dev/null | wc -l) at the stop), no mount under $work"

say "results ($TARGET, focus '$FOCUS', skip '$SKIP', $((elapsed / 60)) min $((elapsed % 60)) s)"
junit=$results/junit_01.xml
[ -s "$junit" ] || die "no JUnit report at $junit (see $results/ginkgo.log)"
sum_rc=0
"$bin/junitsummary" -focus "$FOCUS" -skip "$SKIP" -failures "$results/failures.txt" "$junit" | tee "$results/summary.txt" || sum_rc=${PIPESTATUS[0]}
[ "$sum_rc" -le 1 ] || die "could not read $junit"
exit "$sum_rc"
exit
}
