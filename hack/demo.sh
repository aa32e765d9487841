#!/usr/bin/env bash
# `make demo`: a single-node berth cluster on this machine, from nothing to
# nothing, with no network and no questions asked. As root:
#
#   1. builds the demo images (web:v1, web:v2: busybox httpd) and serves them
#      from two registries on 127.0.0.1, one of them password-protected
#      (hack/demoregistry);
#   2. starts `berth up` in the background with its own data dir, containerd,
#      bridge and pod subnet, pointed at those registries by its registries
#      file;
#   3. with `berth kubectl`: applies examples/ (a Deployment of 3 web
#      replicas; a lone pod pulling with an image pull secret), waits for
#      Ready, shows the pods and their logs, shows that a pod without the
#      secret cannot pull, fetches a page, scales to 5, rolls out web:v2,
#      deletes everything;
#   4. checks containerd has no container or sandbox left, stops berth up
#      (SIGTERM) and the registries, and removes its temporary directory.
#
# Any failing step stops the demo with a message naming it, and a non-zero
# exit. Knobs (environment): BERTH (default bin/berth), DEMO_DIR (work dir,
# default a new /tmp/berth-demo.*), DEMO_POD_CIDR (default 10.44.0.0/24),
# DEMO_BRIDGE (default berthdemo0), DEMO_KUBELET_PORT (default: the first
# free port from 10260), DEMO_TIMEOUT (each wait, default 180s), DEMO_KEEP=1
# (keep the work dir).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=lib/stop.sh
. "$repo/hack/lib/stop.sh"
BERTH=${BERTH:-$repo/bin/berth}
POD_CIDR=${DEMO_POD_CIDR:-10.44.0.0/24}
BRIDGE=${DEMO_BRIDGE:-berthdemo0}
TIMEOUT=${DEMO_TIMEOUT:-180s}
export PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH

step=starting
up_pid=
registry_pid=
work=

say() { printf '\n\033[1m==> %s\033[0m\n' "$*"; step=$*; }
die() { echo "demo: $*" >&2; exit 1; }
k() { "$BERTH" kubectl "$@"; }

# stop PID: SIGTERM, then SIGKILL after 60 s; returns the exit status.
stop() { stop_pid demo 60 "$1"; }

