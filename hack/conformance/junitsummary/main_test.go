package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A report in the shape ginkgo v2 writes for e2e.test: the focus' skipped
// specs are dropped, runtime skips kept, failures listed with their first line.
const sample = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="5" disabled="0" errors="0" failures="2" time="10">
  <testsuite name="Kubernetes e2e suite" package="/" tests="5">
    <testcase name="[It] [sig-node] Pods should run [Conformance]" classname="Kubernetes e2e suite" status="passed" time="1"></testcase>
    <testcase name="[sig-node] Env should read envFrom [Conformance]" classname="Kubernetes e2e suite" status="failed" time="2">
      <failure message="Expected&#xA;    &lt;string&gt;: nope&#xA;to contain" type="failed">[FAILED] Expected ...</failure>
    </testcase>
    <testcase name="[sig-storage] EmptyDir should work [Conformance]" classname="Kubernetes e2e suite" status="skipped" time="0">
      <skipped message="skipped - no tmpfs"></skipped>
    </testcase>
    <testcase name="[sig-storage] CSI not conformance" classname="Kubernetes e2e suite" status="skipped" time="0">
      <skipped message="skipped"></skipped>
    </testcase>
    <testcase name="[ReportAfterSuite] Kubernetes e2e JUnit report" classname="Kubernetes e2e suite" status="passed" time="0"></testcase>
    <testcase name="[SynchronizedBeforeSuite]" classname="Kubernetes e2e suite" status="failed" time="0">
      <failure message="Failed to get kubernetes service ClusterIP" type="failed"></failure>
    </testcase>
  </testsuite>
</testsuites>`

func TestSummary(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "junit_01.xml")
	if err := os.WriteFile(path, []byte(sample), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	failures := filepath.Join(dir, "failures.txt")
	code, err := run(path, `\[Conformance\]|BeforeSuite`, `\[Serial\]`, failures, &out)
	if err != nil {
		t.Fatal(err)
	}
	if code != 1 {
		t.Errorf("exit code = %d, want 1 (a spec failed)", code)
	}
	got := out.String()
	for _, want := range []string{
		"[sig-node]      2       1       1        0",
		"[sig-storage]      1       0       0        1",
		"total      4       1       2        1",
		"[sig-node] Env should read envFrom [Conformance] [failed]\n    Expected\n",
		"[SynchronizedBeforeSuite] [failed]\n    Failed to get kubernetes service ClusterIP",
	} {
		if !strings.Contains(strings.Join(strings.Fields(got), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "ReportAfterSuite") {
		t.Errorf("a passed suite node is counted:\n%s", got)
	}
	if strings.Contains(got, "CSI not conformance") {
		t.Errorf("a spec outside the focus is counted:\n%s", got)
	}
	f, err := os.ReadFile(failures)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(f), "[failed]"); n != 2 {
		t.Errorf("failures file has %d failures, want 2:\n%s", n, f)
	}
}
