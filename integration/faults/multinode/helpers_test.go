package multinode

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"berth/integration/harness"
	"berth/integration/testbed"
)

// namespace creates a namespace for the test, deleted after it, and waits
// for its default ServiceAccount (which pods need).
func namespace(t *testing.T, c kubernetes.Interface) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	ns, err := c.CoreV1().Namespaces().Create(context.Background(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	harness.WaitFor(t, time.Minute, "the default ServiceAccount of "+ns.Name, func() (bool, string) {
		_, err := c.CoreV1().ServiceAccounts(ns.Name).Get(context.Background(), "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	return ns.Name
}

// serverClient is an admin client of one server replica, not rate limited
// (the writers go faster than client-go's default 5/s).
func serverClient(t *testing.T, bed *testbed.Bed, s *testbed.Server) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(bed.Config)
	cfg.Host, cfg.QPS, cfg.Burst = s.URL, -1, 0
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// watchNotReady records, from now until ctx ends, every node seen with
// Ready other than True; the returned function reports them.
func watchNotReady(t *testing.T, ctx context.Context, bed *testbed.Bed) func() []string {
	t.Helper()
	nodes, err := bed.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := bed.Client.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{ResourceVersion: nodes.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	var mu sync.Mutex
	var seen []string
	go func() {
		for e := range w.ResultChan() {
			if n, ok := e.Object.(*v1.Node); ok && !testbed.IsReady(n) {
				mu.Lock()
				seen = append(seen, fmt.Sprintf("%s at %s", n.Name, time.Now().Format(time.RFC3339Nano)))
				mu.Unlock()
			}
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}
