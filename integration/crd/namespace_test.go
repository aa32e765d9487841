package crd_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"berth/integration/harness"
)

// TestNamespaceDeletionDeletesCustomObjects: deleting a namespace deletes
// the custom objects in it too; one held by a finalizer keeps the
// namespace Terminating, with the finalizer named in its
// NamespaceFinalizersRemaining condition, until the finalizer is removed.
func TestNamespaceDeletionDeletesCustomObjects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := shared.RESTConfig(t)
	crds := apiextensionsclient.NewForConfigOrDie(cfg).ApiextensionsV1().CustomResourceDefinitions()
	cs := kubernetes.NewForConfigOrDie(cfg)
	sprockets := schema.GroupVersionResource{Group: "example.net", Version: "v1", Resource: "sprockets"}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "sprockets.example.net"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.net", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "sprockets", Singular: "sprocket", Kind: "Sprocket"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
		},
	}
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = crds.Delete(ctx, crd.Name, metav1.DeleteOptions{}) })
	mustKubectl(t, "", "wait", "--for=condition=Established", "--timeout=30s", "crd/"+crd.Name)
	ns := fmt.Sprintf("sprockets-%d", time.Now().UnixNano()%100000)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(cfg)
	for _, o := range []struct {
		name       string
		finalizers []any
	}{{"plain", nil}, {"held", []any{"example.net/hold"}}} {
		meta := map[string]any{"name": o.name}
		if o.finalizers != nil {
			meta["finalizers"] = o.finalizers
		}
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.net/v1", "kind": "Sprocket", "metadata": meta}}
		if _, err := dyn.Resource(sprockets).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, 30*time.Second, "the plain sprocket deleted, the held one reported", func() (bool, string) {
		_, plainErr := dyn.Resource(sprockets).Namespace(ns).Get(ctx, "plain", metav1.GetOptions{})
		held, heldErr := dyn.Resource(sprockets).Namespace(ns).Get(ctx, "held", metav1.GetOptions{})
		n, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil || heldErr != nil {
			return false, fmt.Sprint(err, heldErr)
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NamespaceFinalizersRemaining {
				return apierrors.IsNotFound(plainErr) && held.GetDeletionTimestamp() != nil && c.Status == corev1.ConditionTrue &&
					strings.Contains(c.Message, "example.net/hold in 1 resource instances"), c.Message
			}
		}
		return false, "no NamespaceFinalizersRemaining condition"
	})
	if _, err := dyn.Resource(sprockets).Namespace(ns).Patch(ctx, "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, 30*time.Second, "namespace removed", func() (bool, string) {
		_, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}
