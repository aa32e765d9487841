package admission_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"

	berthadmission "berth/controlplane/admission"
)

func storageClass(name string, created time.Time, isDefault string) *storagev1.StorageClass {
	c := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)}, Provisioner: "csi.example"}
	if isDefault != "" {
		c.Annotations = map[string]string{"storageclass.kubernetes.io/is-default-class": isDefault}
	}
	return c
}

func TestDefaultStorageClass(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	empty := ""
	named := "fast"
	for _, tc := range []struct {
		name    string
		classes []any
		class   *string
		want    *string
	}{
		{"no class named: the default", []any{storageClass("local", t0, "true"), storageClass("other", t0, "")}, nil, ptr("local")},
		{"several defaults: the newest", []any{storageClass("old", t0, "true"), storageClass("new", t0.Add(time.Hour), "true")}, nil, ptr("new")},
		{"a default marked false is none", []any{storageClass("local", t0, "false")}, nil, nil},
		{"no default class: unchanged", nil, nil, nil},
		{"empty class asks for none", []any{storageClass("local", t0, "true")}, &empty, &empty},
		{"a named class is kept", []any{storageClass("local", t0, "true")}, &named, &named},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := berthadmission.NewDefaultStorageClass(storagelisters.NewStorageClassLister(indexer(t, tc.classes...)))
			if err != nil {
				t.Fatal(err)
			}
			claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}, Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: tc.class}}
			a := createAttrs(claim, corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"), corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"), "ns", "c", alice)
			if err := admit(context.Background(), p, a); err != nil {
				t.Fatal(err)
			}
			got := claim.Spec.StorageClassName
			if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Fatalf("storageClassName %v, want %v", deref(got), deref(tc.want))
			}
		})
	}
}

func TestDefaultStorageClassLeavesPodsAlone(t *testing.T) {
	p, err := berthadmission.NewDefaultStorageClass(storagelisters.NewStorageClassLister(indexer(t, storageClass("local", time.Now(), "true"))))
	if err != nil {
		t.Fatal(err)
	}
	pod := newPod("ns", "p")
	if err := admit(context.Background(), p, podCreate(pod, alice)); err != nil {
		t.Fatalf("a pod create: %v", err)
	}
}

func ptr(s string) *string { return &s }

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
