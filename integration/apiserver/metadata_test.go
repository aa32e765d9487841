package apiserver_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

// TestMetadataClient: client-go's metadata client lists, watches, gets and
// patches as=PartialObjectMetadata[List], and a metadata-only informer
// syncs and sees changes, as against kube-apiserver.
func TestMetadataClient(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ns := newNamespace(t, shared)
	cs := shared.Client(t)
	mc, err := metadata.NewForConfig(shared.RESTConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	cms := corev1.SchemeGroupVersion.WithResource("configmaps")
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"k": "v"}}, Data: map[string]string{"big": "data"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	list, err := mc.Resource(cms).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "a" || list.Items[0].Labels["k"] != "v" || list.ResourceVersion == "" {
		t.Fatalf("metadata list: %v %+v", err, list)
	}

	w, err := mc.Resource(cms).Namespace(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatalf("metadata watch: %v", err)
	}
	defer w.Stop()
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		m, ok := ev.Object.(*metav1.PartialObjectMetadata)
		if ev.Type != watch.Added || !ok || m.Name != "b" {
			t.Fatalf("metadata watch event %s %T %+v", ev.Type, ev.Object, ev.Object)
		}
	case <-ctx.Done():
		t.Fatal("no metadata watch event")
	}

	patched, err := mc.Resource(cms).Namespace(ns).Patch(ctx, "a", types.MergePatchType, []byte(`{"metadata":{"labels":{"k":"w"}}}`), metav1.PatchOptions{})
	if err != nil || patched.Labels["k"] != "w" {
		t.Fatalf("metadata patch: %v %+v", err, patched)
	}
	// A patch (not apply) of a missing object is 404, never a create.
	if _, err := mc.Resource(cms).Namespace(ns).Patch(ctx, "missing", types.MergePatchType, []byte(`{"metadata":{"labels":{"k":"w"}}}`), metav1.PatchOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("patch of a missing configmap: %v, want 404", err)
	}
	if _, err := cs.CoreV1().Events(ns).Patch(ctx, "missing", types.StrategicMergePatchType, []byte(`{"count":2}`), metav1.PatchOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("patch of a missing event: %v, want 404", err)
	}

	factory := metadatainformer.NewFilteredSharedInformerFactory(mc, 0, ns, nil)
	inf := factory.ForResource(cms).Informer()
	seen := make(chan string, 10)
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, obj any) {
		if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
			seen <- m.Name + "=" + m.Labels["k"]
		}
	}}); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("metadata informer did not sync")
	}
	if n := len(inf.GetStore().List()); n != 2 {
		t.Fatalf("metadata informer has %d objects, want 2", n)
	}
	if _, err := mc.Resource(cms).Namespace(ns).Patch(ctx, "b", types.MergePatchType, []byte(`{"metadata":{"labels":{"k":"x"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case s := <-seen:
			if s == "b=x" {
				return
			}
		case <-ctx.Done():
			t.Fatal("the metadata informer saw no update")
		}
	}
}
