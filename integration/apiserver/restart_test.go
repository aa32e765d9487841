package apiserver_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// TestRestart: data survives a restart of `berth server`; a client-go
// informer keeps working across it (its watch resumes or, when the restarted
// watch cache no longer has its resourceVersion, gets 410 Gone and relists);
// a watch from a resourceVersion older than the new cache gets 410.
func TestRestart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := filepath.Join(t.TempDir(), "server")
	srv, err := startServer(dir, "127.0.0.1:0", apiOnly...)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { srv.stop() }()
	cs := srv.Client(t)
	cms := cs.CoreV1().ConfigMaps("default")

	// The informer sees every configmap, across the restart.
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("default"))
	inf := factory.Core().V1().ConfigMaps().Informer()
	var mu sync.Mutex
	seen := map[string]bool{}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		mu.Lock()
		defer mu.Unlock()
		seen[obj.(*corev1.ConfigMap).Name] = true
	}}); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	waitSeen := func(name string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			mu.Lock()
			ok := seen[name]
			mu.Unlock()
			if ok {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("informer never saw configmap %s", name)
	}

	first, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitSeen("before")
	for i := range 5 {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("filler-%d", i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	addr := srv.Addr
	srv.stop()
	srv, err = startServer(dir, addr, apiOnly...)
	if err != nil {
		t.Fatal(err)
	}

	// Data survived.
	got, err := cms.Get(ctx, "before", metav1.GetOptions{})
	if err != nil || got.Data["k"] != "v" || got.UID != first.UID {
		t.Fatalf("after restart: %v %+v", err, got)
	}
	// The informer carries on.
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSeen("after")

	// A watch from a resourceVersion the new watch cache does not hold: 410.
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion})
	if err == nil {
		defer w.Stop()
		ev := nextEvent(t, w)
		if ev.Type != watch.Error || !apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)) && !apierrors.IsGone(apierrors.FromObject(ev.Object)) {
			t.Fatalf("watch from an old resourceVersion: %s %v, want a 410 Gone error", ev.Type, ev.Object)
		}
	} else if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Fatalf("watch from an old resourceVersion: %v, want 410 Gone", err)
	}
}
