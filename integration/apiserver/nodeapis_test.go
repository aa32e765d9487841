package apiserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"berth/integration/harness"
)

// tableOf GETs a collection as a server-side table and returns its column
// names and the first row's cells.
func tableOf(t *testing.T, rc rest.Interface, ns, resource string) ([]string, []interface{}) {
	t.Helper()
	req := rc.Get().Resource(resource).SetHeader("Accept", tableAccept)
	if ns != "" {
		req = req.Namespace(ns)
	}
	body, err := req.DoRaw(context.Background())
	if err != nil {
		t.Fatalf("table of %s: %v", resource, err)
	}
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range table.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	if len(table.Rows) == 0 {
		t.Fatalf("table of %s has no rows", resource)
	}
	return cols, table.Rows[0].Cells
}

// wantInvalid checks err is a 422 naming field with a cause containing detail.
func wantInvalid(t *testing.T, err error, field, detail string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("want 422 Invalid on %s, got %v", field, err)
	}
	for _, c := range err.(apierrors.APIStatus).Status().Details.Causes {
		if c.Field == field && strings.Contains(c.Message, detail) {
			return
		}
	}
	t.Fatalf("no cause on %s containing %q: %v", field, detail, err)
}

// nextEventOf waits for a watch event of type typ.
func nextEventOf(t *testing.T, w watch.Interface, typ watch.EventType) watch.Event {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed waiting for %s", typ)
			}
			if ev.Type == typ {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %s event in 30s", typ)
		}
	}
}

