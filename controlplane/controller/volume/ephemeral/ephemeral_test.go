package ephemeral

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	storageephemeral "k8s.io/component-helpers/storage/ephemeral"
)

func TestClaimFor(t *testing.T) {
	class := "local"
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "pod-uid"},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
			VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"note": "x"}},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: &class,
					Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			},
		}}}}},
	}
	claim := ClaimFor(pod, &pod.Spec.Volumes[0])
	if claim.Name != "web-scratch" || claim.Namespace != "ns" {
		t.Fatalf("claim %s/%s, want ns/web-scratch", claim.Namespace, claim.Name)
	}
	if claim.Labels["app"] != "web" || claim.Annotations["note"] != "x" {
		t.Errorf("template metadata not copied: %v %v", claim.Labels, claim.Annotations)
	}
	if *claim.Spec.StorageClassName != "local" || claim.Spec.Resources.Requests.Storage().String() != "1Gi" {
		t.Errorf("template spec not copied: %+v", claim.Spec)
	}
	ref := metav1.GetControllerOf(claim)
	if ref == nil || ref.Kind != "Pod" || ref.UID != "pod-uid" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Fatalf("controller reference = %+v, want the pod blocking deletion", ref)
	}
	// The agent and the scheduler accept exactly such a claim for the pod.
	if err := storageephemeral.VolumeIsForPod(pod, claim); err != nil {
		t.Errorf("VolumeIsForPod: %v", err)
	}
	// The template is not shared with the claim.
	claim.Spec.AccessModes[0] = corev1.ReadOnlyMany
	if pod.Spec.Volumes[0].Ephemeral.VolumeClaimTemplate.Spec.AccessModes[0] != corev1.ReadWriteOnce {
		t.Error("ClaimFor aliases the pod's template")
	}
}
