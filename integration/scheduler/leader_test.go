package scheduler

import (
	"context"
	"fmt"
	"testing"

	"berth/integration/harness"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLeaderElection runs two `berth scheduler --leader-elect` on one
// server: one holds the kube-system/kube-scheduler Lease and binds pods;
// stopped, it releases the Lease and the other takes over.
func TestLeaderElection(t *testing.T) {
	c := startServer(t)
	c.createNodes(t, node("n", "4", nil, nil))
	start := func(name string) func() {
		return process(t, "berth scheduler "+name, "scheduler", "--kubeconfig", c.kubeconfig, "--leader-elect",
			"--leader-elect-lease-duration", "3s", "--leader-elect-renew-deadline", "2s", "--leader-elect-retry-period", "500ms")
	}
	stops := map[string]func(){"first": start("first"), "second": start("second")}

	c.createPod(t, pod("before", ""))
	c.waitBound(t, "before")
	holder := func() (string, error) {
		l, err := c.client.CoordinationV1().Leases("kube-system").Get(context.Background(), "kube-scheduler", metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		if l.Spec.HolderIdentity == nil {
			return "", nil
		}
		return *l.Spec.HolderIdentity, nil
	}
	leader, err := holder()
	if err != nil || leader == "" {
		t.Fatalf("Lease kube-system/kube-scheduler holder %q (err %v), want the scheduler that bound the pod", leader, err)
	}
	// Which process leads is not known by name; stop the first, and if the
	// holder did not change, it was the second.
	stops["first"]()
	harness.Eventually(t, "the Lease released or kept by the live scheduler", func() (bool, error) {
		h, err := holder()
		return err == nil && h != "", err
	})
	h, _ := holder()
	if h == leader {
		// The first was not the leader: the second still leads; stop it and
		// restart the first for the takeover check.
		stops["second"]()
		stops["third"] = start("third")
	}
	harness.Eventually(t, "a new Lease holder", func() (bool, error) {
		h, err := holder()
		return err == nil && h != "" && h != leader, fmt.Errorf("holder %q", h)
	})
	c.createPod(t, pod("after", ""))
	if got := c.waitBound(t, "after"); got != "n" {
		t.Errorf("after bound to %s, want n", got)
	}
}
