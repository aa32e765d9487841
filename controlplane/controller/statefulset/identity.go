package statefulset

import (
	"fmt"
	"regexp"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"berth/controlplane/controller/controllerref"
)

// podKind is the Pod kind, in claims' owner references.
var podKind = corev1.SchemeGroupVersion.WithKind("Pod")

// podNamePattern splits a stateful pod's name into parent and ordinal.
var podNamePattern = regexp.MustCompile("(.*)-([0-9]+)$")

// ParentAndOrdinal returns the stateful set name and ordinal a pod's name
// carries; the ordinal is -1 when the name has none.
func ParentAndOrdinal(pod *corev1.Pod) (string, int) {
	m := podNamePattern.FindStringSubmatch(pod.Name)
	if len(m) < 3 {
		return "", -1
	}
	n, err := strconv.ParseInt(m[2], 10, 32)
	if err != nil {
		return m[1], -1
	}
	return m[1], int(n)
}

// Ordinal is a pod's ordinal (-1: none).
func Ordinal(pod *corev1.Pod) int {
	_, o := ParentAndOrdinal(pod)
	return o
}

// isMemberOf reports whether pod's name says it belongs to set.
func isMemberOf(set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	parent, _ := ParentAndOrdinal(pod)
	return parent == set.Name
}

// startOrdinal is the first ordinal (spec.ordinals.start).
func startOrdinal(set *appsv1.StatefulSet) int {
	if set.Spec.Ordinals != nil {
		return int(set.Spec.Ordinals.Start)
	}
	return 0
}

func replicasOf(set *appsv1.StatefulSet) int {
	if set.Spec.Replicas == nil {
		return 1
	}
	return int(*set.Spec.Replicas)
}

// endOrdinal is the last ordinal that should run.
func endOrdinal(set *appsv1.StatefulSet) int { return startOrdinal(set) + replicasOf(set) - 1 }

// inRange reports whether pod's ordinal is one set should run.
func inRange(set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	o := Ordinal(pod)
	return o >= startOrdinal(set) && o <= endOrdinal(set)
}

// PodName is the name of set's pod with ordinal.
func PodName(set *appsv1.StatefulSet, ordinal int) string {
	return fmt.Sprintf("%s-%d", set.Name, ordinal)
}

// ClaimName is the name of the claim from template for set's pod ordinal.
func ClaimName(set *appsv1.StatefulSet, template *corev1.PersistentVolumeClaim, ordinal int) string {
	return fmt.Sprintf("%s-%s-%d", template.Name, set.Name, ordinal)
}

// identityMatches: the pod's name, namespace and pod-name label are those
// of its ordinal in set.
func identityMatches(set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	parent, o := ParentAndOrdinal(pod)
	return o >= 0 && parent == set.Name && pod.Name == PodName(set, o) && pod.Namespace == set.Namespace &&
		pod.Labels[appsv1.StatefulSetPodNameLabel] == pod.Name
}

// storageMatches: every claim template has a volume of its name using the
// pod's claim.
func storageMatches(set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	o := Ordinal(pod)
	if o < 0 {
		return false
	}
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		vols[v.Name] = v
	}
	for i := range set.Spec.VolumeClaimTemplates {
		t := &set.Spec.VolumeClaimTemplates[i]
		v, ok := vols[t.Name]
		if !ok || v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != ClaimName(set, t, o) {
			return false
		}
	}
	return true
}

// Claims are the claims pod should have, by template name: each template
// named for the pod, in set's namespace, labelled with set's selector's
// matchLabels.
func Claims(set *appsv1.StatefulSet, pod *corev1.Pod) map[string]*corev1.PersistentVolumeClaim {
	o := Ordinal(pod)
	out := make(map[string]*corev1.PersistentVolumeClaim, len(set.Spec.VolumeClaimTemplates))
	for i := range set.Spec.VolumeClaimTemplates {
		c := set.Spec.VolumeClaimTemplates[i].DeepCopy()
		c.Name = ClaimName(set, &set.Spec.VolumeClaimTemplates[i], o)
		c.Namespace = set.Namespace
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		if set.Spec.Selector != nil {
			for k, v := range set.Spec.Selector.MatchLabels {
				c.Labels[k] = v
			}
		}
		out[set.Spec.VolumeClaimTemplates[i].Name] = c
	}
	return out
}