cleanup() {
  local rc=$?
  trap - EXIT
  if [ "$rc" -ne 0 ]; then
    echo >&2
    echo "demo: FAILED (exit $rc) at step: $step" >&2
    if [ -n "$work" ] && [ -s "$work/up.log" ]; then
      echo "demo: last lines of berth up's log ($work/up.log):" >&2
      tail -n 40 "$work/up.log" >&2 || true
    fi
  fi
  if [ -n "$up_pid" ]; then stop "$up_pid" || true; fi
  if [ -n "$registry_pid" ]; then stop "$registry_pid" || true; fi
  if [ -n "$work" ] && [ -d "$work" ]; then
    if grep -qF " $work/" /proc/self/mountinfo; then
      echo "demo: mounts are left under $work; not removing it:" >&2
      grep -F " $work/" /proc/self/mountinfo | awk '{print "  " $5}' >&2
      [ "$rc" -ne 0 ] || rc=1
    elif [ "${DEMO_KEEP:-}" = 1 ] || [ "$rc" -ne 0 ]; then
      echo "demo: work dir kept: $work" >&2
    else
      rm -rf "$work"
    fi
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# until DESCRIPTION SECONDS COMMAND...: run COMMAND every half second until it
# succeeds; fail naming DESCRIPTION after SECONDS. berth up exiting fails at once.
until_ok() {
  local what=$1 secs=$2 i
  shift 2
  for ((i = 0; i < secs * 2; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    if [ -n "$up_pid" ] && ! kill -0 "$up_pid" 2>/dev/null; then
      die "berth up exited while waiting for $what"
    fi
    sleep 0.5
  done
  die "timed out after ${secs}s waiting for $what"
}

say "checking the prerequisites"
[ "$(id -u)" -eq 0 ] || die "must run as root (berth up runs containerd and sets up the pod network)"
[ -x "$BERTH" ] || die "no berth binary at $BERTH (run: make build)"
for cmd in go containerd runc ctr iptables timeout; do
  command -v "$cmd" >/dev/null || die "$cmd is not installed (run: make deps)"
done
[ -e /bin/busybox ] || die "/bin/busybox (busybox-static) is missing (run: make deps)"
if ip link show "$BRIDGE" >/dev/null 2>&1; then
  die "bridge $BRIDGE exists already: is another demo running? Set DEMO_BRIDGE and DEMO_POD_CIDR to run beside it"
fi
if [ -n "${DEMO_KUBELET_PORT:-}" ]; then
  kubelet_port=$DEMO_KUBELET_PORT
else
  kubelet_port=
  for ((p = 10260; p < 10400; p++)); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then kubelet_port=$p; break; fi
  done
  [ -n "$kubelet_port" ] || die "no free port in 10260-10399 for the agent's API"
fi

work=${DEMO_DIR:-$(mktemp -d /tmp/berth-demo.XXXXXX)}
mkdir -p "$work/registry" "$work/data"
data_dir=$work/data
export BERTH_DATA_DIR=$data_dir # berth kubectl's default kubeconfig: this cluster's admin.kubeconfig
unset KUBECONFIG
echo "work dir $work; pod network $POD_CIDR on bridge $BRIDGE; agent API on :$kubelet_port"

say "building the demo images and serving them from registries on 127.0.0.1"
(cd "$repo" && go build -o "$work/demoregistry" ./hack/demoregistry)
"$work/demoregistry" -dir "$work/registry" >"$work/registry.log" 2>&1 &
registry_pid=$!
for ((i = 0; i < 600; i++)); do
  [ -e "$work/registry/ready" ] && break
  kill -0 "$registry_pid" 2>/dev/null || { cat "$work/registry.log" >&2; die "demoregistry exited"; }
  sleep 0.1
done
[ -e "$work/registry/ready" ] || die "demoregistry did not get ready within 60 s"
cat "$work/registry.log"
echo "registries file for berth up:"
sed 's/^/  /' "$work/registry/registries.yaml"

say "starting the cluster: berth up"
up_args=(up --data-dir "$data_dir" --listen 127.0.0.1:0 --pod-cidr "$POD_CIDR" --cni-bridge "$BRIDGE"
  --kubelet-port "$kubelet_port" --read-only-port 0 --registries "$work/registry/registries.yaml")
[ -z "${DEMO_PAUSE:-}" ] || up_args+=(--pause-binary "$DEMO_PAUSE")
echo "$BERTH ${up_args[*]}"
"$BERTH" "${up_args[@]}" >"$work/up.log" 2>&1 &
up_pid=$!
until_ok "berth up to report the cluster ready" 180 grep -q "berth up: use: kubectl" "$work/up.log"
grep '^berth up:' "$work/up.log"
k get nodes -o wide

say "applying examples/ (the pull secret first)"
k create secret docker-registry demo-registry --from-file=.dockerconfigjson="$work/registry/dockerconfig.json"
k apply -f "$repo/examples/"

say "waiting for the pods to be Ready"
k rollout status deployment/web --timeout="$TIMEOUT"
k wait --for=condition=Ready pod/private-web --timeout="$TIMEOUT"
k get pods -o wide

say "their logs, and a page from one of them"
for pod in $(k get pods -l app=web -o name); do
  echo "--- $pod"
  k logs "$pod"
done
echo "--- pod/private-web"
k logs private-web

# http_get HOST PORT PATH: the body of an HTTP/1.0 GET, with bash's own
# /dev/tcp (nothing to install); fails unless the status is 200.
http_get() {
  timeout 10 bash -c '
    exec 3<>"/dev/tcp/$1/$2" || exit 1
    printf "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n" "$3" "$1" >&3
    IFS= read -r status <&3
    case $status in "HTTP/1."?" 200"*) ;; *) echo "status: $status" >&2; exit 1 ;; esac
    while IFS= read -r line <&3 && [ "${line%$'"'"'\r'"'"'}" != "" ]; do :; done
    cat <&3' http_get "$1" "$2" "$3"
}

# fetch_page IMAGE_TAG: the page of a web pod running that tag, checked to name it.
fetch_page() {
  local tag=$1 ip page
  ip=$(k get pods -l app=web -o jsonpath='{range .items[*]}{.spec.containers[0].image} {.status.podIP}{"\n"}{end}' |
    awk -v tag=":$tag" 'substr($1, length($1) - length(tag) + 1) == tag && $2 != "" {print $2; exit}')
  [ -n "$ip" ] || die "no web pod running web:$tag has an IP"
  page=$(http_get "$ip" 8080 /) || die "GET http://$ip:8080/ failed"
  echo "GET http://$ip:8080/ -> $page"
  case $page in *"web $tag"*) ;; *) die "the page of a web:$tag pod does not say \"web $tag\"" ;; esac
}
fetch_page v1

