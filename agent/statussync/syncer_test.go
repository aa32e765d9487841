package statussync

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"berth/agent/metrics"
	"berth/agent/status"
)

// Merge keeps the conditions the agent does not own (PodScheduled) and
// replaces the ones it does.
func TestMergeKeepsForeignConditions(t *testing.T) {
	old := v1.PodStatus{NominatedNodeName: "n1", ResourceClaimStatuses: []v1.PodResourceClaimStatus{{Name: "gpu"}}, Conditions: []v1.PodCondition{
		{Type: v1.PodScheduled, Status: v1.ConditionTrue},
		{Type: v1.PodReady, Status: v1.ConditionFalse},
	}}
	st := v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}}
	got := Merge(old, st)
	if got.Phase != v1.PodRunning || got.NominatedNodeName != "n1" || len(got.Conditions) != 2 ||
		got.Conditions[0].Type != v1.PodScheduled || got.Conditions[1].Type != v1.PodReady || got.Conditions[1].Status != v1.ConditionTrue ||
		len(got.ResourceClaimStatuses) != 1 {
		t.Fatalf("Merge = %+v", got)
	}
}

// An eviction's DisruptionTarget, published by the agent, replaces one the
// apiserver's eviction API may have set; without one the apiserver's stays.
func TestMergeTakesTheAgentsDisruptionTarget(t *testing.T) {
	old := v1.PodStatus{Conditions: []v1.PodCondition{
		{Type: v1.PodScheduled, Status: v1.ConditionTrue},
		{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "EvictionByEvictionAPI"},
	}}
	st := v1.PodStatus{Phase: v1.PodFailed, Conditions: []v1.PodCondition{
		{Type: v1.PodReady, Status: v1.ConditionFalse},
		{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonTerminationByKubelet},
	}}
	got := Merge(old, st)
	var reasons []string
	for _, c := range got.Conditions {
		reasons = append(reasons, string(c.Type)+"/"+c.Reason)
	}
	if strings.Join(reasons, " ") != "PodScheduled/ Ready/ DisruptionTarget/TerminationByKubelet" {
		t.Errorf("merged conditions %v", reasons)
	}
	got = Merge(old, v1.PodStatus{Phase: v1.PodRunning, Conditions: st.Conditions[:1]})
	if len(got.Conditions) != 3 || got.Conditions[1].Reason != "EvictionByEvictionAPI" {
		t.Errorf("without the agent's: %+v", got.Conditions)
	}
}

// patches records the pods/status patches an HTTP apiserver receives.
type patches struct {
	mu     sync.Mutex
	bodies []string
}

func (p *patches) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPatch || !strings.HasSuffix(r.URL.Path, "/pods/web/status") {
		http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != string(types.StrategicMergePatchType) {
		http.Error(w, "unexpected patch type "+ct, http.StatusUnsupportedMediaType)
		return
	}
	body, _ := io.ReadAll(r.Body)
	p.mu.Lock()
	p.bodies = append(p.bodies, string(body))
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&v1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}})
}

func (p *patches) list() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.bodies...)
}

