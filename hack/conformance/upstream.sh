#!/usr/bin/env bash
# The cluster of `make conformance TARGET=upstream-control-plane`: upstream's
# etcd, kube-apiserver, kube-controller-manager and kube-scheduler (built by
# build.sh) with `berth agent` as the only node, on berth's containerd
# (hack/e2enode). Run by run.sh in the background; it writes
# $WORK/admin.kubeconfig, then $WORK/ready once every component started, and
# on SIGTERM stops them in reverse order (the agent, then the runtime, which
# removes the pods, then the control plane) and exits.
#
# Environment (all required): BERTH, BIN (the built upstream binaries),
# WORK (an empty directory), POD_CIDR, BRIDGE, KUBELET_PORT, REGISTRIES.
# SERVICE_CIDR defaults to 10.96.0.0/16; LOGS (each component's log) to WORK.
#
# Credentials, as kubeadm lays them out: a CA; the apiserver's serving
# certificate; admin (system:masters) for the controller manager, the
# scheduler and the tests; a node credential (system:node:NAME in
# system:nodes, so the Node authorizer and NodeRestriction apply to the
# agent as to a kubelet); the apiserver's client certificate for the
# agent's API (logs, exec) and the agent's serving certificate; the
# service-account signing key.
# The whole script is one { … } block: bash parses it before running it, so
# editing this file cannot upset a run in progress.
{
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
: "${BERTH:?}" "${BIN:?}" "${WORK:?}" "${POD_CIDR:?}" "${BRIDGE:?}" "${KUBELET_PORT:?}" "${REGISTRIES:?}"
SERVICE_CIDR=${SERVICE_CIDR:-10.96.0.0/16}
LOGS=${LOGS:-$WORK}
export PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH

pids=() # started components, in start order
names=()

stop_all() {
  local i pid j
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    pid=${pids[$i]}
    echo "upstream: stopping ${names[$i]} (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for ((j = 0; j < 1200; j++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      echo "upstream: ${names[$i]} did not stop within 120 s; killing it" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
  done
  pids=()
}
trap 'stop_all; exit 0' TERM INT
trap 'stop_all' EXIT

# start NAME COMMAND...: run COMMAND in the background, its output in
# $LOGS/NAME.log.
start() {
  local name=$1
  shift
  echo "upstream: starting $name: $*"
  "$@" >"$LOGS/$name.log" 2>&1 &
  pids+=($!)
  names+=("$name")
}

# wait_for NAME SECONDS COMMAND...: until COMMAND succeeds; fails when the
# last started component exits.
wait_for() {
  local what=$1 secs=$2 i
  shift 2
  for ((i = 0; i < secs * 2; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    if ! kill -0 "${pids[-1]}" 2>/dev/null; then
      echo "upstream: ${names[-1]} exited while waiting for $what; its log:" >&2
      tail -n 30 "$LOGS/${names[-1]}.log" >&2
      exit 1
    fi
    sleep 0.5
  done
  echo "upstream: timed out waiting for $what" >&2
  exit 1
}

free_port() {
  local p
  for ((p = $1; p < $1 + 200; p++)); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && ! grep -qx "$p" "$WORK/ports" 2>/dev/null; then
      echo "$p" >>"$WORK/ports"
      echo "$p"
      return
    fi
  done
  echo "upstream: no free port from $1" >&2
  exit 1
}

node_name=$(hostname)
node_ip=$(ip -4 -o addr show scope global | awk '{split($4, a, "/"); print a[1]; exit}')
[ -n "$node_ip" ] || {
  echo "upstream: this machine has no global IPv4 address for the node" >&2
  exit 1
}
svc_ip=$(echo "$SERVICE_CIDR" | awk -F'[./]' '{print $1 "." $2 "." $3 "." $4 + 1}')
pki=$WORK/pki
mkdir -p "$pki"

# cert NAME SUBJECT EXTENSIONS: an EC key and a certificate signed by the CA.
cert() {
  local name=$1 subject=$2 ext=$3
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$pki/$name.key" 2>/dev/null
  openssl req -new -key "$pki/$name.key" -subj "$subject" -out "$pki/$name.csr"
  printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n%s\n' "$ext" >"$pki/$name.ext"
  openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 2 -extfile "$pki/$name.ext" -out "$pki/$name.crt" 2>/dev/null
}
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$pki/ca.key" 2>/dev/null
openssl req -x509 -new -key "$pki/ca.key" -subj "/CN=berth-conformance-ca" -days 2 -out "$pki/ca.crt" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"
cert apiserver "/CN=kube-apiserver" "extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,IP:$node_ip,IP:$svc_ip,DNS:localhost,DNS:$node_name,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
cert admin "/O=system:masters/CN=kubernetes-admin" "extendedKeyUsage=clientAuth"
cert node "/O=system:nodes/CN=system:node:$node_name" "extendedKeyUsage=clientAuth"
cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "extendedKeyUsage=clientAuth"
cert kubelet "/CN=$node_name" "extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,IP:$node_ip,DNS:$node_name,DNS:localhost"
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$pki/sa.key" 2>/dev/null
openssl pkey -in "$pki/sa.key" -pubout -out "$pki/sa.pub"

etcd_port=$(free_port 23790)
etcd_peer_port=$(free_port 23890)
api_port=$(free_port 16443)
kcm_port=$(free_port 20257)
sched_port=$(free_port 20259)

# kubeconfig FILE USER: USER's certificate against the apiserver.
kubeconfig() {
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: conformance
  cluster:
    server: https://127.0.0.1:$api_port
    certificate-authority: $pki/ca.crt
users:
- name: $2
  user:
    client-certificate: $pki/$2.crt
    client-key: $pki/$2.key
contexts:
- name: conformance
  context: {cluster: conformance, user: $2}
current-context: conformance
EOF
}
kubeconfig "$WORK/admin.kubeconfig" admin
kubeconfig "$WORK/node.kubeconfig" node

start etcd "$BIN/etcd" --name default --data-dir "$WORK/etcd" \
  --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
  --listen-peer-urls "http://127.0.0.1:$etcd_peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
  --initial-cluster "default=http://127.0.0.1:$etcd_peer_port" --listen-metrics-urls "" --log-level warn
wait_for etcd 60 bash -c "exec 3<>/dev/tcp/127.0.0.1/$etcd_port"

start kube-apiserver "$BIN/kube-apiserver" --etcd-servers "http://127.0.0.1:$etcd_port" \
  --bind-address 0.0.0.0 --secure-port "$api_port" --advertise-address "$node_ip" \
  --service-cluster-ip-range "$SERVICE_CIDR" --cert-dir "$WORK/apiserver" \
  --client-ca-file "$pki/ca.crt" --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
  --service-account-issuer https://kubernetes.default.svc.cluster.local \
  --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
  --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction --allow-privileged=true \
  --kubelet-client-certificate "$pki/apiserver-kubelet-client.crt" --kubelet-client-key "$pki/apiserver-kubelet-client.key" \
  --kubelet-preferred-address-types InternalIP,Hostname
wait_for kube-apiserver 120 "$BIN/kubectl" --kubeconfig "$WORK/admin.kubeconfig" get --raw /readyz
# berth's agent embeds the service proxy: its node identity needs what
# kube-proxy's has (EndpointSlices, Services, Nodes), as berth server binds.
"$BIN/kubectl" --kubeconfig "$WORK/admin.kubeconfig" create clusterrolebinding berth:node-proxier \
  --clusterrole system:node-proxier --group system:nodes >/dev/null

pod_bits=${POD_CIDR#*/}
start kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig "$WORK/admin.kubeconfig" \
  --authentication-kubeconfig "$WORK/admin.kubeconfig" --authorization-kubeconfig "$WORK/admin.kubeconfig" \
  --bind-address 127.0.0.1 --secure-port "$kcm_port" --leader-elect=false \
  --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" --use-service-account-credentials \
  --cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key" \
  --allocate-node-cidrs --cluster-cidr "$POD_CIDR" --node-cidr-mask-size "$pod_bits" \
  --service-cluster-ip-range "$SERVICE_CIDR" --controllers '*,bootstrapsigner,tokencleaner'
start kube-scheduler "$BIN/kube-scheduler" --kubeconfig "$WORK/admin.kubeconfig" \
  --authentication-kubeconfig "$WORK/admin.kubeconfig" --authorization-kubeconfig "$WORK/admin.kubeconfig" \
  --bind-address 127.0.0.1 --secure-port "$sched_port" --leader-elect=false

(cd "$repo" && go build -o "$WORK/e2enode" ./hack/e2enode)
mkdir -p "$WORK/cni/net.d"
start containerd "$WORK/e2enode" -dir "$WORK/containerd" -cni-conf-dir "$WORK/cni/net.d" \
  -registries "$REGISTRIES" -sandbox-image registry.k8s.io/pause:3.10.1 -bridge "$BRIDGE" -unmount-under "$WORK"
wait_for containerd 120 test -e "$WORK/containerd/ready"

start berth-agent "$BERTH" agent --kubeconfig "$WORK/node.kubeconfig" \
  --container-runtime-endpoint "unix://$WORK/containerd/containerd.sock" --root-dir "$WORK/agent" \
  --cni-conf-dir "$WORK/cni/net.d" --cni-bin-dir /usr/lib/cni --cni-bridge "$BRIDGE" \
  --node-name "$node_name" --node-ip "$node_ip" --read-only-port 0 --kubelet-port "$KUBELET_PORT" \
  --tls-cert-file "$pki/kubelet.crt" --tls-private-key-file "$pki/kubelet.key" --client-ca-file "$pki/ca.crt" \
  --proxy-cleanup-on-exit --eviction-hard "memory.available<100Mi" # as kind: no disk thresholds on a shared build machine
wait_for "the node to register" 120 "$BIN/kubectl" --kubeconfig "$WORK/admin.kubeconfig" get node "$node_name"
echo "upstream: etcd :$etcd_port, kube-apiserver :$api_port, node $node_name ($node_ip), pod CIDR $POD_CIDR, services $SERVICE_CIDR"
touch "$WORK/ready"
# Until SIGTERM (the trap stops everything); a component exiting ends it.
while :; do
  for i in "${!pids[@]}"; do
    if ! kill -0 "${pids[$i]}" 2>/dev/null; then
      echo "upstream: ${names[$i]} exited; its log:" >&2
      tail -n 30 "$LOGS/${names[$i]}.log" >&2
      exit 1
    fi
  done
  sleep 1
done
exit
}