say "a pod without the pull secret: the private registry refuses it"
# (Always: the node has the image already, from private-web.)
k run no-secret --image=private.berth.example/berth/web:v1 --image-pull-policy=Always --restart=Never
pull_refused() {
  local reason
  reason=$(k get pod no-secret -o jsonpath='{.status.containerStatuses[0].state.waiting.reason}')
  [ "$reason" = ErrImagePull ] || [ "$reason" = ImagePullBackOff ]
}
until_ok "pod no-secret to fail its image pull" 60 pull_refused
k get pod no-secret
echo "its message: $(k get pod no-secret -o jsonpath='{.status.containerStatuses[0].state.waiting.message}')"
k delete pod no-secret --wait=true

say "scaling web to 5 replicas"
k scale deployment/web --replicas=5
k rollout status deployment/web --timeout="$TIMEOUT"
ready=$(k get deployment web -o jsonpath='{.status.readyReplicas}')
[ "$ready" = 5 ] || die "deployment web has $ready ready replicas, want 5"
k get pods -l app=web -o wide

say "rolling out web:v2"
k set image deployment/web web=registry.berth.example/berth/web:v2
k rollout status deployment/web --timeout="$TIMEOUT"
k get deployment web -o wide
images=$(k get deployment web -o jsonpath='{.spec.template.spec.containers[0].image}')
[ "$images" = registry.berth.example/berth/web:v2 ] || die "deployment web's image is $images after the rollout"
k get replicasets -o wide
fetch_page v2

say "deleting everything"
k delete -f "$repo/examples/" --wait=true --timeout="$TIMEOUT"
k delete secret demo-registry
no_pods() { [ -z "$(k get pods -o name)" ]; }
until_ok "every pod to be gone" 120 no_pods
k get pods,replicasets,deployments

say "checking containerd has no container or sandbox left"
sock=$data_dir/containerd/containerd.sock
containerd_empty() {
  [ -z "$(ctr --address "$sock" -n k8s.io containers ls -q)" ] &&
    [ -z "$(ctr --address "$sock" -n k8s.io tasks ls -q)" ]
}
until_ok "containerd to have no container (sandboxes included) left" 120 containerd_empty
echo "containerd (k8s.io namespace): no containers, no tasks"

say "stopping the cluster"
rc=0
stop "$up_pid" || rc=$?
up_pid=
grep -E '^berth up: stopped' "$work/up.log" || die "berth up did not report a clean stop"
[ "$rc" -eq 0 ] || die "berth up exited with status $rc"
if ip link show "$BRIDGE" >/dev/null 2>&1; then die "the pod bridge $BRIDGE is still there"; fi
stop "$registry_pid" || die "demoregistry exited with an error"
registry_pid=

say "demo complete"