// TestRuntimeClassesAPI: node.k8s.io/v1 runtimeclasses in discovery, with
// create, get, list, watch, patch, update, delete and deletecollection, the
// handler validated and immutable, and the NAME HANDLER AGE table.
func TestRuntimeClassesAPI(t *testing.T) {
	ctx := context.Background()
	cs := shared.Client(t)
	res, err := cs.Discovery().ServerResourcesForGroupVersion("node.k8s.io/v1")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.APIResources) != 1 || res.APIResources[0].Name != "runtimeclasses" || res.APIResources[0].Namespaced || res.APIResources[0].Kind != "RuntimeClass" {
		t.Fatalf("node.k8s.io/v1 resources: %+v", res.APIResources)
	}
	rcs := cs.NodeV1().RuntimeClasses()
	sel := metav1.ListOptions{LabelSelector: "test=rc-api"}
	w, err := rcs.Watch(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	mk := func(name, handler string) *nodev1.RuntimeClass {
		return &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"test": "rc-api"}}, Handler: handler}
	}
	created, err := rcs.Create(ctx, mk("rc-api-1", "handler1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rcs.DeleteCollection(context.Background(), metav1.DeleteOptions{}, sel) })
	if _, err := rcs.Create(ctx, mk("rc-api-1", "handler1"), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second create: want 409, got %v", err)
	}
	for _, n := range []string{"rc-api-2", "rc-api-3"} {
		if _, err := rcs.Create(ctx, mk(n, "h"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if ev := nextEventOf(t, w, watch.Added); ev.Object.(*nodev1.RuntimeClass).Name != "rc-api-1" {
		t.Errorf("first Added event is %s", ev.Object.(*nodev1.RuntimeClass).Name)
	}
	_, err = rcs.Create(ctx, mk("rc-api-bad", "Not_A_Label"), metav1.CreateOptions{})
	wantInvalid(t, err, "handler", "a lowercase RFC 1123 label")

	got, err := rcs.Get(ctx, "rc-api-1", metav1.GetOptions{})
	if err != nil || got.UID != created.UID {
		t.Fatalf("get: %v %v", got, err)
	}
	list, err := rcs.List(ctx, sel)
	if err != nil || len(list.Items) != 3 {
		t.Fatalf("list: %d items, %v", len(list.Items), err)
	}
	patched, err := rcs.Patch(ctx, "rc-api-1", types.MergePatchType, []byte(`{"metadata":{"annotations":{"patched":"true"}}}`), metav1.PatchOptions{})
	if err != nil || patched.Annotations["patched"] != "true" {
		t.Fatalf("patch: %v %v", patched, err)
	}
	if ev := nextEventOf(t, w, watch.Modified); ev.Object.(*nodev1.RuntimeClass).Annotations["patched"] != "true" {
		t.Errorf("Modified event without the patch: %+v", ev.Object)
	}
	patched.Annotations["updated"] = "true"
	updated, err := rcs.Update(ctx, patched, metav1.UpdateOptions{})
	if err != nil || updated.Annotations["updated"] != "true" {
		t.Fatalf("update: %v %v", updated, err)
	}
	updated.Handler = "other"
	_, err = rcs.Update(ctx, updated, metav1.UpdateOptions{})
	wantInvalid(t, err, "handler", "field is immutable")

	cols, cells := tableOf(t, cs.NodeV1().RESTClient(), "", "runtimeclasses")
	if strings.Join(cols, " ") != "Name Handler Age" || cells[1] == "" {
		t.Errorf("table columns %v cells %v", cols, cells)
	}

	if err := rcs.Delete(ctx, "rc-api-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rcs.Get(ctx, "rc-api-1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get after delete: %v", err)
	}
	if err := rcs.DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil {
		t.Fatal(err)
	}
	if list, err := rcs.List(ctx, sel); err != nil || len(list.Items) != 0 {
		t.Fatalf("after deletecollection: %d items, %v", len(list.Items), err)
	}
}

// TestRuntimeClassAdmission: a pod naming a missing class is refused (also
// as a dry run, as upstream's e2e checks), a class's overhead and
// scheduling are applied, a disagreeing overhead is refused.
func TestRuntimeClassAdmission(t *testing.T) {
	ctx := context.Background()
	cs := shared.Client(t)
	const ns = "adm-runtimeclass"
	admissionNamespace(t, cs, ns, nil)
	overhead := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("1Mi")}
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "adm-rc-overhead"}, Handler: "runc",
		Overhead: &nodev1.Overhead{PodFixed: overhead},
		Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"sandbox": "yes"},
			Tolerations: []corev1.Toleration{{Key: "sandbox", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}}}
	if _, err := cs.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.NodeV1().RuntimeClasses().Delete(context.Background(), rc.Name, metav1.DeleteOptions{}) })
	podWith := func(name, class string) *corev1.Pod {
		p := plainPod(name)
		p.Spec.RuntimeClassName = &class
		return p
	}

	for _, opts := range []metav1.CreateOptions{{}, {DryRun: []string{metav1.DryRunAll}}} {
		_, err := cs.CoreV1().Pods(ns).Create(ctx, podWith("missing", "adm-rc-nonexistent"), opts)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `pod rejected: RuntimeClass "adm-rc-nonexistent" not found`) {
			t.Fatalf("pod naming a missing class (dryRun %v): %v", opts.DryRun, err)
		}
	}

	pod, err := cs.CoreV1().Pods(ns).Create(ctx, podWith("heavy", rc.Name), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(pod.Spec.Overhead, overhead) || pod.Spec.NodeSelector["sandbox"] != "yes" {
		t.Errorf("overhead %v node selector %v", pod.Spec.Overhead, pod.Spec.NodeSelector)
	}
	found := false
	for _, tol := range pod.Spec.Tolerations {
		found = found || tol.Key == "sandbox"
	}
	if !found {
		t.Errorf("class toleration not merged: %+v", pod.Spec.Tolerations)
	}

	other := podWith("other-overhead", rc.Name)
	other.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	_, err = cs.CoreV1().Pods(ns).Create(ctx, other, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead") {
		t.Fatalf("pod with another overhead: %v", err)
	}

	// A class deleted is refused at once: the plugin checks the live store
	// before refusing, and the cache follows the deletion.
	if err := cs.NodeV1().RuntimeClasses().Delete(ctx, rc.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err = cs.CoreV1().Pods(ns).Create(ctx, podWith("after-delete", rc.Name), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if apierrors.IsForbidden(err) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `pod rejected: RuntimeClass "adm-rc-overhead" not found`) {
		t.Fatalf("pod naming a deleted class: %v", err)
	}
}

// TestPodTemplates: CRUD, generation, deletecollection and the NAME
// CONTAINERS IMAGES POD LABELS table of core/v1 podtemplates.
func TestPodTemplates(t *testing.T) {
	ctx := context.Background()
	cs := shared.Client(t)
	ns := "podtemplates-api"
	admissionNamespace(t, cs, ns, nil)
	pts := cs.CoreV1().PodTemplates(ns)
	tmpl := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "tmpl", Labels: map[string]string{"podtemplate": "set"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1"}}}}}
	created, err := pts.Create(ctx, tmpl, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Generation != 1 || created.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways || created.Template.Spec.Containers[0].TerminationMessagePath == "" {
		t.Errorf("created: generation %d, not defaulted: %+v", created.Generation, created.Template.Spec)
	}
	cols, cells := tableOf(t, cs.CoreV1().RESTClient(), ns, "podtemplates")
	if strings.Join(cols, ",") != "Name,Containers,Images,Pod Labels" || cells[1] != "nginx" || cells[2] != "nginx:1" || cells[3] != "app=web" {
		t.Errorf("table %v %v", cols, cells)
	}
	patched, err := pts.Patch(ctx, "tmpl", types.StrategicMergePatchType, []byte(`{"metadata":{"labels":{"updated":"true"}}}`), metav1.PatchOptions{})
	if err != nil || patched.Labels["updated"] != "true" || patched.Generation != 1 {
		t.Fatalf("patch: %v %v", patched, err)
	}
	patched.Template.Spec.Containers[0].Image = "nginx:2"
	replaced, err := pts.Update(ctx, patched, metav1.UpdateOptions{})
	if err != nil || replaced.Template.Spec.Containers[0].Image != "nginx:2" || replaced.Generation != 2 {
		t.Fatalf("update: %v %v", replaced, err)
	}
	replaced.Template.Spec.Containers = nil
	_, err = pts.Update(ctx, replaced, metav1.UpdateOptions{})
	wantInvalid(t, err, "template.spec.containers", "")
	for _, n := range []string{"tmpl-2", "tmpl-3"} {
		c := tmpl.DeepCopy()
		c.Name = n
		if _, err := pts.Create(ctx, c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := pts.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "podtemplate=set"}); err != nil {
		t.Fatal(err)
	}
	if list, err := pts.List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 0 {
		t.Fatalf("after deletecollection: %+v %v", list, err)
	}
}

// TestVolumeAttachments: status cleared on create and written only through
// /status, spec immutable, the table, and deletecollection.
func TestVolumeAttachments(t *testing.T) {
	ctx := context.Background()
	cs := shared.Client(t)
	vas := cs.StorageV1().VolumeAttachments()
	pv := "pv-it"
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va-it", Labels: map[string]string{"test": "va"}},
		Spec:   storagev1.VolumeAttachmentSpec{Attacher: "e2e-test.storage.k8s.io", NodeName: "node-1", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv}},
		Status: storagev1.VolumeAttachmentStatus{Attached: true}}
	created, err := vas.Create(ctx, va, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = vas.DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "test=va"})
	})
	if created.Status.Attached {
		t.Error("create kept status.attached")
	}
	st, err := vas.Patch(ctx, "va-it", types.MergePatchType, []byte(`{"status":{"attached":true}}`), metav1.PatchOptions{}, "status")
	if err != nil || !st.Status.Attached {
		t.Fatalf("status patch: %v %v", st, err)
	}
	st.Status.Attached = false
	st.Spec.NodeName = "node-2" // dropped by /status
	st, err = vas.UpdateStatus(ctx, st, metav1.UpdateOptions{})
	if err != nil || st.Status.Attached || st.Spec.NodeName != "node-1" {
		t.Fatalf("status update: %+v %v", st, err)
	}
	st.Spec.NodeName = "node-2"
	_, err = vas.Update(ctx, st, metav1.UpdateOptions{})
	wantInvalid(t, err, "spec", "field is immutable")
	_, err = vas.Create(ctx, &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va-bad"}, Spec: storagev1.VolumeAttachmentSpec{Attacher: "a.b", NodeName: "n"}}, metav1.CreateOptions{})
	wantInvalid(t, err, "spec.source", "must specify exactly one of inlineVolumeSpec and persistentVolumeName")
	cols, cells := tableOf(t, cs.StorageV1().RESTClient(), "", "volumeattachments")
	if strings.Join(cols, " ") != "Name Attacher PV Node Attached Age" || cells[2] != "pv-it" || cells[4] != false {
		t.Errorf("table %v %v", cols, cells)
	}
	if err := vas.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "test=va"}); err != nil {
		t.Fatal(err)
	}
	if _, err := vas.Get(ctx, "va-it", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after deletecollection: %v", err)
	}
}

