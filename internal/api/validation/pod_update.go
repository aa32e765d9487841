package validation

import (
	"fmt"
	"math"
	"net/netip"
	"reflect"
	"strings"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// updatablePodSpecFields names what a pod update may change, in upstream's words.
var updatablePodSpecFields = []string{
	"`spec.containers[*].image`",
	"`spec.initContainers[*].image`",
	"`spec.activeDeadlineSeconds`",
	"`spec.tolerations` (only additions to existing tolerations)",
	"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
}

// systemPodConditions are the condition types the system sets; other types
// must be qualified names.
var systemPodConditions = sets.New(string(v1.PodScheduled), string(v1.PodReady), string(v1.PodInitialized),
	string(v1.ContainersReady), string(v1.DisruptionTarget), string(v1.PodReadyToStartContainers), string(v1.PodResizePending), string(v1.PodResizeInProgress))

// ValidatePodUpdate validates an update of a pod's metadata and spec: the
// new pod must be valid, and the spec may change only in container images,
// activeDeadlineSeconds (only down, never unset), tolerations (only
// additions, or a changed tolerationSeconds), removed scheduling gates and a
// negative terminationGracePeriodSeconds set to 1. Anything else is
// Forbidden on "spec" with a diff, as upstream reports it.
func ValidatePodUpdate(newPod, oldPod *v1.Pod) field.ErrorList {
	metaPath := field.NewPath("metadata")
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newPod.ObjectMeta, &oldPod.ObjectMeta, metaPath)
	specPath := field.NewPath("spec")
	errs = append(errs, ValidatePodSpec(&newPod.Spec, specPath)...)

	cerrs, stop := validateContainerUpdates(newPod.Spec.Containers, oldPod.Spec.Containers, specPath.Child("containers"))
	errs = append(errs, cerrs...)
	if stop {
		return errs
	}
	cerrs, stop = validateContainerUpdates(newPod.Spec.InitContainers, oldPod.Spec.InitContainers, specPath.Child("initContainers"))
	errs = append(errs, cerrs...)
	if stop {
		return errs
	}

	adsPath := specPath.Child("activeDeadlineSeconds")
	if newPod.Spec.ActiveDeadlineSeconds != nil {
		n := *newPod.Spec.ActiveDeadlineSeconds
		if n < 0 || n > math.MaxInt32 {
			return append(errs, field.Invalid(adsPath, n, validation.InclusiveRangeError(0, math.MaxInt32)))
		}
		if oldPod.Spec.ActiveDeadlineSeconds != nil && *oldPod.Spec.ActiveDeadlineSeconds < n {
			return append(errs, field.Invalid(adsPath, n, "must be less than or equal to previous value"))
		}
	} else if oldPod.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Invalid(adsPath, newPod.Spec.ActiveDeadlineSeconds, "must not update from a positive integer to nil value"))
	}

	errs = append(errs, validateOnlyAddedTolerations(newPod.Spec.Tolerations, oldPod.Spec.Tolerations, specPath.Child("tolerations"))...)
	errs = append(errs, validateOnlyDeletedSchedulingGates(newPod.Spec.SchedulingGates, oldPod.Spec.SchedulingGates, specPath.Child("schedulingGates"))...)

	if apiequality.Semantic.DeepEqual(newPod.Spec, oldPod.Spec) {
		return errs
	}
	// Undo the allowed changes; whatever differs afterwards is forbidden.
	munged := newPod.Spec.DeepCopy()
	for i := range munged.Containers {
		munged.Containers[i].Image = oldPod.Spec.Containers[i].Image
	}
	for i := range munged.InitContainers {
		munged.InitContainers[i].Image = oldPod.Spec.InitContainers[i].Image
	}
	munged.ActiveDeadlineSeconds = oldPod.Spec.ActiveDeadlineSeconds
	munged.SchedulingGates = oldPod.Spec.SchedulingGates
	munged.Tolerations = oldPod.Spec.Tolerations
	if len(oldPod.Spec.SchedulingGates) > 0 {
		// A gated pod may gain node selector entries (not change or lose them).
		sel := specPath.Child("nodeSelector")
		for k, v := range oldPod.Spec.NodeSelector {
			if nv, ok := newPod.Spec.NodeSelector[k]; !ok || nv != v {
				errs = append(errs, field.Invalid(sel, newPod.Spec.NodeSelector, "only additions to spec.nodeSelector are allowed (no mutations or deletions)"))
				break
			}
		}
		munged.NodeSelector = oldPod.Spec.NodeSelector
	}
	if old := oldPod.Spec.TerminationGracePeriodSeconds; old != nil && *old < 0 &&
		munged.TerminationGracePeriodSeconds != nil && *munged.TerminationGracePeriodSeconds == 1 {
		munged.TerminationGracePeriodSeconds = old
	}
	if !apiequality.Semantic.DeepEqual(*munged, oldPod.Spec) {
		diff := cmp.Diff(oldPod.Spec, *munged)
		errs = append(errs, field.Forbidden(specPath, fmt.Sprintf("pod updates may not change fields other than %s\n%v", strings.Join(updatablePodSpecFields, ","), diff)))
	}
	return errs
}

