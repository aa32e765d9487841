package controllers

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/controller/manager"
	"berth/controlplane/controller/serviceaccount"
	"berth/integration/harness"
)

// TestLeaderElection runs two managers on one Lease: exactly one leads
// (and the Lease names it); when it stops, the other takes over.
func TestLeaderElection(t *testing.T) {
	ctx := context.Background()
	const lease = "leader-election-test"
	start := func(id string) (*manager.Manager, context.CancelFunc, chan error) {
		m, err := manager.New(manager.Config{
			Client: env.client, Identity: id, LeaseName: lease, Controllers: []string{serviceaccount.Name},
			LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		mctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- m.Run(mctx) }()
		t.Cleanup(func() { cancel(); <-done })
		return m, cancel, done
	}
	holder := func() string {
		l, err := env.client.CoordinationV1().Leases(manager.DefaultLeaseNamespace).Get(ctx, lease, metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	a, stopA, doneA := start("manager-a")
	harness.Eventually(t, "manager-a leads", func() (bool, error) { return a.Leading() && holder() == "manager-a", nil })
	b, _, _ := start("manager-b")
	// b campaigns (it reads the Lease every RetryPeriod) but may not lead.
	harness.Eventually(t, "manager-b observed the lease", func() (bool, error) {
		l, err := env.client.CoordinationV1().Leases(manager.DefaultLeaseNamespace).Get(ctx, lease, metav1.GetOptions{})
		return err == nil && l.Spec.LeaseTransitions != nil, err
	})
	if b.Leading() || !a.Leading() {
		t.Fatalf("leading: a=%v b=%v; want only a", a.Leading(), b.Leading())
	}
	stopA()
	if err := <-doneA; err != nil {
		t.Fatalf("manager-a: %v", err)
	}
	doneA <- nil // for the cleanup's receive
	harness.Eventually(t, "manager-b takes over", func() (bool, error) { return b.Leading() && holder() == "manager-b", nil })
	if a.Leading() {
		t.Fatal("stopped manager still claims to lead")
	}
}