// TestCSIStorageCapacities: namespaced CRUD, lists across namespaces,
// watch, immutable storageClassName, the table.
func TestCSIStorageCapacities(t *testing.T) {
	ctx := context.Background()
	cs := shared.Client(t)
	const ns = "csc-api"
	admissionNamespace(t, cs, ns, nil)
	cscs := cs.StorageV1().CSIStorageCapacities(ns)
	w, err := cscs.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	q := resource.MustParse("10Gi")
	created, err := cscs.Create(ctx, &storagev1.CSIStorageCapacity{ObjectMeta: metav1.ObjectMeta{Name: "csc1"}, StorageClassName: "e2e.example.com", Capacity: &q}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ev := nextEventOf(t, w, watch.Added); ev.Object.(*storagev1.CSIStorageCapacity).UID != created.UID {
		t.Errorf("Added event for %+v", ev.Object)
	}
	all, err := cs.StorageV1().CSIStorageCapacities("").List(ctx, metav1.ListOptions{})
	if err != nil || len(all.Items) == 0 {
		t.Fatalf("list across namespaces: %v %v", all, err)
	}
	cols, cells := tableOf(t, cs.StorageV1().RESTClient(), ns, "csistoragecapacities")
	if strings.Join(cols, " ") != "Name StorageClassName Capacity" || cells[1] != "e2e.example.com" || cells[2] != "10Gi" {
		t.Errorf("table %v %v", cols, cells)
	}
	created.StorageClassName = "other"
	_, err = cscs.Update(ctx, created, metav1.UpdateOptions{})
	wantInvalid(t, err, "storageClassName", "field is immutable")
	if _, err := cscs.Patch(ctx, "csc1", types.MergePatchType, []byte(`{"capacity":"5Gi"}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if ev := nextEventOf(t, w, watch.Modified); ev.Object.(*storagev1.CSIStorageCapacity).Capacity.String() != "5Gi" {
		t.Errorf("Modified event %+v", ev.Object)
	}
	if err := cscs.Delete(ctx, "csc1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	nextEventOf(t, w, watch.Deleted)
}

// TestVersionFromModules: /version and the OpenAPI info report the
// Kubernetes release of the modules berth is built with.
func TestVersionFromModules(t *testing.T) {
	want, err := harness.ModuleRelease("k8s.io/api")
	if err != nil {
		t.Fatal(err)
	}
	cs := shared.Client(t)
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != want || v.Major != "1" || !strings.HasPrefix(want, "v1."+v.Minor+".") {
		t.Errorf("/version = %+v, want %s", v, want)
	}
	doc, err := cs.Discovery().OpenAPISchema()
	if err != nil {
		t.Fatal(err)
	}
	if doc.GetInfo().GetVersion() != want {
		t.Errorf("OpenAPI info.version = %q, want %q", doc.GetInfo().GetVersion(), want)
	}
}
