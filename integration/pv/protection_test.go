package pv

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/integration/harness"
)

// The finalizers of storage object in-use protection, as upstream names them.
const (
	pvcProtection = "kubernetes.io/pvc-protection"
	pvProtection  = "kubernetes.io/pv-protection"
)

// testStorageProtection: new claims and volumes carry their protection
// finalizer; a deleted claim stays (Terminating) while a scheduled pod
// uses it and goes with the pod; a deleted volume stays while Bound and
// goes once its claim is gone and it is Released.
//
// "Stays" is shown without waiting for time to pass: each protection
// controller has one worker and a FIFO queue, so once an unused object
// deleted afterwards is gone, the protected one has been synced and kept.
func (e *env) testStorageProtection(t *testing.T) {
	t.Run("Claim", e.testClaimProtection)
	t.Run("Volume", e.testVolumeProtection)
}

func (e *env) testClaimProtection(t *testing.T) {
	created := e.createClaim(t, claim("protected", "1Mi", ptr("")))
	if !slices.Equal(created.Finalizers, []string{pvcProtection}) {
		t.Fatalf("new claim finalizers %v, want [%s]", created.Finalizers, pvcProtection)
	}
	// A pod placed on a node (no agent runs, so it stays Pending) using it.
	e.createPod(t, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "protected-user"},
		Spec: corev1.PodSpec{NodeName: otherNode, Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "protected"},
		}}}},
	})
	claims := e.client.CoreV1().PersistentVolumeClaims("default")
	if err := claims.Delete(ctx(t), "protected", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.createClaim(t, claim("unprotected", "1Mi", ptr("")))
	if err := claims.Delete(ctx(t), "unprotected", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitClaimGone(t, "unprotected")
	c, err := claims.Get(ctx(t), "protected", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("a claim in use went away: %v", err)
	}
	if c.DeletionTimestamp == nil || !slices.Equal(c.Finalizers, []string{pvcProtection}) {
		t.Fatalf("claim in use: deletionTimestamp %v finalizers %v, want set and [%s]", c.DeletionTimestamp, c.Finalizers, pvcProtection)
	}
	// No agent runs to finish the pod: remove it at once.
	if err := e.client.CoreV1().Pods("default").Delete(ctx(t), "protected-user", metav1.DeleteOptions{GracePeriodSeconds: ptr[int64](0)}); err != nil {
		t.Fatal(err)
	}
	e.waitClaimGone(t, "protected")
}

func (e *env) testVolumeProtection(t *testing.T) {
	pvs := e.client.CoreV1().PersistentVolumes()
	e.createPV(t, staticPV("protected-pv", "1Gi", "protected", corev1.PersistentVolumeReclaimRetain, nil))
	v, err := pvs.Get(ctx(t), "protected-pv", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(v.Finalizers, []string{pvProtection}) {
		t.Fatalf("new volume finalizers %v, want [%s]", v.Finalizers, pvProtection)
	}
	e.createClaim(t, claim("protected-pv-claim", "1Gi", ptr("protected")))
	e.waitClaim(t, "protected-pv-claim", "bound", bound)
	e.waitVolume(t, "protected-pv", "Bound", func(v *corev1.PersistentVolume) bool { return v != nil && v.Status.Phase == corev1.VolumeBound })

	if err := pvs.Delete(ctx(t), "protected-pv", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.createPV(t, staticPV("unprotected-pv", "1Gi", "nobody-asks", corev1.PersistentVolumeReclaimRetain, nil))
	if err := pvs.Delete(ctx(t), "unprotected-pv", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitVolume(t, "unprotected-pv", "deleted", func(v *corev1.PersistentVolume) bool { return v == nil })
	v, err = pvs.Get(ctx(t), "protected-pv", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("a bound volume went away: %v", err)
	}
	if v.DeletionTimestamp == nil || v.Status.Phase != corev1.VolumeBound || !slices.Equal(v.Finalizers, []string{pvProtection}) {
		t.Fatalf("bound volume: deletionTimestamp %v phase %s finalizers %v, want set, Bound and [%s]", v.DeletionTimestamp, v.Status.Phase, v.Finalizers, pvProtection)
	}
	// The claim goes (no pod uses it), the binder releases the volume, and
	// the released volume goes too.
	if err := e.client.CoreV1().PersistentVolumeClaims("default").Delete(ctx(t), "protected-pv-claim", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitClaimGone(t, "protected-pv-claim")
	e.waitVolume(t, "protected-pv", "deleted once released", func(v *corev1.PersistentVolume) bool { return v == nil })
}

// waitClaimGone waits until the claim no longer exists.
func (e *env) waitClaimGone(t *testing.T, name string) {
	t.Helper()
	harness.WaitFor(t, timeout, "claim "+name+" to be gone", func() (bool, string) {
		c, err := e.client.CoreV1().PersistentVolumeClaims("default").Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, fmt.Sprintf("deletionTimestamp %v finalizers %v", c.DeletionTimestamp, c.Finalizers)
	})
}
