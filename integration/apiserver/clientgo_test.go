package apiserver_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

func testPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "t"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36"}}},
	}
}

// TestUnauthenticated checks every API request needs a credential: none
// gives 401 with a Status; the agent token and the admin certificate work.
func TestUnauthenticated(t *testing.T) {
	caPEM, err := os.ReadFile(filepath.Join(shared.Dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	get := func(path, token string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, "https://"+shared.Addr+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v (the serving certificate must verify against ca.crt)", path, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	code, body := get("/api/v1/namespaces", "")
	if code != http.StatusUnauthorized || !strings.Contains(body, `"kind": "Status"`) && !strings.Contains(body, `"kind":"Status"`) {
		t.Fatalf("no credential: %d %s, want 401 Status", code, body)
	}
	if code, _ := get("/api/v1/namespaces", "wrong-token"); code != http.StatusUnauthorized {
		t.Fatalf("bad token: %d, want 401", code)
	}
	token, err := os.ReadFile(filepath.Join(shared.Dir, "agent-token"))
	if err != nil {
		t.Fatal(err)
	}
	// The agent join token is a bootstrap token: it authenticates, and
	// RBAC lets it do discovery (and CSRs), not read namespaces.
	if code, body := get("/api", strings.TrimSpace(string(token))); code != http.StatusOK {
		t.Fatalf("agent token discovery: %d %s, want 200", code, body)
	}
	if code, body := get("/api/v1/namespaces", strings.TrimSpace(string(token))); code != http.StatusForbidden ||
		!strings.Contains(body, `cannot list resource \"namespaces\" in API group \"\" at the cluster scope`) {
		t.Fatalf("agent token listing namespaces: %d %s, want 403", code, body)
	}
	if code, body := get("/readyz", ""); code != http.StatusOK || body != "ok" {
		t.Fatalf("/readyz: %d %q", code, body)
	}
	// /metrics counts requests by verb, resource and code.
	metrics, err := shared.Client(t).CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil || !strings.Contains(string(metrics), `apiserver_request_total{code="401",resource="namespaces",subresource="",verb="list"}`) ||
		!strings.Contains(string(metrics), "apiserver_request_duration_seconds_bucket") {
		t.Fatalf("/metrics (%v): %.2000s", err, metrics)
	}
	// The admin client certificate: /version reports the Kubernetes version.
	ver, err := shared.Client(t).Discovery().ServerVersion()
	if err != nil || !strings.HasPrefix(ver.GitVersion, "v1.") {
		t.Fatalf("server version %v, %v", ver, err)
	}
}

// TestObjectSemantics covers create/update semantics: uid, generateName,
// resourceVersion conflicts, generation, status only via /status, dryRun,
// namespace lifecycle.
func TestObjectSemantics(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, shared)
	cs := shared.Client(t)
	pods := cs.CoreV1().Pods(ns)

	p := testPod("")
	p.GenerateName = "gen-"
	created, err := pods.Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(created.Name, "gen-") || len(created.Name) <= 4 || created.UID == "" || created.Generation != 1 {
		t.Fatalf("generateName/uid/generation: %+v", created.ObjectMeta)
	}
	if _, err := pods.Create(ctx, testPod(created.Name), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("duplicate create: %v, want AlreadyExists", err)
	}

	// Optimistic concurrency: a stale resourceVersion conflicts (409).
	stale := created.DeepCopy()
	created.Labels["v"] = "1"
	updated, err := pods.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stale.Labels["v"] = "stale"
	if _, err := pods.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("stale update: %v, want 409 Conflict", err)
	}
	if updated.Generation != 1 {
		t.Fatalf("metadata-only update bumped generation to %d", updated.Generation)
	}
	updated.Spec.ActiveDeadlineSeconds = ptr.To[int64](30)
	updated, err = pods.Update(ctx, updated, metav1.UpdateOptions{})
	if err != nil || updated.Generation != 2 {
		t.Fatalf("spec update: generation %d, err %v; want 2", updated.Generation, err)
	}

	// Status is ignored on the main resource and written through /status.
	updated.Status.Phase = corev1.PodRunning
	updated, err = pods.Update(ctx, updated, metav1.UpdateOptions{})
	if err != nil || updated.Status.Phase != corev1.PodPending {
		t.Fatalf("status through main resource: phase %q err %v, want Pending", updated.Status.Phase, err)
	}
	updated.Status.Phase = corev1.PodRunning
	updated, err = pods.UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if err != nil || updated.Status.Phase != corev1.PodRunning {
		t.Fatalf("UpdateStatus: phase %q err %v", updated.Status.Phase, err)
	}

	// dryRun=All persists nothing.
	if _, err := pods.Create(ctx, testPod("dry"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("dry-run pod exists: %v", err)
	}

	// Validation errors are 422 with causes naming the field.
	bad := testPod("bad")
	bad.Spec.Containers = append(bad.Spec.Containers, bad.Spec.Containers[0])
	_, err = pods.Create(ctx, bad, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("duplicate container names: %v, want 422", err)
	}
	if st := err.(apierrors.APIStatus).Status(); st.Details == nil || len(st.Details.Causes) == 0 || !strings.Contains(st.Details.Causes[0].Field, "spec.containers[1].name") {
		t.Fatalf("422 causes: %+v", st.Details)
	}

	// Namespace lifecycle: no creates in a missing namespace.
	if _, err := cs.CoreV1().ConfigMaps("does-not-exist").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("create in missing namespace: %v, want NotFound", err)
	}

	// Finalizers hold deletion: deletionTimestamp set, object kept until
	// the finalizer is removed.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "fin", Finalizers: []string{"example.com/hold"}}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, "fin", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	held, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "fin", metav1.GetOptions{})
	if err != nil || held.DeletionTimestamp == nil {
		t.Fatalf("finalized object: %v deletionTimestamp %v", err, held.GetDeletionTimestamp())
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Patch(ctx, "fin", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "fin", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("object still there after its finalizer went: %v", err)
	}
}

// TestConcurrentUpdatesConflict has many writers update one object from
// the same read: exactly one wins, the others get 409.
func TestConcurrentUpdatesConflict(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, shared)
	cms := shared.Client(t).CoreV1().ConfigMaps(ns)
	base, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "race"}, Data: map[string]string{}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const writers = 10
	var wg sync.WaitGroup
	results := make(chan error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := base.DeepCopy()
			c.Data = map[string]string{"writer": fmt.Sprint(i)}
			_, err := cms.Update(ctx, c, metav1.UpdateOptions{})
			results <- err
		}()
	}
	wg.Wait()
	close(results)
	ok, conflicts := 0, 0
	for err := range results {
		switch {
		case err == nil:
			ok++
		case apierrors.IsConflict(err):
			conflicts++
		default:
			t.Fatalf("unexpected error: %v", err)
		}
	}
	if ok != 1 || conflicts != writers-1 {
		t.Fatalf("%d succeeded, %d conflicted; want 1 and %d", ok, conflicts, writers-1)
	}
}