func validateContainerUpdates(newCs, oldCs []v1.Container, fldPath *field.Path) (field.ErrorList, bool) {
	if len(newCs) != len(oldCs) {
		return field.ErrorList{field.Forbidden(fldPath, "pod updates may not add or remove containers")}, true
	}
	// Empty or padded images are reported by validateContainerCommon.
	return nil, false
}

func validateOnlyAddedTolerations(newTs, oldTs []v1.Toleration, fldPath *field.Path) field.ErrorList {
	for _, old := range oldTs {
		found := false
		for _, nt := range newTs {
			clone := *old.DeepCopy()
			clone.TolerationSeconds = nt.TolerationSeconds
			if reflect.DeepEqual(clone, nt) {
				found = true
				break
			}
		}
		if !found {
			return field.ErrorList{field.Forbidden(fldPath, "existing toleration can not be modified except its tolerationSeconds")}
		}
	}
	return nil
}

func validateOnlyDeletedSchedulingGates(newGates, oldGates []v1.PodSchedulingGate, fldPath *field.Path) field.ErrorList {
	old := sets.New[string]()
	for _, g := range oldGates {
		old.Insert(g.Name)
	}
	var errs field.ErrorList
	for i, g := range newGates {
		if !old.Has(g.Name) {
			errs = append(errs, field.Forbidden(fldPath.Index(i).Child("name"), fmt.Sprintf("only deletion is allowed, but found new scheduling gate '%s'", g.Name)))
		}
	}
	return errs
}

// ValidatePodStatusUpdate validates an update through pods/status: metadata
// update rules, spec.nodeName unchanged, a valid nominatedNodeName, an
// immutable qosClass, condition types, no terminated container brought back
// unless the restart policy allows it, and valid, non-duplicate pod IPs.
func ValidatePodStatusUpdate(newPod, oldPod *v1.Pod) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newPod.ObjectMeta, &oldPod.ObjectMeta, field.NewPath("metadata"))
	statusPath := field.NewPath("status")
	errs = append(errs, validatePodConditions(newPod.Status.Conditions, statusPath.Child("conditions"))...)
	if newPod.Spec.NodeName != oldPod.Spec.NodeName {
		errs = append(errs, field.Forbidden(statusPath.Child("nodeName"), "may not be changed directly"))
	}
	if n := newPod.Status.NominatedNodeName; n != oldPod.Status.NominatedNodeName && n != "" {
		errs = append(errs, validateNodeName(n, statusPath.Child("nominatedNodeName"))...)
	}
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(newPod.Status.QOSClass, oldPod.Status.QOSClass, statusPath.Child("qosClass"))...)
	errs = append(errs, validateContainerStateTransition(newPod.Status.ContainerStatuses, oldPod.Status.ContainerStatuses, statusPath.Child("containerStatuses"), oldPod.Spec.RestartPolicy)...)
	errs = append(errs, validateContainerStateTransition(newPod.Status.InitContainerStatuses, oldPod.Status.InitContainerStatuses, statusPath.Child("initContainerStatuses"), initRestartPolicy(oldPod))...)
	errs = append(errs, validateContainerStateTransition(newPod.Status.EphemeralContainerStatuses, oldPod.Status.EphemeralContainerStatuses, statusPath.Child("ephemeralContainerStatuses"), v1.RestartPolicyNever)...)
	errs = append(errs, validatePodIPs(&newPod.Status, statusPath)...)
	return errs
}

// initRestartPolicy: init containers of a pod with restartPolicy Always are
// retried on failure, like OnFailure.
func initRestartPolicy(pod *v1.Pod) v1.RestartPolicy {
	if pod.Spec.RestartPolicy == v1.RestartPolicyAlways {
		return v1.RestartPolicyOnFailure
	}
	return pod.Spec.RestartPolicy
}

func validatePodConditions(conds []v1.PodCondition, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, c := range conds {
		if systemPodConditions.Has(string(c.Type)) {
			continue
		}
		errs = append(errs, validateQualifiedName(string(c.Type), fldPath.Index(i).Child("type"))...)
	}
	return errs
}

