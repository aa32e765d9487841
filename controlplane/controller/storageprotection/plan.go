// Package storageprotection holds upstream's two storage object in-use
// protection controllers. The StorageObjectInUseProtection admission plugin
// puts a protection finalizer on every new PersistentVolumeClaim and
// PersistentVolume; deleting one then only marks it (deletionTimestamp)
// until its controller removes the finalizer:
//
//   - pvc-protection (PVCController) removes kubernetes.io/pvc-protection
//     once no scheduled pod uses the claim, checking the informer's pods
//     first and then a live list of the namespace's pods;
//   - pv-protection (PVController) removes kubernetes.io/pv-protection once
//     the volume's status.phase is no longer Bound.
//
// Both also add their finalizer to objects created without it (before the
// admission plugin was enabled), as upstream does. The decisions are pure
// functions (PlanClaim, PodUsesClaim, PlanVolume); the controllers only
// read caches and write the finalizer list.
package storageprotection

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	storageephemeral "k8s.io/component-helpers/storage/ephemeral"

	"berth/controlplane/admission"
)

// The finalizers the controllers manage (added by the admission plugin).
const (
	PVCFinalizer = admission.PVCProtectionFinalizer
	PVFinalizer  = admission.PVProtectionFinalizer
)

// Action is what a plan decides for one object's finalizer.
type Action int

// The actions.
const (
	// Nothing: the finalizer is where it should be.
	Nothing Action = iota
	// AddFinalizer: a live object lacks the protection finalizer.
	AddFinalizer
	// RemoveFinalizer: the object is being deleted and no longer in use.
	RemoveFinalizer
)

// String names the action.
func (a Action) String() string {
	switch a {
	case AddFinalizer:
		return "add finalizer"
	case RemoveFinalizer:
		return "remove finalizer"
	}
	return "nothing"
}

// deletionCandidate reports whether obj is being deleted and still holds f.
func deletionCandidate(obj metav1.Object, f string) bool {
	return obj.GetDeletionTimestamp() != nil && slices.Contains(obj.GetFinalizers(), f)
}

// needsFinalizer reports whether obj is live and lacks f.
func needsFinalizer(obj metav1.Object, f string) bool {
	return obj.GetDeletionTimestamp() == nil && !slices.Contains(obj.GetFinalizers(), f)
}

// plan is the decision both controllers share; inUse is only consulted for
// a deletion candidate.
func plan(obj metav1.Object, f string, inUse func() bool) Action {
	switch {
	case deletionCandidate(obj, f):
		if inUse() {
			return Nothing
		}
		return RemoveFinalizer
	case needsFinalizer(obj, f):
		return AddFinalizer
	}
	return Nothing
}

// PlanClaim decides what to do with claim's protection finalizer, given
// the pods of its namespace (only looked at when the claim is being
// deleted).
func PlanClaim(claim *corev1.PersistentVolumeClaim, pods []*corev1.Pod) Action {
	return plan(claim, PVCFinalizer, func() bool { return ClaimInUse(claim, pods) })
}

// ClaimInUse reports whether any of pods uses claim (PodUsesClaim).
func ClaimInUse(claim *corev1.PersistentVolumeClaim, pods []*corev1.Pod) bool {
	return slices.ContainsFunc(pods, func(p *corev1.Pod) bool { return PodUsesClaim(p, claim) })
}

// PodUsesClaim is upstream's rule for a pod holding a claim: the pod is in
// the claim's namespace and scheduled (the kubelet only sees scheduled
// pods, and it refuses to start one whose claim is being deleted), and one
// of its volumes names the claim — directly (persistentVolumeClaim
// .claimName, whatever the pod's phase, until the pod object is gone), or
// as the generic ephemeral volume whose claim "<pod>-<volume>" the pod
// owns, as long as the pod is not shut down (force-deleted, or deleted
// with a zero grace period once the kubelet let it go).
func PodUsesClaim(pod *corev1.Pod, claim *corev1.PersistentVolumeClaim) bool {
	if pod.Namespace != claim.Namespace || pod.Spec.NodeName == "" {
		return false
	}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim.Name {
			return true
		}
		if v.Ephemeral != nil && !podShutDown(pod) &&
			storageephemeral.VolumeClaimName(pod, v) == claim.Name && storageephemeral.VolumeIsForPod(pod, claim) == nil {
			return true
		}
	}
	return false
}

// podShutDown reports whether the pod is only waiting to be removed: it
// has a deletionTimestamp with a zero grace period.
func podShutDown(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil && *pod.DeletionGracePeriodSeconds == 0
}

// claimKeys are the claims (namespace/name keys) pod's volumes refer to,
// directly or as generic ephemeral volumes.
func claimKeys(pod *corev1.Pod) []string {
	var keys []string
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		switch {
		case v.PersistentVolumeClaim != nil:
			keys = append(keys, pod.Namespace+"/"+v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			keys = append(keys, pod.Namespace+"/"+storageephemeral.VolumeClaimName(pod, v))
		}
	}
	return keys
}

// podTerminated reports whether the pod's containers are done for good.
func podTerminated(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// mayReleaseClaims reports whether a pod event can let a claim go: the pod
// was deleted, has terminated, or is not scheduled (upstream's filter).
func mayReleaseClaims(pod *corev1.Pod, deleted bool) bool {
	return deleted || podTerminated(pod) || pod.Spec.NodeName == ""
}

// PlanVolume decides what to do with pv's protection finalizer: upstream
// keeps a volume while its status.phase is Bound (the binder moves it to
// Released once its claim is gone) and lets it go in any other phase.
func PlanVolume(pv *corev1.PersistentVolume) Action {
	return plan(pv, PVFinalizer, func() bool { return VolumeInUse(pv) })
}

// VolumeInUse reports whether pv is bound to a claim (status.phase Bound).
func VolumeInUse(pv *corev1.PersistentVolume) bool {
	return pv.Status.Phase == corev1.VolumeBound
}

// withoutFinalizer returns finalizers without f, as a new slice.
func withoutFinalizer(finalizers []string, f string) []string {
	return slices.DeleteFunc(slices.Clone(finalizers), func(s string) bool { return s == f })
}

// withFinalizer returns finalizers with f appended, as a new slice.
func withFinalizer(finalizers []string, f string) []string {
	return append(slices.Clone(finalizers), f)
}
