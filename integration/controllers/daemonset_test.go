package controllers

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"berth/controlplane/controller/daemonset"
	"berth/integration/harness"
)

// dsNode registers a Ready node carrying the test's label, kept alive by a
// heartbeat until the test ends.
func dsNode(t *testing.T, name, label string, taints ...corev1.Taint) {
	t.Helper()
	createNode(t, name, true)
	h := startHeartbeat(t, name)
	t.Cleanup(h.Stop)
	patch := `{"metadata":{"labels":{"berth-test":"` + label + `"}}}`
	if len(taints) > 0 {
		patch = `{"metadata":{"labels":{"berth-test":"` + label + `"}},"spec":{"taints":[{"key":"` + taints[0].Key + `","effect":"` + string(taints[0].Effect) + `"}]}}`
	}
	if _, err := env.client.CoreV1().Nodes().Patch(context.Background(), name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// daemonPodsByNode maps each node to the live pods of the daemon set with uid.
func daemonPodsByNode(t *testing.T, ns string, uid types.UID) map[string][]corev1.Pod {
	out := map[string][]corev1.Pod{}
	for _, p := range activePods(t, ns) {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == uid {
			out[daemonset.TargetNode(&p)] = append(out[daemonset.TargetNode(&p)], p)
		}
	}
	return out
}

const dsManifest = `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  selector:
    matchLabels: {app: agent}
  template:
    metadata:
      labels: {app: agent}
    spec:
      nodeSelector: {berth-test: LABEL}
      containers:
      - {name: c, image: "img:v1"}
`

// TestDaemonSetThroughKubectl runs a daemon set over fake nodes as a user
// would: one pod per eligible node (a tainted node skipped, a node added
// later covered), pinned by node affinity; kubectl get, rollout status,
// a rolling update, rollout history and undo.
func TestDaemonSetThroughKubectl(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	fakeAgent(t, ns)
	label := ns
	dsNode(t, ns+"-a", label)
	dsNode(t, ns+"-b", label)
	dsNode(t, ns+"-tainted", label, corev1.Taint{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule})
	manifest := filepath.Join(t.TempDir(), "ds.yaml")
	if err := os.WriteFile(manifest, []byte(strings.ReplaceAll(dsManifest, "LABEL", label)), 0o600); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "-n", ns, "apply", "-f", manifest)
	ds, err := env.client.AppsV1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantNodes := func(nodes ...string) func() (bool, error) {
		return func() (bool, error) {
			by := daemonPodsByNode(t, ns, ds.UID)
			got := make([]string, 0, len(by))
			for n, pods := range by {
				if len(pods) != 1 {
					return false, nil
				}
				got = append(got, n)
			}
			slices.Sort(got)
			return slices.Equal(got, nodes), nil
		}
	}
	harness.Eventually(t, "one pod on each of the two untainted nodes", wantNodes(ns+"-a", ns+"-b"))
	for _, pods := range daemonPodsByNode(t, ns, ds.UID) {
		p := pods[0]
		if p.Labels[daemonset.HashLabel] == "" || p.Spec.Affinity == nil {
			t.Fatalf("pod %s: labels %v affinity %v", p.Name, p.Labels, p.Spec.Affinity)
		}
	}
	out := kubectl(t, "-n", ns, "rollout", "status", "daemonset/agent", "--timeout=60s")
	if !strings.Contains(out, "successfully rolled out") {
		t.Fatalf("rollout status: %s", out)
	}
	get := kubectl(t, "-n", ns, "get", "ds", "agent")
	lines := strings.Split(strings.TrimSpace(get), "\n")
	if strings.Join(strings.Fields(lines[0]), " ") != "NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE" ||
		!strings.HasPrefix(strings.Join(strings.Fields(lines[1]), " "), "agent 2 2 2 2 2 berth-test="+label) {
		t.Fatalf("kubectl get ds:\n%s", get)
	}

	dsNode(t, ns+"-c", label)
	harness.Eventually(t, "a pod on the node added later", wantNodes(ns+"-a", ns+"-b", ns+"-c"))

	// A rolling update (maxUnavailable 1) replaces every pod.
	before := map[types.UID]bool{}
	for _, pods := range daemonPodsByNode(t, ns, ds.UID) {
		before[pods[0].UID] = true
	}
	kubectl(t, "-n", ns, "annotate", "daemonset/agent", "kubernetes.io/change-cause=upgrade to v2")
	kubectl(t, "-n", ns, "set", "image", "daemonset/agent", "c=img:v2")
	kubectl(t, "-n", ns, "rollout", "status", "daemonset/agent", "--timeout=60s")
	harness.Eventually(t, "every pod replaced by one of img:v2", func() (bool, error) {
		by := daemonPodsByNode(t, ns, ds.UID)
		if len(by) != 3 {
			return false, nil
		}
		for _, pods := range by {
			if len(pods) != 1 || before[pods[0].UID] || pods[0].Spec.Containers[0].Image != "img:v2" {
				return false, nil
			}
		}
		return true, nil
	})
	revs, err := env.client.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=agent"})
	if err != nil || len(revs.Items) != 2 {
		t.Fatalf("controller revisions %d (%v)", len(revs.Items), err)
	}
	hist := kubectl(t, "-n", ns, "rollout", "history", "daemonset/agent")
	if !strings.Contains(hist, "upgrade to v2") || !strings.Contains(hist, "1 ") || !strings.Contains(hist, "2 ") {
		t.Fatalf("rollout history:\n%s", hist)
	}
	kubectl(t, "-n", ns, "rollout", "undo", "daemonset/agent")
	kubectl(t, "-n", ns, "rollout", "status", "daemonset/agent", "--timeout=60s")
	harness.Eventually(t, "rolled back to img:v1", func() (bool, error) {
		cur, err := env.client.AppsV1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
		if err != nil || cur.Spec.Template.Spec.Containers[0].Image != "img:v1" {
			return false, err
		}
		by := daemonPodsByNode(t, ns, ds.UID)
		for _, pods := range by {
			if len(pods) != 1 || pods[0].Spec.Containers[0].Image != "img:v1" {
				return false, nil
			}
		}
		return len(by) == 3 && cur.Status.UpdatedNumberScheduled == 3, nil
	})
	revs, _ = env.client.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=agent"})
	maxRev := int64(0)
	for _, r := range revs.Items {
		maxRev = max(maxRev, r.Revision)
	}
	if len(revs.Items) != 2 || maxRev != 3 {
		t.Fatalf("after undo: %d revisions, highest %d (want 2, 3: the v1 revision renumbered)", len(revs.Items), maxRev)
	}

	// kubectl rollout restart replaces every pod again, on the same template.
	before = map[types.UID]bool{}
	for _, pods := range daemonPodsByNode(t, ns, ds.UID) {
		before[pods[0].UID] = true
	}
	kubectl(t, "-n", ns, "rollout", "restart", "daemonset/agent")
	kubectl(t, "-n", ns, "rollout", "status", "daemonset/agent", "--timeout=60s")
	harness.Eventually(t, "every pod restarted", func() (bool, error) {
		by := daemonPodsByNode(t, ns, ds.UID)
		for _, pods := range by {
			if len(pods) != 1 || before[pods[0].UID] || pods[0].Annotations["kubectl.kubernetes.io/restartedAt"] == "" {
				return false, nil
			}
		}
		return len(by) == 3, nil
	})

	// Tainting a node NoExecute evicts its daemon pod.
	if _, err := env.client.CoreV1().Nodes().Patch(ctx, ns+"-c", types.StrategicMergePatchType,
		[]byte(`{"spec":{"taints":[{"key":"dedicated","effect":"NoExecute"}]}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, "the pod leaves the NoExecute-tainted node", wantNodes(ns+"-a", ns+"-b"))
	harness.Eventually(t, "desired 2 after the taint", func() (bool, error) {
		cur, err := env.client.AppsV1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
		return err == nil && cur.Status.DesiredNumberScheduled == 2 && cur.Status.NumberMisscheduled == 0, err
	})
}
