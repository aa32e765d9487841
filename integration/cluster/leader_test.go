package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"berth/controlplane/controller/manager"
	"berth/controlplane/server"
	"berth/integration/harness"
	"berth/integration/testbed"
)

// leases are the Leases the in-process components campaign for.
var leases = []string{manager.DefaultLeaseName, server.SchedulerLeaseName}

// startEtcd runs a one-member etcd on loopback inside the test process and
// returns its client URL.
func startEtcd(t *testing.T) string {
	t.Helper()
	members, _, urls, err := testbed.StartEtcd(t.TempDir(), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(members[0].Close)
	return urls[0]
}

// holder is a Lease's holderIdentity ("" when absent or released).
func holder(t *testing.T, c kubernetes.Interface, name string) string {
	t.Helper()
	l, err := c.CoordinationV1().Leases("kube-system").Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && l.Spec.HolderIdentity == nil) {
		return ""
	}
	if err != nil {
		t.Fatalf("lease %s: %v", name, err)
	}
	return *l.Spec.HolderIdentity
}

// leaderStatus reads leader_election_master_status{name} from the server's
// /metrics: 1 leading, 0 not.
func leaderStatus(t *testing.T, c kubernetes.Interface, name string) string {
	t.Helper()
	body, err := c.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("/metrics: %v", err)
	}
	prefix := fmt.Sprintf("leader_election_master_status{name=%q} ", name)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			return v
		}
	}
	t.Fatalf("/metrics has no %s", prefix)
	return ""
}

// TestTwoServersOneLeader runs two `berth server` on one etcd: each Lease
// (controller manager, scheduler) has one holder, which reports itself as
// leader in /metrics while the other does not; when the holder stops, the
// other server takes both Leases over and schedules.
func TestTwoServersOneLeader(t *testing.T) {
	etcdURL := startEtcd(t)
	a := startTestServer(t, "--etcd-servers", etcdURL)
	b := startTestServer(t, "--etcd-servers", etcdURL)
	byID := map[string]*serverProc{a.identity(t): a, b.identity(t): b}
	if len(byID) != 2 {
		t.Fatalf("the servers share an identity: %v", byID)
	}
	ca, cb := a.Client(t), b.Client(t)
	for _, name := range leases {
		harness.Eventually(t, "lease "+name+" held by a server", func() (bool, error) {
			return byID[holder(t, ca, name)] != nil, nil
		})
		leader := byID[holder(t, ca, name)]
		harness.Eventually(t, "leader metrics of "+name, func() (bool, error) {
			la, lb := leaderStatus(t, ca, name), leaderStatus(t, cb, name)
			if leader == a {
				return la == "1" && lb == "0", nil
			}
			return la == "0" && lb == "1", nil
		})
	}

	// Stop the scheduler's leader (and so whatever else it leads): the
	// other server ends up holding both Leases.
	leader := byID[holder(t, ca, server.SchedulerLeaseName)]
	survivor, sc := b, cb
	if leader == b {
		survivor, sc = a, ca
	}
	if !leader.stop() {
		t.Fatal("the leading server did not stop on SIGTERM")
	}
	survivorID := survivor.identity(t)
	for _, name := range leases {
		harness.Eventually(t, "the surviving server holding "+name, func() (bool, error) {
			return holder(t, sc, name) == survivorID && leaderStatus(t, sc, name) == "1", nil
		})
	}
	addNodes(t, sc, "takeover-node", 1)
	ns := newNamespace(t, sc)
	if _, err := sc.CoreV1().Pods(ns).Create(context.Background(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/x:1"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, "the pod bound by the new leader", func() (bool, error) {
		p, err := sc.CoreV1().Pods(ns).Get(context.Background(), "p", metav1.GetOptions{})
		return err == nil && p.Spec.NodeName == "takeover-node-0", err
	})
}

// TestDisableScheduler: with --disable scheduler the controllers run (a
// Deployment gets its pod) but nothing schedules: no kube-scheduler Lease,
// the pod stays unbound, and /metrics reports no scheduler.
func TestDisableScheduler(t *testing.T) {
	p := startTestServer(t, "--disable", "scheduler")
	c := p.Client(t)
	addNodes(t, c, "unsched-node", 1)
	ns := newNamespace(t, c)
	p.mustKubectl(t, deploymentYAML(ns, "web", 1), "apply", "-f", "-")
	harness.Eventually(t, "the controllers creating the pod", func() (bool, error) {
		return len(podsOf(t, c, ns)) == 1 && holder(t, c, manager.DefaultLeaseName) != "", nil
	})
	if h := holder(t, c, server.SchedulerLeaseName); h != "" {
		t.Fatalf("kube-scheduler Lease held by %q with the scheduler disabled", h)
	}
	if pods := podsOf(t, c, ns); pods[0].Spec.NodeName != "" {
		t.Fatalf("pod bound to %q with the scheduler disabled", pods[0].Spec.NodeName)
	}
	out := p.mustKubectl(t, "", "-n", ns, "get", "pods")
	if !strings.Contains(out, "Pending") {
		t.Fatalf("pod not pending:\n%s", out)
	}
	body, err := c.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(body), `leader_election_master_status{name="kube-scheduler"}`) {
		t.Fatal("/metrics reports a scheduler lease with the scheduler disabled")
	}
}