// updateStorage points pod's claim-template volumes at its claims (other
// volumes are kept).
func updateStorage(set *appsv1.StatefulSet, pod *corev1.Pod) {
	claims := Claims(set, pod)
	var vols []corev1.Volume
	for i := range set.Spec.VolumeClaimTemplates {
		name := set.Spec.VolumeClaimTemplates[i].Name
		if _, dup := containsVolume(vols, name); dup {
			continue
		}
		vols = append(vols, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claims[name].Name}}})
	}
	for _, v := range pod.Spec.Volumes {
		if _, ok := claims[v.Name]; !ok {
			vols = append(vols, v)
		}
	}
	pod.Spec.Volumes = vols
}

func containsVolume(vols []corev1.Volume, name string) (int, bool) {
	for i, v := range vols {
		if v.Name == name {
			return i, true
		}
	}
	return -1, false
}

// updateIdentity sets pod's name, namespace and the pod-name and
// pod-index labels from its ordinal.
func updateIdentity(set *appsv1.StatefulSet, pod *corev1.Pod) {
	o := Ordinal(pod)
	pod.Name = PodName(set, o)
	pod.Namespace = set.Namespace
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[appsv1.StatefulSetPodNameLabel] = pod.Name
	pod.Labels[appsv1.PodIndexLabel] = strconv.Itoa(o)
}

// NewPod is set's pod with ordinal at revision: the template's labels,
// annotations, finalizers and spec, hostname the pod's name, subdomain the
// governing service, its claims as volumes, and the revision label.
func NewPod(set *appsv1.StatefulSet, ordinal int, revision string) *corev1.Pod {
	t := set.Spec.Template.DeepCopy()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            PodName(set, ordinal),
			Namespace:       set.Namespace,
			Labels:          t.Labels,
			Annotations:     t.Annotations,
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*controllerref.NewControllerRef(set, Kind)},
		},
		Spec: t.Spec,
	}
	updateIdentity(set, pod)
	pod.Spec.Hostname = pod.Name
	pod.Spec.Subdomain = set.Spec.ServiceName
	updateStorage(set, pod)
	pod.Labels[appsv1.StatefulSetRevisionLabel] = revision
	return pod
}

// Revision is the revision label of pod.
func Revision(pod *corev1.Pod) string { return pod.Labels[appsv1.StatefulSetRevisionLabel] }

// retention is set's PVC retention policy (Retain/Retain when unset).
func retention(set *appsv1.StatefulSet) appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy {
	if p := set.Spec.PersistentVolumeClaimRetentionPolicy; p != nil {
		return *p
	}
	return appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
		WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
	}
}

const (
	retain = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	del    = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
)

func matchesRef(ref *metav1.OwnerReference, obj metav1.Object, gvk schema.GroupVersionKind) bool {
	return ref.APIVersion == gvk.GroupVersion().String() && ref.Kind == gvk.Kind && ref.Name == obj.GetName()
}

func hasOwnerRef(target, owner metav1.Object) bool {
	for _, r := range target.GetOwnerReferences() {
		if r.UID == owner.GetUID() {
			return true
		}
	}
	return false
}

// hasStaleOwnerRef: target names obj (by kind and name) with another UID.
func hasStaleOwnerRef(target metav1.Object, obj metav1.Object, gvk schema.GroupVersionKind) bool {
	for _, r := range target.GetOwnerReferences() {
		if matchesRef(&r, obj, gvk) {
			return r.UID != obj.GetUID()
		}
	}
	return false
}

