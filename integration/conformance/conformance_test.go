// Package conformance runs a fast subset of upstream's Conformance suite
// (e2e.test, built by hack/conformance/build.sh) against `berth up` through
// `make conformance`'s own runner: the specs of the kubelet and apiserver
// behaviours berth once lacked, so that none of them regresses. The whole
// suite is `make conformance`.
package conformance_test

import (
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"berth/integration/harness"
	"berth/internal/prereq"
)

// subset are the specs run, by their full text (as the JUnit report names
// them after "[It] "): one or more per behaviour the suite first found
// missing.
var subset = []string{
	// env from ConfigMaps and Secrets
	"[sig-node] ConfigMap should be consumable via environment variable [NodeConformance] [Conformance]",
	"[sig-node] ConfigMap should be consumable via the environment [NodeConformance] [Conformance]",
	"[sig-node] Secrets should be consumable from pods in env vars [NodeConformance] [Conformance]",
	// kubelet-managed /etc/hosts
	"[sig-node] KubeletManagedEtcHosts should test kubelet managed /etc/hosts file [NodeConformance] [Conformance]",
	"[sig-node] Kubelet when scheduling an agnhost Pod with hostAliases should write entries to /etc/hosts [NodeConformance] [Conformance]",
	// node allocatable as the limits of a container without limits
	"[sig-node] Downward API should provide default limits.cpu/memory from node allocatable [NodeConformance] [Conformance]",
	"[sig-storage] Downward API volume should provide node allocatable (cpu) as default cpu limit if the limit is not set [NodeConformance] [Conformance]",
	// activeDeadlineSeconds
	"[sig-node] Pods should allow activeDeadlineSeconds to be updated [NodeConformance] [Conformance]",
	// service environment variables (and the default/kubernetes Service)
	"[sig-node] Pods should contain environment variables for services [NodeConformance] [Conformance]",
	// ephemeral containers
	"[sig-node] Ephemeral Containers [NodeConformance] will start an ephemeral container in an existing pod [Conformance]",
	// pods/log over WebSocket
	"[sig-node] Pods should support retrieving logs from the container over websockets [NodeConformance] [Conformance]",
	// the node SIG's APIs
	"[sig-node] PodTemplates should run the lifecycle of PodTemplates [Conformance]",
	"[sig-node] RuntimeClass should reject a Pod requesting a non-existent RuntimeClass [NodeConformance] [Conformance]",
	"[sig-node] RuntimeClass should schedule a Pod requesting a RuntimeClass and initialize its Overhead [NodeConformance] [Conformance]",
	"[sig-storage] VolumeAttachment Conformance should run through the lifecycle of a VolumeAttachment [Conformance]",
	"[sig-storage] CSIStorageCapacity should support CSIStorageCapacities API operations [Conformance]",
	// sysctls
	"[sig-node] Sysctls [LinuxOnly] [NodeConformance] should reject invalid sysctls [MinimumKubeletVersion:1.21] [Conformance]",
}

// testcase is one <testcase> of a ginkgo JUnit report.
type testcase struct {
	Name    string `xml:"name,attr"`
	Status  string `xml:"status,attr"`
	Failure *struct {
		Message string `xml:"message,attr"`
	} `xml:"failure"`
	Error *struct {
		Message string `xml:"message,attr"`
	} `xml:"error"`
}

type junit struct {
	Suites []struct {
		Cases []testcase `xml:"testcase"`
	} `xml:"testsuite"`
}

// TestConformanceSubset runs the subset with hack/conformance/run.sh on a
// pod subnet and bridge of its own, and checks every spec of it ran and
// passed.
func TestConformanceSubset(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts berth up and runs upstream's e2e.test")
	}
	cache := os.Getenv("CONFORMANCE_CACHE")
	if cache == "" {
		cache = "/var/cache/berth/conformance"
	}
	for _, b := range []string{"e2e.test", "ginkgo", "agnhost", "nnp"} {
		if _, err := os.Stat(filepath.Join(cache, "bin", b)); err != nil {
			prereq.Missing(t, "%s not built in %s/bin (run: hack/conformance/build.sh)", b, cache)
		}
	}
	berth := harness.Binary(t)
	// 10.224.N.0/24: apart from nodeenv's 10.222 and integration/up's 10.223.
	bridge, cidr := harness.ClaimSubnet(t, 224, "berthconf")
	results := t.TempDir()

	quoted := make([]string, len(subset))
	for i, s := range subset {
		quoted[i] = regexp.QuoteMeta(s)
	}
	cmd := exec.Command("../../hack/conformance/run.sh")
	cmd.Env = append(os.Environ(),
		"BERTH="+berth,
		"CONFORMANCE_CACHE="+cache,
		"FOCUS="+strings.Join(quoted, "|"),
		"SKIP=",
		"NODES=2",
		"RESULTS_DIR="+results,
		"CONFORMANCE_BRIDGE="+bridge,
		"CONFORMANCE_POD_CIDR="+cidr,
		"CONFORMANCE_SERVICE_CIDR="+strings.Replace(cidr, "10.224.", "10.228.", 1),
	)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("run.sh (%s):\n%s", time.Since(start).Round(time.Second), tail(string(out), 60))
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 2 {
		t.Fatalf("the conformance harness itself failed (exit 2)")
	}

	raw, rerr := os.ReadFile(filepath.Join(results, "junit_01.xml"))
	if rerr != nil {
		t.Fatalf("no JUnit report: %v (run.sh: %v)", rerr, err)
	}
	var report junit
	if err := xml.Unmarshal(raw, &report); err != nil {
		t.Fatalf("JUnit report: %v", err)
	}
	byName := map[string]testcase{}
	for _, s := range report.Suites {
		for _, c := range s.Cases {
			byName[c.Name] = c
		}
	}
	for _, spec := range subset {
		t.Run(spec, func(t *testing.T) {
			c, ok := byName["[It] "+spec]
			switch {
			case !ok:
				t.Fatalf("the spec did not run (renamed upstream, or not selected by the focus)")
			case c.Failure != nil:
				t.Fatalf("failed: %s", c.Failure.Message)
			case c.Error != nil:
				t.Fatalf("errored: %s", c.Error.Message)
			case c.Status != "passed":
				t.Fatalf("status %q, want passed", c.Status)
			}
		})
	}
	if err != nil {
		t.Errorf("run.sh: %v", err)
	}
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
