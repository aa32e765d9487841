package admission_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/tools/cache"
)

var (
	podGVK = corev1.SchemeGroupVersion.WithKind("Pod")
	podGVR = corev1.SchemeGroupVersion.WithResource("pods")
	alice  = &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}
)

// indexer returns a namespace-indexed store holding objs, for client-go listers.
func indexer(t *testing.T, objs ...any) cache.Indexer {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, o := range objs {
		if err := idx.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	return idx
}

func namespace(name string, phase corev1.NamespacePhase, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Status: corev1.NamespaceStatus{Phase: phase}}
}

func newPod(ns, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
	}
}

// createAttrs builds the attributes of a create of obj.
func createAttrs(obj runtime.Object, gvk schema.GroupVersionKind, gvr schema.GroupVersionResource, ns, name string, u user.Info) admission.Attributes {
	return admission.NewAttributesRecord(obj, nil, gvk, ns, name, gvr, "", admission.Create, &metav1.CreateOptions{}, false, u)
}

func podCreate(pod *corev1.Pod, u user.Info) admission.Attributes {
	return createAttrs(pod, podGVK, podGVR, pod.Namespace, pod.Name, u)
}

// admit runs a plugin's phases the way the chain does.
func admit(ctx context.Context, p admission.Interface, a admission.Attributes) error {
	if !p.Handles(a.GetOperation()) {
		return nil
	}
	if m, ok := p.(admission.MutationInterface); ok {
		if err := m.Admit(ctx, a, nil); err != nil {
			return err
		}
	}
	if v, ok := p.(admission.ValidationInterface); ok {
		return v.Validate(ctx, a, nil)
	}
	return nil
}

// wantStatus checks err is an API status error with the code and message.
func wantStatus(t *testing.T, err error, code int32, message string) {
	t.Helper()
	var se *apierrors.StatusError
	if !errors.As(err, &se) {
		t.Fatalf("error %v (%T) is not a StatusError", err, err)
	}
	if se.ErrStatus.Code != code {
		t.Errorf("code %d, want %d (%s)", se.ErrStatus.Code, code, se.ErrStatus.Message)
	}
	if !strings.Contains(se.ErrStatus.Message, message) {
		t.Errorf("message %q does not contain %q", se.ErrStatus.Message, message)
	}
}