// A status is written once per change, with the pod's UID; an unchanged
// status and a static pod (no apiserver copy with its UID) are not written.
func TestSyncerWritesOnlyChanges(t *testing.T) {
	rec := &patches{}
	srv := httptest.NewServer(http.HandlerFunc(rec.serve))
	defer srv.Close()
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	remote := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"}}
	if err := indexer.Add(remote); err != nil {
		t.Fatal(err)
	}
	statuses := status.NewManager()
	s, err := New(Config{Client: client, Status: statuses, Pods: corelisters.NewPodLister(indexer)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	static := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "static-node", Namespace: "default", UID: "static-uid"}}
	statuses.Set(static, v1.PodStatus{Phase: v1.PodRunning}, 1)
	statuses.Set(remote, v1.PodStatus{Phase: v1.PodPending}, 1)
	s.SyncAll(ctx)
	s.SyncAll(ctx) // unchanged: no second write
	statuses.Set(remote, v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.0.0.5"}, 2)
	s.SyncAll(ctx)
	got := rec.list()
	if len(got) != 2 {
		t.Fatalf("%d patches, want 2: %q", len(got), got)
	}
	for i, want := range []string{`"phase":"Pending"`, `"podIP":"10.0.0.5"`} {
		if !strings.Contains(got[i], want) || !strings.Contains(got[i], `"uid":"uid-1"`) {
			t.Errorf("patch %d = %s, want %s and the pod's uid", i, got[i], want)
		}
	}
}

func TestNewRequiresFields(t *testing.T) {
	if _, err := New(Config{}); err == nil || !strings.Contains(err.Error(), "Client") {
		t.Fatalf("New(Config{}) = %v, want an error naming Client", err)
	}
}

// The pod startup SLI counts from the write of a status with every
// container started: a pod observed running on the watch is measured only
// once the syncer wrote that status.
func TestSyncerTellsMetricsOfWrittenStatuses(t *testing.T) {
	rec := &patches{}
	srv := httptest.NewServer(http.HandlerFunc(rec.serve))
	defer srv.Close()
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	remote := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1",
		CreationTimestamp: metav1.NewTime(time.Now().Add(-time.Second))}}
	if err := indexer.Add(remote); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	met, err := metrics.New(reg, "node1")
	if err != nil {
		t.Fatal(err)
	}
	statuses := status.NewManager()
	s, err := New(Config{Client: client, Status: statuses, Pods: corelisters.NewPodLister(indexer), Metrics: met})
	if err != nil {
		t.Fatal(err)
	}
	met.PodObservedOnWatch(remote, time.Now()) // seen before acknowledged: tracked
	running := v1.PodStatus{Phase: v1.PodRunning, StartTime: &metav1.Time{Time: time.Now()}, ContainerStatuses: []v1.ContainerStatus{
		{Name: "app", State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.Now()}}}}}
	observed := remote.DeepCopy()
	observed.Status = running
	met.PodObservedOnWatch(observed, time.Now()) // not written by the agent: not measured
	if n := sliSamples(t, reg); n != 0 {
		t.Fatalf("SLI samples before the write: %d, want 0", n)
	}
	statuses.Set(remote, running, 1)
	s.SyncAll(context.Background())
	if len(rec.list()) != 1 {
		t.Fatalf("patches %q, want one", rec.list())
	}
	met.PodObservedOnWatch(observed, time.Now())
	if n := sliSamples(t, reg); n != 1 {
		t.Errorf("SLI samples after the write: %d, want 1", n)
	}
}

func sliSamples(t *testing.T, reg *prometheus.Registry) uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "kubelet_pod_start_sli_duration_seconds" {
			return mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	t.Fatal("no kubelet_pod_start_sli_duration_seconds")
	return 0
}

// Regression: the agent's patch replaced the whole conditions list, so a
// readiness gate's condition set after the agent read the pod was lost.
// The strategic merge patch leaves it, and changes the agent's own.
func TestStatusPatchKeepsConditionsSetMeanwhile(t *testing.T) {
	read := v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{
		{Type: "k8s.io/gate1", Status: v1.ConditionTrue},
		{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: "ReadinessGatesNotReady"},
	}}
	server := read.DeepCopy() // meanwhile, someone sets the second gate
	server.Conditions = append(server.Conditions, v1.PodCondition{Type: "k8s.io/gate2", Status: v1.ConditionTrue})
	st := v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}}
	patch, err := statusPatch("uid-1", read, Merge(read, st))
	if err != nil {
		t.Fatal(err)
	}
	serverJSON, _ := json.Marshal(v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "uid-1"}, Status: *server})
	out, err := strategicpatch.StrategicMergePatch(serverJSON, patch, v1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	var got v1.Pod
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	conds := map[v1.PodConditionType]v1.ConditionStatus{}
	for _, c := range got.Status.Conditions {
		conds[c.Type] = c.Status
	}
	if len(conds) != 3 || conds["k8s.io/gate1"] != v1.ConditionTrue || conds["k8s.io/gate2"] != v1.ConditionTrue || conds[v1.PodReady] != v1.ConditionTrue {
		t.Errorf("conditions after the patch %v (patch %s)", conds, patch)
	}
	if !strings.Contains(string(patch), `"uid":"uid-1"`) {
		t.Errorf("patch %s lacks the pod's uid", patch)
	}
}
