package apiserver_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"berth/integration/testbed"

	"go.etcd.io/etcd/server/v3/embed"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// startEtcdCluster starts a 3-member etcd cluster on loopback inside the
// test process and returns the members and their client URLs.
func startEtcdCluster(t *testing.T) ([]*embed.Etcd, []string) {
	t.Helper()
	members, _, urls, err := testbed.StartEtcd(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range members {
		t.Cleanup(func() {
			select {
			case <-e.Server.StopNotify(): // closed by the test already
			default:
				e.Close()
			}
		})
	}
	return members, urls
}

// TestExternalEtcd runs two `berth server` replicas on one external 3-member
// etcd cluster: what one writes the other serves, and writes continue after
// a member stops.
func TestExternalEtcd(t *testing.T) {
	ctx := context.Background()
	members, urls := startEtcdCluster(t)
	servers := make([]*serverProc, 2)
	for i := range servers {
		srv, err := startServer(filepath.Join(t.TempDir(), fmt.Sprintf("replica%d", i)), "127.0.0.1:0", "--etcd-servers", strings.Join(urls, ","))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.stop)
		servers[i] = srv
	}
	a, b := servers[0].Client(t).CoreV1().ConfigMaps("default"), servers[1].Client(t).CoreV1().ConfigMaps("default")
	if _, err := a.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shared"}, Data: map[string]string{"from": "a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := b.Get(ctx, "shared", metav1.GetOptions{})
	if err != nil || got.Data["from"] != "a" {
		t.Fatalf("replica b reads %v, %v", got, err)
	}
	// Optimistic concurrency holds across replicas.
	stale := got.DeepCopy()
	got.Data["from"] = "b"
	if _, err := b.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	stale.Data["from"] = "stale"
	if _, err := a.Update(ctx, stale, metav1.UpdateOptions{}); err == nil {
		t.Fatal("stale update through the other replica succeeded")
	}

	// Stop one member: the two left keep a quorum and writes go on.
	members[0].Close()
	for i := range 10 {
		name := fmt.Sprintf("after-stop-%d", i)
		deadline := time.Now().Add(30 * time.Second)
		for {
			_, err := a.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("create %s with a member down: %v", name, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	list, err := b.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, cm := range list.Items {
		if strings.HasPrefix(cm.Name, "after-stop-") {
			n++
		}
	}
	if n != 10 {
		t.Fatalf("replica b lists %d of the 10 configmaps written with a member down", n)
	}
}
