package admission_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"

	berthadm "berth/controlplane/admission"
)

func TestNamespaceLifecycle(t *testing.T) {
	nss := indexer(t,
		namespace("active", corev1.NamespaceActive, nil),
		namespace("leaving", corev1.NamespaceTerminating, nil),
		namespace("kube-system", corev1.NamespaceActive, nil),
	)
	// "fresh" exists in storage but the lister has not seen it yet.
	client := fake.NewClientset(namespace("fresh", corev1.NamespaceActive, nil))
	p, err := berthadm.NewNamespaceLifecycle(berthadm.NamespaceLifecycleConfig{Namespaces: corelisters.NewNamespaceLister(nss), Client: client})
	if err != nil {
		t.Fatal(err)
	}
	nsGVK, nsGVR := corev1.SchemeGroupVersion.WithKind("Namespace"), corev1.SchemeGroupVersion.WithResource("namespaces")
	ctx := context.Background()

	if err := admit(ctx, p, podCreate(newPod("active", "p"), alice)); err != nil {
		t.Errorf("create in active namespace: %v", err)
	}
	if err := admit(ctx, p, podCreate(newPod("fresh", "p"), alice)); err != nil {
		t.Errorf("create in namespace only storage knows: %v", err)
	}
	err = admit(ctx, p, podCreate(newPod("missing", "p"), alice))
	if !errors.IsNotFound(err) {
		t.Errorf("create in missing namespace: %v, want NotFound", err)
	}
	err = admit(ctx, p, podCreate(newPod("leaving", "p"), alice))
	wantStatus(t, err, 403, `pods "p" is forbidden: unable to create new content in namespace leaving because it is being terminated`)
	if se, ok := err.(*errors.StatusError); !ok || len(se.ErrStatus.Details.Causes) == 0 || se.ErrStatus.Details.Causes[0].Type != corev1.NamespaceTerminatingCause {
		t.Errorf("terminating refusal lacks the NamespaceTerminating cause: %v", err)
	}
	upd := admission.NewAttributesRecord(newPod("leaving", "p"), newPod("leaving", "p"), podGVK, "leaving", "p", podGVR, "status", admission.Update, &metav1.UpdateOptions{}, false, alice)
	if err := admit(ctx, p, upd); err != nil {
		t.Errorf("update in terminating namespace: %v", err)
	}
	del := admission.NewAttributesRecord(nil, nil, podGVK, "missing", "p", podGVR, "", admission.Delete, &metav1.DeleteOptions{}, false, alice)
	if err := admit(ctx, p, del); err != nil {
		t.Errorf("delete is always allowed: %v", err)
	}
	for _, immortal := range []string{"default", "kube-system", "kube-public"} {
		del := admission.NewAttributesRecord(nil, nil, nsGVK, "", immortal, nsGVR, "", admission.Delete, &metav1.DeleteOptions{}, false, alice)
		wantStatus(t, admit(ctx, p, del), 403, "this namespace may not be deleted")
	}
	del = admission.NewAttributesRecord(nil, nil, nsGVK, "", "active", nsGVR, "", admission.Delete, &metav1.DeleteOptions{}, false, alice)
	if err := admit(ctx, p, del); err != nil {
		t.Errorf("delete ordinary namespace: %v", err)
	}
	create := createAttrs(namespace("new", "", nil), nsGVK, nsGVR, "", "new", alice)
	if err := admit(ctx, p, create); err != nil {
		t.Errorf("create namespace: %v", err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	if err := admit(ctx, p, createAttrs(node, corev1.SchemeGroupVersion.WithKind("Node"), corev1.SchemeGroupVersion.WithResource("nodes"), "", "n", alice)); err != nil {
		t.Errorf("cluster-scoped create: %v", err)
	}
}
