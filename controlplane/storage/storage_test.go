package storage

import (
	"bytes"
	"errors"
	"testing"

	"go.etcd.io/etcd/client/v3/kubernetes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"berth/internal/api/scheme"
	"berth/internal/errdefs"
)

// TestCodecStoresServedVersionAsProtobuf: objects go to etcd as
// Kubernetes protobuf of the served (external) version and come back whole.
func TestCodecStoresServedVersionAsProtobuf(t *testing.T) {
	f, err := New(Config{Client: &kubernetes.Client{}, Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	codec := f.Codec(corev1.SchemeGroupVersion)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"a": "b"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	data, err := runtime.Encode(codec, pod)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte("k8s\x00")) {
		t.Fatalf("not Kubernetes protobuf: %q", data[:8])
	}
	out := &corev1.Pod{}
	if err := runtime.DecodeInto(codec, data, out); err != nil {
		t.Fatal(err)
	}
	if out.Name != "p" || out.Labels["a"] != "b" || out.Spec.Containers[0].Image != "busybox" {
		t.Fatalf("decoded %+v", out)
	}

	opts, err := f.GetRESTOptions(schema.GroupResource{Resource: "pods"}, &corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	if opts.ResourcePrefix != "pods" || opts.StorageConfig.Prefix != DefaultPrefix || opts.StorageConfig.EncodeVersioner != corev1.SchemeGroupVersion {
		t.Fatalf("REST options %+v", opts)
	}
	if _, err := New(Config{}); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("empty config: %v", err)
	}
}