// TestListAndSelectors covers label and field selectors (incl. the indexed
// spec.nodeName), pagination with limit/continue, and protobuf clients.
func TestListAndSelectors(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, shared)
	cs := shared.Client(t)
	pods := cs.CoreV1().Pods(ns)
	for i := range 7 {
		p := testPod(fmt.Sprintf("p%d", i))
		p.Labels["parity"] = []string{"even", "odd"}[i%2]
		if i < 3 {
			p.Spec.NodeName = "node-a"
		}
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	count := func(opts metav1.ListOptions) int {
		t.Helper()
		l, err := pods.List(ctx, opts)
		if err != nil {
			t.Fatalf("list %+v: %v", opts, err)
		}
		return len(l.Items)
	}
	if n := count(metav1.ListOptions{LabelSelector: "parity=odd"}); n != 3 {
		t.Fatalf("label selector: %d, want 3", n)
	}
	if n := count(metav1.ListOptions{FieldSelector: "spec.nodeName=node-a"}); n != 3 {
		t.Fatalf("spec.nodeName selector: %d, want 3", n)
	}
	if n := count(metav1.ListOptions{FieldSelector: "metadata.name=p4"}); n != 1 {
		t.Fatalf("metadata.name selector: %d, want 1", n)
	}
	if n := count(metav1.ListOptions{FieldSelector: "status.phase=Pending,metadata.namespace=" + ns}); n != 7 {
		t.Fatalf("status.phase selector: %d, want 7", n)
	}
	if n := count(metav1.ListOptions{FieldSelector: "spec.nodeName=node-a", ResourceVersion: "0"}); n != 3 {
		t.Fatalf("spec.nodeName selector from the watch cache: %d, want 3", n)
	}
	if _, err := pods.List(ctx, metav1.ListOptions{FieldSelector: "spec.bogus=x"}); !apierrors.IsBadRequest(err) {
		t.Fatalf("unsupported field selector: %v, want 400", err)
	}

	// Pagination.
	var names []string
	opts := metav1.ListOptions{Limit: 3}
	for pages := 0; ; pages++ {
		l, err := pods.List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range l.Items {
			names = append(names, p.Name)
		}
		if l.Continue == "" {
			if pages != 2 {
				t.Fatalf("%d pages, want 3", pages+1)
			}
			break
		}
		opts.Continue = l.Continue
	}
	if strings.Join(names, ",") != "p0,p1,p2,p3,p4,p5,p6" {
		t.Fatalf("paged names: %v", names)
	}

	// Protobuf on the wire.
	cfg := shared.RESTConfig(t)
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf"
	pcs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := pcs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "parity=even"})
	if err != nil || len(pl.Items) != 4 {
		t.Fatalf("protobuf list: %d items, %v", len(pl.Items), err)
	}
	if _, err := pcs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "proto"}, Data: map[string]string{"a": "b"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("protobuf create: %v", err)
	}
	w, err := pcs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: pl.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := pods.Create(ctx, testPod("after"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ev := nextEvent(t, w)
	if ev.Type != watch.Added || ev.Object.(*corev1.Pod).Name != "after" {
		t.Fatalf("protobuf watch event: %s %T", ev.Type, ev.Object)
	}
}

func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no watch event within 30s")
	}
	return watch.Event{}
}

