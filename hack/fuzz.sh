#!/usr/bin/env bash
# Runs every native Go fuzz target (func FuzzXxx in a _test.go file) of the
# module for FUZZTIME each, one after the other. Without -fuzz, `go test`
# already runs each target's seed corpus (f.Add and testdata/fuzz/FuzzXxx);
# this is the long run. A crasher is written by `go test` to the package's
# testdata/fuzz/FuzzXxx/ and fails the run: commit it as a regression case.
#
#   FUZZTIME=2m      how long each target runs (a go test -fuzztime value)
#   FUZZ_PARALLEL=   workers per target (go test -parallel; default GOMAXPROCS)
#   FUZZ_PKGS=./...  the packages searched for targets
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZTIME=${FUZZTIME:-2m}
FUZZ_PKGS=${FUZZ_PKGS:-./...}
parallel=()
[[ -n ${FUZZ_PARALLEL:-} ]] && parallel=(-parallel "$FUZZ_PARALLEL")

# Packages with a fuzz target: only those are listed (go test -list builds
# each test binary, so the candidates are found with grep first).
mapfile -t pkgs < <(grep -rl --include='*_test.go' '^func Fuzz[A-Z0-9_a-z]*(f \*testing.F)' . |
	xargs -r -n1 dirname | sort -u | sed 's|^\./||;s|^|./|')
[[ "$FUZZ_PKGS" == ./... ]] || mapfile -t pkgs < <(go list -f '{{.Dir}}' $FUZZ_PKGS | sed "s|^$PWD|.|" | sort -u |
	comm -12 - <(printf '%s\n' "${pkgs[@]}"))

failed=()
total=0
for pkg in "${pkgs[@]}"; do
	for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz'); do
		total=$((total + 1))
		echo "=== $pkg $target ($FUZZTIME)"
		if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "${parallel[@]}" "$pkg"; then
			failed+=("$pkg $target")
		fi
	done
done
echo "fuzz: $total targets, ${#failed[@]} failed"
for f in "${failed[@]}"; do echo "FAIL $f (crasher in $f's testdata/fuzz)"; done
[[ ${#failed[@]} -eq 0 ]]
