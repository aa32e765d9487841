#!/usr/bin/env bash
# Reads `go test -v` output on stdin, passes through what matters (failures,
# package results, lines tests print on purpose, such as the containerd
# version), and ends with a "N passed, N failed, N skipped" line.
# Exits non-zero when a test or a package failed, or when no test ran.
set -uo pipefail
log=$(mktemp)
trap 'rm -f "$log"' EXIT
tee "$log" | grep -E -v '^(=== (RUN|PAUSE|CONT|NAME)|--- PASS|    --- PASS|PASS$)' || true
passed=$(grep -cE '^\s*--- PASS' "$log")
failed=$(grep -cE '^\s*--- FAIL' "$log")
skipped=$(grep -cE '^\s*--- SKIP' "$log")
pkgfail=$(grep -cE '^(FAIL\s|FAIL$|ok\s.*\[build failed\])' "$log")
echo
echo "tests: ${passed} passed, ${failed} failed, ${skipped} skipped"
if [ "$failed" -gt 0 ] || [ "$pkgfail" -gt 0 ]; then
  echo "make test: FAILED" >&2
  exit 1
fi
if [ "$passed" -eq 0 ]; then
  echo "make test: no test ran" >&2
  exit 1
fi