// TestWatch covers watching from a resourceVersion, field-selected watches
// by spec.nodeName, and bookmarks.
func TestWatch(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, shared)
	pods := shared.Client(t).CoreV1().Pods(ns)
	first, err := pods.Create(ctx, testPod("w0"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// From first's resourceVersion: later changes only, in order.
	w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	nodeW, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", "node-w").String(), ResourceVersion: first.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer nodeW.Stop()
	if _, err := pods.Create(ctx, testPod("w1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bound := testPod("w2")
	bound.Spec.NodeName = "node-w"
	if _, err := pods.Create(ctx, bound, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "w1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		typ  watch.EventType
		name string
	}{{watch.Added, "w1"}, {watch.Added, "w2"}, {watch.Deleted, "w1"}} {
		ev := nextEvent(t, w)
		// Deletion goes through the graceful path (grace 0 for an unbound
		// pod): the deletionTimestamp may show in a MODIFIED event first.
		if ev.Type == watch.Modified && want.typ == watch.Deleted && ev.Object.(*corev1.Pod).DeletionTimestamp != nil {
			ev = nextEvent(t, w)
		}
		if ev.Type != want.typ || ev.Object.(*corev1.Pod).Name != want.name {
			t.Fatalf("event %s %s, want %s %s", ev.Type, ev.Object.(*corev1.Pod).Name, want.typ, want.name)
		}
	}
	if ev := nextEvent(t, nodeW); ev.Type != watch.Added || ev.Object.(*corev1.Pod).Name != "w2" {
		t.Fatalf("spec.nodeName watch: %s %v", ev.Type, ev.Object)
	}

	// Bookmarks when asked: the watch cache sends one about once a minute
	// and right before the watch times out (2s before), as long as the
	// resource moved on since the watch started.
	bw, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion, AllowWatchBookmarks: true, TimeoutSeconds: ptr.To[int64](6)})
	if err != nil {
		t.Fatal(err)
	}
	defer bw.Stop()
	if _, err := pods.Create(ctx, testPod("w3"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sawBookmark := false
	for ev := range bw.ResultChan() {
		if ev.Type == watch.Bookmark {
			sawBookmark = true
			if rv := ev.Object.(*corev1.Pod).ResourceVersion; rv == "" {
				t.Fatal("bookmark without resourceVersion")
			}
		}
	}
	if !sawBookmark {
		t.Fatal("no bookmark on a watch with allowWatchBookmarks that timed out")
	}
}

// TestSubresources covers pods/binding, pods/eviction, deployments/scale
// and replicasets/status.
func TestSubresources(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, shared)
	cs := shared.Client(t)
	pods := cs.CoreV1().Pods(ns)
	if _, err := pods.Create(ctx, testPod("b"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-1"}}
	if err := pods.Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := pods.Get(ctx, "b", metav1.GetOptions{})
	if err != nil || p.Spec.NodeName != "node-1" {
		t.Fatalf("after binding: nodeName %q err %v", p.Spec.NodeName, err)
	}
	if err := pods.Bind(ctx, binding, metav1.CreateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("second binding: %v, want 409", err)
	}
	// A bound pod is deleted gracefully: it stays with a deletionTimestamp.
	if err := pods.Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err = pods.Get(ctx, "b", metav1.GetOptions{})
	if err != nil || p.DeletionTimestamp == nil || p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds != 30 {
		t.Fatalf("graceful deletion: %v %+v", err, p.ObjectMeta)
	}
	if err := pods.Delete(ctx, "b", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "b", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("pod after grace 0 delete: %v", err)
	}

	// Eviction deletes an unbound pod at once.
	if _, err := pods.Create(ctx, testPod("e"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "e", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("evicted pod: %v", err)
	}
	// An evicted pod is marked DisruptionTarget first (a finalizer keeps it here).
	held := testPod("held")
	held.Finalizers = []string{"example.com/hold"}
	if _, err := pods.Create(ctx, held, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	heldPod, err := pods.Get(ctx, "held", metav1.GetOptions{})
	if err != nil || heldPod.DeletionTimestamp == nil {
		t.Fatalf("evicted pod with a finalizer: %v %+v", err, heldPod)
	}
	var disruption *corev1.PodCondition
	for i, c := range heldPod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget {
			disruption = &heldPod.Status.Conditions[i]
		}
	}
	if disruption == nil || disruption.Status != corev1.ConditionTrue || disruption.Reason != "EvictionByEvictionAPI" || disruption.Message != "Eviction API: evicting" {
		t.Errorf("DisruptionTarget condition %+v", disruption)
	}
	if _, err := pods.Patch(ctx, "held", types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers"}]`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}

	// Scale subresource and status of replicasets.
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "rs"},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "t"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "t"}}, Spec: testPod("x").Spec},
		},
	}
	rss := cs.AppsV1().ReplicaSets(ns)
	if _, err := rss.Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	scale, err := rss.GetScale(ctx, "rs", metav1.GetOptions{})
	if err != nil || scale.Spec.Replicas != 1 || scale.Status.Selector != "app=t" {
		t.Fatalf("GetScale: %+v %v", scale, err)
	}
	scale.Spec.Replicas = 4
	if _, err := rss.UpdateScale(ctx, "rs", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rss.UpdateScale(ctx, "rs", scale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("UpdateScale with a stale resourceVersion: %v, want 409", err)
	}
	scale.ResourceVersion = ""
	scale.Spec.Replicas = -1
	if _, err := rss.UpdateScale(ctx, "rs", scale, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("negative replicas: %v, want 422", err)
	}
	got, err := rss.Get(ctx, "rs", metav1.GetOptions{})
	if err != nil || *got.Spec.Replicas != 4 || got.Generation != 2 {
		t.Fatalf("after scale: %v replicas %d generation %d", err, *got.Spec.Replicas, got.Generation)
	}
	got.Status.Replicas = 4
	got, err = rss.UpdateStatus(ctx, got, metav1.UpdateOptions{})
	if err != nil || got.Status.Replicas != 4 || got.Generation != 2 {
		t.Fatalf("UpdateStatus: %v %+v", err, got.Status)
	}
	raw, _ := json.Marshal(got.Status)
	if !strings.Contains(string(raw), `"replicas":4`) {
		t.Fatalf("status: %s", raw)
	}
}
