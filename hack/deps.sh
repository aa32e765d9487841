#!/usr/bin/env bash
# Installs berth's node prerequisites from Debian's packages, only those missing.
# Idempotent: a second run installs nothing. Needs root (or nothing to install).
set -euo pipefail

# package:command-or-file that proves it is installed
wanted=(
  "containerd:/usr/bin/containerd"
  "runc:/usr/sbin/runc"
  "containernetworking-plugins:/usr/lib/cni/bridge"
  "busybox-static:/bin/busybox"
  "bash-static:/bin/bash-static" # /bin/sh of the e2e test images (make conformance)
  "bind9-dnsutils:/usr/bin/dig" # dig and nslookup of the e2e test images jessie-dnsutils and agnhost (make conformance)
  "netcat-openbsd:/usr/bin/nc.openbsd" # nc of the e2e test image agnhost (make conformance)
  "iptables:/usr/sbin/iptables"
  "iproute2:/usr/sbin/ip"
  "nftables:/usr/sbin/nft" # the agent's service proxy (agent/proxy, through knftables)
  "e2fsprogs:/usr/sbin/mkfs.ext4"
  "gcc:/usr/bin/gcc" # cgo, which the race detector of `make test` needs
  "libc6-dev:/usr/include/stdlib.h"
)

missing=()
for entry in "${wanted[@]}"; do
  pkg=${entry%%:*} path=${entry#*:}
  if [ ! -e "$path" ] || ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all prerequisites present"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "deps: missing ${missing[*]} and not root: install them as root (apt-get install ${missing[*]})" >&2
  exit 1
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
# The package starts a system containerd; berth runs its own instances and does not need it.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet containerd 2>/dev/null; then
  systemctl stop containerd || true
fi