// hasUnexpectedController: with a Delete policy, claim has a controller
// that is neither set nor pod, or a stale reference to them.
func hasUnexpectedController(claim *corev1.PersistentVolumeClaim, set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	p := retention(set)
	if p.WhenScaled == retain && p.WhenDeleted == retain {
		return false
	}
	for _, r := range claim.OwnerReferences {
		switch {
		case matchesRef(&r, set, Kind):
			if r.UID != set.UID {
				return true
			}
		case matchesRef(&r, pod, podKind):
			if r.UID != pod.UID {
				return true
			}
		case r.Controller != nil && *r.Controller:
			return true
		}
	}
	return false
}

// hasNonControllerOwner: set or pod owns claim without being its controller.
func hasNonControllerOwner(claim *corev1.PersistentVolumeClaim, set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	for _, r := range claim.OwnerReferences {
		if (r.UID == set.UID || r.UID == pod.UID) && (r.Controller == nil || !*r.Controller) {
			return true
		}
	}
	return false
}

// claimOwnerUpToDate reports whether claim's owner references say what the
// retention policy asks: whenDeleted Delete makes set the claim's
// controller (the garbage collector deletes it with set), whenScaled Delete
// makes a scaled-down pod its controller (deleted with the pod).
func claimOwnerUpToDate(claim *corev1.PersistentVolumeClaim, set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	if hasStaleOwnerRef(claim, set, Kind) || hasStaleOwnerRef(claim, pod, podKind) {
		return true // an old set's or pod's claim: left to the garbage collector
	}
	if hasUnexpectedController(claim, set, pod) {
		return !(hasOwnerRef(claim, set) || hasOwnerRef(claim, pod))
	}
	if hasNonControllerOwner(claim, set, pod) {
		return false
	}
	p := retention(set)
	scaledDown := !inRange(set, pod)
	switch {
	case p.WhenScaled == retain && p.WhenDeleted == del:
		return hasOwnerRef(claim, set) && !hasOwnerRef(claim, pod)
	case p.WhenScaled == del && p.WhenDeleted == retain:
		return !hasOwnerRef(claim, set) && scaledDown == hasOwnerRef(claim, pod)
	case p.WhenScaled == del && p.WhenDeleted == del:
		return scaledDown != hasOwnerRef(claim, set) && scaledDown == hasOwnerRef(claim, pod)
	default: // Retain/Retain (and unknown policies)
		return !hasOwnerRef(claim, set) && !hasOwnerRef(claim, pod)
	}
}

// fixClaimOwners rewrites claim's references to set and pod as
// claimOwnerUpToDate wants them.
func fixClaimOwners(claim *corev1.PersistentVolumeClaim, set *appsv1.StatefulSet, pod *corev1.Pod) {
	unexpected := hasUnexpectedController(claim, set, pod)
	var refs []metav1.OwnerReference
	for _, r := range claim.OwnerReferences {
		if !matchesRef(&r, set, Kind) && !matchesRef(&r, pod, podKind) {
			refs = append(refs, r)
		}
	}
	if !unexpected {
		p := retention(set)
		scaledDown := !inRange(set, pod)
		switch {
		case p.WhenScaled == retain && p.WhenDeleted == del:
			refs = addControllerRef(refs, set, Kind)
		case p.WhenScaled == del && p.WhenDeleted == retain:
			if scaledDown {
				refs = addControllerRef(refs, pod, podKind)
			}
		case p.WhenScaled == del && p.WhenDeleted == del:
			if scaledDown {
				refs = addControllerRef(refs, pod, podKind)
			} else {
				refs = addControllerRef(refs, set, Kind)
			}
		}
	}
	claim.OwnerReferences = refs
}

func addControllerRef(refs []metav1.OwnerReference, owner metav1.Object, gvk schema.GroupVersionKind) []metav1.OwnerReference {
	for _, r := range refs {
		if r.UID == owner.GetUID() {
			return refs
		}
	}
	return append(refs, *metav1.NewControllerRef(owner, gvk))
}
