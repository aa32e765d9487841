package eviction

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/integration/harness"
	"berth/integration/nodeenv"
	"berth/internal/prereq"
)

const memoryPods = `apiVersion: v1
kind: Pod
metadata: {name: hog, namespace: default}
spec:
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 30
  containers:
  - name: hog
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "head -c %[2]d /dev/zero > /mem/fill; sleep 3600"]
    volumeMounts: [{name: mem, mountPath: /mem}]
  volumes: [{name: mem, emptyDir: {medium: Memory}}]
---
apiVersion: v1
kind: Pod
metadata: {name: guaranteed, namespace: default}
spec:
  automountServiceAccountToken: false
  containers:
  - name: sleep
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    resources:
      requests: {cpu: 10m, memory: 32Mi}
      limits: {cpu: 10m, memory: 32Mi}
`

// The machine's memory.available as the agent observes it: MemTotal less
// the root cgroup's working set (usage less inactive file pages).
func nodeMemoryAvailable(t *testing.T) int64 {
	t.Helper()
	meminfo := readKeyed(t, "/proc/meminfo", func(v string) int64 {
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		return n << 10
	})
	var usage, inactive int64
	if b, err := os.ReadFile("/sys/fs/cgroup/memory/memory.usage_in_bytes"); err == nil {
		usage, _ = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		inactive = readKeyed(t, "/sys/fs/cgroup/memory/memory.stat", func(v string) int64 {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		})["total_inactive_file"]
	} else { // cgroup v2: the kernel's figures
		usage, inactive = meminfo["MemTotal"]-meminfo["MemFree"], meminfo["Inactive(file)"]
	}
	return meminfo["MemTotal"] - (usage - inactive)
}

func readKeyed(t *testing.T, path string, parse func(string) int64) map[string]int64 {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			k, v, ok = strings.Cut(sc.Text(), " ")
		}
		if ok {
			out[strings.TrimSpace(k)] = parse(v)
		}
	}
	return out
}

// Under a memory.available threshold a BestEffort pod filling a memory
// emptyDir is evicted — Failed, reason Evicted, the kubelet's memory
// message — while a Guaranteed pod within its requests keeps running. The
// threshold sits 1 GiB under what the shared machine has available when
// the test starts and the hog writes 2 GiB, so the machine's own swings do
// not decide; whatever the noise, the hog ranks first (BestEffort, usage
// over its zero request) and the Guaranteed pod last.
func TestMemoryPressureEvictsTheBestEffortHog(t *testing.T) {
	const margin, fill = 1 << 30, 2 << 30
	env := nodeenv.Current()
	available := nodeMemoryAvailable(t)
	if available < margin+fill {
		prereq.Missing(t, "the machine has %d MiB available; the test needs %d", available>>20, (margin+fill)>>20)
	}
	c := startNode(t, "memory-eviction-node", t.TempDir(), fmt.Sprintf("memory.available<%dMi", (available-margin)>>20))
	ctx := context.Background()
	c.MustKubectl(t, fmt.Sprintf(memoryPods, env.BusyboxImage, fill), "apply", "-f", "-")
	t.Cleanup(func() {
		c.MustKubectl(t, "", "delete", "pod", "hog", "guaranteed", "--grace-period=1", "--wait=true", "--timeout=90s")
	})

	var hog *v1.Pod
	harness.WaitFor(t, 3*time.Minute, "the hog to be evicted", func() (bool, string) {
		p, err := c.Client.CoreV1().Pods("default").Get(ctx, "hog", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		hog = p
		return p.Status.Phase == v1.PodFailed, fmt.Sprintf("%s %s %s", p.Status.Phase, p.Status.Reason, p.Status.Message)
	})
	const prefix = "The node was low on resource: memory. Threshold quantity: "
	if hog.Status.Reason != "Evicted" || !strings.HasPrefix(hog.Status.Message, prefix) || !strings.Contains(hog.Status.Message, "Container hog was using") {
		t.Errorf("hog: reason %q, message %q; want Evicted, %q… Container hog was using …", hog.Status.Reason, hog.Status.Message, prefix)
	}
	g, err := c.Client.CoreV1().Pods("default").Get(ctx, "guaranteed", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if g.Status.Phase != v1.PodRunning || g.Status.QOSClass != v1.PodQOSGuaranteed {
		t.Errorf("guaranteed: %s (%s) %s %s, want Running", g.Status.Phase, g.Status.QOSClass, g.Status.Reason, g.Status.Message)
	}
}