func validateContainerStateTransition(newStatuses, oldStatuses []v1.ContainerStatus, fldPath *field.Path, policy v1.RestartPolicy) field.ErrorList {
	if policy == v1.RestartPolicyAlways {
		return nil
	}
	var errs field.ErrorList
	for i, old := range oldStatuses {
		if old.State.Terminated == nil {
			continue
		}
		if old.State.Terminated.ExitCode != 0 && policy == v1.RestartPolicyOnFailure {
			continue
		}
		for _, n := range newStatuses {
			if n.Name == old.Name && n.State.Terminated == nil {
				errs = append(errs, field.Forbidden(fldPath.Index(i).Child("state"), "may not be transitioned to non-terminated state"))
			}
		}
	}
	return errs
}

func validatePodIPs(status *v1.PodStatus, statusPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if status.PodIP != "" {
		errs = append(errs, validation.IsValidIP(statusPath.Child("podIP"), status.PodIP)...)
	}
	ipsPath := statusPath.Child("podIPs")
	seen := sets.New[string]()
	families := map[bool]int{}
	for i, ip := range status.PodIPs {
		ipErrs := validation.IsValidIP(ipsPath.Index(i), ip.IP)
		errs = append(errs, ipErrs...)
		if seen.Has(ip.IP) {
			errs = append(errs, field.Duplicate(ipsPath.Index(i), ip))
		}
		seen.Insert(ip.IP)
		if len(ipErrs) == 0 {
			addr, _ := netip.ParseAddr(ip.IP)
			families[addr.Is4()]++
		}
	}
	if len(status.PodIPs) > 1 && (len(status.PodIPs) > 2 || families[true] != 1 || families[false] != 1) {
		errs = append(errs, field.Invalid(ipsPath, status.PodIPs, "may specify no more than one IP for each IP family"))
	}
	if status.PodIP != "" && len(status.PodIPs) > 0 && status.PodIPs[0].IP != status.PodIP {
		errs = append(errs, field.Invalid(ipsPath.Index(0).Child("ip"), status.PodIPs[0].IP, "must be the same as `podIP`"))
	}
	return errs
}

// ValidatePodBinding validates a pods/binding request: the target must be a
// Node (or have no kind) and must be named.
func ValidatePodBinding(binding *v1.Binding) field.ErrorList {
	var errs field.ErrorList
	if k := binding.Target.Kind; k != "" && k != "Node" {
		errs = append(errs, field.NotSupported(field.NewPath("target", "kind"), k, []string{"Node", "<empty>"}))
	}
	if binding.Target.Name == "" {
		errs = append(errs, field.Required(field.NewPath("target", "name"), ""))
	}
	return errs
}

// mirrorPodAnnotation marks a static pod's mirror in the apiserver.
const mirrorPodAnnotation = "kubernetes.io/config.mirror"

// ValidatePodEphemeralContainersUpdate validates a write through
// pods/ephemeralcontainers: the metadata update and the new spec must be
// valid, mirror pods take none, and ephemeral containers may only be added:
// an existing one (matched by name, patches do not keep the order) may be
// neither removed nor changed.
func ValidatePodEphemeralContainersUpdate(newPod, oldPod *v1.Pod) field.ErrorList {
	metaPath := field.NewPath("metadata")
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newPod.ObjectMeta, &oldPod.ObjectMeta, metaPath)
	errs = append(errs, apimachineryvalidation.ValidateObjectMeta(&newPod.ObjectMeta, true, ValidatePodName, metaPath)...)
	errs = append(errs, ValidatePodSpec(&newPod.Spec, field.NewPath("spec"))...)
	if _, ok := oldPod.Annotations[mirrorPodAnnotation]; ok {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "static pods do not support ephemeral containers")}
	}
	ecPath := field.NewPath("spec", "ephemeralContainers")
	byName := make(map[string]*v1.EphemeralContainer, len(newPod.Spec.EphemeralContainers))
	for i := range newPod.Spec.EphemeralContainers {
		byName[newPod.Spec.EphemeralContainers[i].Name] = &newPod.Spec.EphemeralContainers[i]
	}
	for _, old := range oldPod.Spec.EphemeralContainers {
		cur, ok := byName[old.Name]
		switch {
		case !ok:
			errs = append(errs, field.Forbidden(ecPath, fmt.Sprintf("existing ephemeral containers %q may not be removed\n", old.Name)))
		case !apiequality.Semantic.DeepEqual(old, *cur):
			errs = append(errs, field.Forbidden(ecPath, fmt.Sprintf("existing ephemeral containers %q may not be changed\n%v", old.Name, cmp.Diff(old, *cur))))
		}
	}
	return errs
}
