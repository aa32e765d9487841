#!/usr/bin/env bash
# Builds upstream kubectl of every release under hack/kubectl/1.XX (a tiny
# module each, requiring k8s.io/kubectl v0.XX.Y; its main is main/main.go
# unless the release has its own) from the Go module proxy
# into $BERTH_KUBECTL_DIR/v1.XX.Y/kubectl (default /var/cache/berth/kubectl),
# version-stamped as upstream stamps it. A release already there is not
# rebuilt, so a warm run builds nothing. The tests find them through
# internal/prereq.Kubectl.
#
#   hack/kubectl/build.sh            every release
#   hack/kubectl/build.sh 1.27 1.33  only these
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dest="${BERTH_KUBECTL_DIR:-/var/cache/berth/kubectl}"
export PATH="/usr/local/go/bin:$PATH" CGO_ENABLED=0

minors=("$@")
if [ ${#minors[@]} -eq 0 ]; then
	for d in "$here"/1.*/; do minors+=("$(basename "$d")"); done
fi

for minor in "${minors[@]}"; do
	mod="$here/$minor"
	[ -f "$mod/go.mod" ] || { echo "build.sh: no module $mod" >&2; exit 1; }
	# k8s.io/kubectl v0.XX.Y is Kubernetes v1.XX.Y.
	v="$(awk '$1 == "k8s.io/kubectl" { print $2 }' "$mod/go.mod")"
	case "$v" in v0."${minor#1.}".*) ;; *) echo "build.sh: $mod/go.mod requires k8s.io/kubectl '$v', want v0.${minor#1.}.*" >&2; exit 1 ;; esac
	version="v1.${v#v0.}"
	out="$dest/$version/kubectl"
	[ -x "$out" ] && continue
	mkdir -p "$dest/$version" || { echo "build.sh: cannot create $dest/$version; set BERTH_KUBECTL_DIR to a writable directory" >&2; exit 1; }
	ldflags="-s -w"
	for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldflags+=" -X $p.gitVersion=$version -X $p.gitMajor=1 -X $p.gitMinor=${minor#1.} -X $p.gitTreeState=clean"
	done
	echo "building kubectl $version into $out"
	start=$SECONDS
	# Built beside its destination and renamed: an interrupted build leaves
	# no half-written kubectl.
	tmp="$(mktemp -d "$dest/$version/.build.XXXXXX")"
	trap 'rm -rf "$tmp"' EXIT
	# A release's module holds its requirements; its main is its own, or
	# the one the releases with upstream's same main share.
	src="$here/main"
	[ -f "$mod/main.go" ] && src="$mod"
	(cd "$src" && go build -modfile "$mod/go.mod" -trimpath -buildvcs=false -ldflags "$ldflags" -o "$tmp/kubectl" .)
	mv "$tmp/kubectl" "$out"
	rm -rf "$tmp"
	trap - EXIT
	echo "built kubectl $version in $((SECONDS - start))s"
done
