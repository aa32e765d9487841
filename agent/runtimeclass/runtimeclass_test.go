package runtimeclass

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func podWithClass(name string) *v1.Pod {
	p := &v1.Pod{}
	if name != "" {
		p.Spec.RuntimeClassName = &name
	}
	return p
}

func TestHandler(t *testing.T) {
	client := fake.NewClientset(&nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "runsc"})
	m, err := New(client)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() { cancel(); <-done }()

	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	waitFor("the class in the cache", func() bool { h, err := m.Handler(podWithClass("gvisor")); return err == nil && h == "runsc" })

	for _, name := range []string{"", "gvisor"} {
		want := map[string]string{"": "", "gvisor": "runsc"}[name]
		if h, err := m.Handler(podWithClass(name)); err != nil || h != want {
			t.Errorf("Handler(%q) = %q, %v; want %q", name, h, err, want)
		}
	}
	_, err = m.Handler(podWithClass("missing"))
	if !apierrors.IsNotFound(err) || err.Error() != `runtimeclass.node.k8s.io "missing" not found` {
		t.Errorf("a missing class: %v, want upstream's NotFound", err)
	}

	// A class created later is found; one deleted is not any more.
	if _, err := client.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "kata"}, Handler: "kata-qemu"}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("the new class", func() bool { h, _ := m.Handler(podWithClass("kata")); return h == "kata-qemu" })
	if err := client.NodeV1().RuntimeClasses().Delete(ctx, "gvisor", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("the deleted class gone", func() bool { _, err := m.Handler(podWithClass("gvisor")); return apierrors.IsNotFound(err) })
}

func TestNewRequiresClient(t *testing.T) {
	if _, err := New(nil); err == nil {
		t.Error("New(nil) succeeded")
	}
}
