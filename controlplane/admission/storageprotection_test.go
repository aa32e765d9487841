package admission_test

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"

	berthadmission "berth/controlplane/admission"
)

var (
	claimGVK  = corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim")
	claimGVR  = corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims")
	volumeGVK = corev1.SchemeGroupVersion.WithKind("PersistentVolume")
	volumeGVR = corev1.SchemeGroupVersion.WithResource("persistentvolumes")
)

func TestStorageObjectInUseProtectionClaims(t *testing.T) {
	for _, tc := range []struct {
		name       string
		finalizers []string
		want       []string
	}{
		{"added", nil, []string{"kubernetes.io/pvc-protection"}},
		{"kept after others", []string{"example.com/keep"}, []string{"example.com/keep", "kubernetes.io/pvc-protection"}},
		{"no duplicate", []string{"kubernetes.io/pvc-protection"}, []string{"kubernetes.io/pvc-protection"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", Finalizers: tc.finalizers}}
			a := createAttrs(claim, claimGVK, claimGVR, "ns", "c", alice)
			if err := admit(context.Background(), berthadmission.NewStorageObjectInUseProtection(), a); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(claim.Finalizers, tc.want) {
				t.Fatalf("finalizers %v, want %v", claim.Finalizers, tc.want)
			}
		})
	}
}

func TestStorageObjectInUseProtectionVolumes(t *testing.T) {
	for _, tc := range []struct {
		name       string
		finalizers []string
		want       []string
	}{
		{"added", nil, []string{"kubernetes.io/pv-protection"}},
		{"no duplicate", []string{"kubernetes.io/pv-protection"}, []string{"kubernetes.io/pv-protection"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "v", Finalizers: tc.finalizers}}
			a := createAttrs(pv, volumeGVK, volumeGVR, "", "v", alice)
			if err := admit(context.Background(), berthadmission.NewStorageObjectInUseProtection(), a); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(pv.Finalizers, tc.want) {
				t.Fatalf("finalizers %v, want %v", pv.Finalizers, tc.want)
			}
		})
	}
}

func TestStorageObjectInUseProtectionLeavesOthersAlone(t *testing.T) {
	p := berthadmission.NewStorageObjectInUseProtection()
	if p.Handles(admission.Update) || p.Handles(admission.Delete) {
		t.Fatal("the plugin handles more than creates")
	}
	pod := newPod("ns", "p")
	if err := admit(context.Background(), p, podCreate(pod, alice)); err != nil {
		t.Fatalf("a pod create: %v", err)
	}
	if len(pod.Finalizers) != 0 {
		t.Fatalf("a pod got finalizers %v", pod.Finalizers)
	}
	// A create on a claim's subresource is not the claim's create.
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
	a := admission.NewAttributesRecord(claim, nil, claimGVK, "ns", "c", claimGVR, "status", admission.Create, &metav1.CreateOptions{}, false, alice)
	if err := admit(context.Background(), p, a); err != nil {
		t.Fatal(err)
	}
	if len(claim.Finalizers) != 0 {
		t.Fatalf("a status subresource create added finalizers %v", claim.Finalizers)
	}
}
