package statussync

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	kubescheme "k8s.io/client-go/kubernetes/scheme"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"berth/agent/status"
)

// deletes records the pod deletions an HTTP apiserver receives; the first
// fail of them fail with 500.
type deletes struct {
	mu     sync.Mutex
	bodies []metav1.DeleteOptions
	fail   int
	got    chan struct{}
}

func (d *deletes) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodDelete || r.URL.Path != "/api/v1/namespaces/default/pods/web" {
		http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		return
	}
	var opts metav1.DeleteOptions
	body, _ := io.ReadAll(r.Body)
	if _, _, err := kubescheme.Codecs.UniversalDeserializer().Decode(body, nil, &opts); err != nil {
		http.Error(w, "decoding the delete options: "+err.Error(), http.StatusBadRequest)
		return
	}
	d.mu.Lock()
	d.bodies = append(d.bodies, opts)
	failing := d.fail > 0
	d.fail--
	d.mu.Unlock()
	d.got <- struct{}{}
	if failing {
		http.Error(w, "etcd is down", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess})
}

// A pod deleted in the apiserver is deleted with grace 0 and the
// precondition of its UID as soon as its worker terminated it (the status
// manager is told, no polling), and retried while that fails.
func TestTerminatedPodsAreDeletedWithGraceZero(t *testing.T) {
	rec := &deletes{fail: 1, got: make(chan struct{}, 10)}
	srv := httptest.NewServer(http.HandlerFunc(rec.serve))
	defer srv.Close()
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	statuses := status.NewManager()
	s, err := New(Config{Client: client, Status: statuses, Pods: corelisters.NewPodLister(indexer), Period: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()

	now := metav1.Now()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1", DeletionTimestamp: &now}}
	if err := indexer.Add(pod); err != nil { // in the apiserver, being deleted
		t.Fatal(err)
	}
	statuses.Set(pod, v1.PodStatus{Phase: v1.PodRunning}, 1)
	select {
	case <-rec.got:
		t.Fatal("a pod still running was deleted")
	case <-time.After(50 * time.Millisecond):
	}
	statuses.Terminate(pod)
	for range 2 { // the failed deletion, then its retry
		select {
		case <-rec.got:
		case <-time.After(10 * time.Second):
			t.Fatal("no deletion")
		}
	}
	rec.mu.Lock()
	for i, opts := range rec.bodies {
		if opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds != 0 || opts.Preconditions == nil || opts.Preconditions.UID == nil || *opts.Preconditions.UID != "uid-1" {
			t.Errorf("deletion %d: %+v, want grace 0 and the precondition uid-1", i, opts)
		}
	}
	rec.mu.Unlock()
	eventuallyEmpty(t, statuses)
	cancel()
	<-done
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.bodies) != 2 {
		t.Errorf("%d deletions, want 2 (a failure, then success)", len(rec.bodies))
	}
}

func eventuallyEmpty(t *testing.T, statuses *status.Manager) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(statuses.Terminated()) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the deleted pod is still among the terminated")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A terminated pod's last status (its terminal phase) is written before
// its deletion is completed: a finalizer may keep the pod in the apiserver,
// and it must not go on showing Running.
func TestTerminatedPodStatusIsWrittenBeforeTheDeletion(t *testing.T) {
	var mu sync.Mutex
	var calls []string
	var patched v1.Pod
	got := make(chan struct{}, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		calls = append(calls, r.Method+" "+r.URL.Path)
		if r.Method == http.MethodPatch {
			_ = json.Unmarshal(body, &patched)
		}
		mu.Unlock()
		got <- struct{}{}
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPatch {
			_ = json.NewEncoder(w).Encode(&v1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}})
			return
		}
		_ = json.NewEncoder(w).Encode(&metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess})
	}))
	defer srv.Close()
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	remote := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1", DeletionTimestamp: &now,
		Finalizers: []string{"example.com/hold"}}, Status: v1.PodStatus{Phase: v1.PodRunning}}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if err := indexer.Add(remote); err != nil {
		t.Fatal(err)
	}
	statuses := status.NewManager()
	s, err := New(Config{Client: client, Status: statuses, Pods: corelisters.NewPodLister(indexer), Period: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// The worker's last status, then its termination, before the syncer
	// ever ran: only finishing the deletion can write it.
	statuses.Set(remote, v1.PodStatus{Phase: v1.PodFailed}, 1)
	statuses.Terminate(remote)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.SyncAll(ctx)
	for range 2 {
		select {
		case <-got:
		case <-time.After(10 * time.Second):
			t.Fatal("no write")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"PATCH /api/v1/namespaces/default/pods/web/status", "DELETE /api/v1/namespaces/default/pods/web"}
	if len(calls) != 2 || calls[0] != want[0] || calls[1] != want[1] {
		t.Fatalf("calls %q, want %q", calls, want)
	}
	if patched.Status.Phase != v1.PodFailed {
		t.Fatalf("patched phase %q, want Failed", patched.Status.Phase)
	}
}

// A terminated pod already gone from the apiserver (the informer saw it go)
// is forgotten without a call: the Node authorizer would refuse deleting
// it, and retrying that would spin.
func TestTerminatedPodGoneFromTheAPIServerIsForgotten(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "forbidden", http.StatusForbidden)
	}))
	defer srv.Close()
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	statuses := status.NewManager()
	s, err := New(Config{Client: client, Status: statuses, Pods: corelisters.NewPodLister(indexer), Period: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1", DeletionTimestamp: &now}}
	statuses.Set(pod, v1.PodStatus{Phase: v1.PodFailed}, 1)
	statuses.Terminate(pod)
	if pending := s.SyncAll(context.Background()); pending {
		t.Error("SyncAll reports work left for a pod already gone")
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("%d calls to the apiserver, want none", n)
	}
	if left := statuses.Terminated(); len(left) != 0 {
		t.Errorf("still among the terminated: %v", left)
	}
}
