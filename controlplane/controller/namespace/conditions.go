package namespace

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// conditionTypes are the deletion conditions a terminating namespace
// carries, every one of them, in upstream's order.
var conditionTypes = []corev1.NamespaceConditionType{
	corev1.NamespaceDeletionDiscoveryFailure,
	corev1.NamespaceDeletionGVParsingFailure,
	corev1.NamespaceDeletionContentFailure,
	corev1.NamespaceContentRemaining,
	corev1.NamespaceFinalizersRemaining,
}

// okConditions are the False conditions saying nothing is wrong, with
// upstream's reasons and messages.
var okConditions = map[corev1.NamespaceConditionType][2]string{
	corev1.NamespaceDeletionDiscoveryFailure: {"ResourcesDiscovered", "All resources successfully discovered"},
	corev1.NamespaceDeletionGVParsingFailure: {"ParsedGroupVersions", "All legacy kube types successfully parsed"},
	corev1.NamespaceDeletionContentFailure:   {"ContentDeleted", "All content successfully deleted, may be waiting on finalization"},
	corev1.NamespaceContentRemaining:         {"ContentRemoved", "All content successfully removed"},
	corev1.NamespaceFinalizersRemaining:      {"ContentHasNoFinalizers", "All content-preserving finalizers finished"},
}

// progress is what one pass over a terminating namespace found.
type progress struct {
	// discoveryErr is the error discovering the served resources, if any.
	discoveryErr error
	// deleteErrs are the errors deleting or listing content.
	deleteErrs []error
	// remaining counts the objects left, by resource.
	remaining map[schema.GroupVersionResource]int
	// finalizers counts the objects left, by each finalizer they carry.
	finalizers map[string]int
}

// conditions are the namespace's deletion conditions after a pass: each
// type True with the reason when something is wrong or left, else False.
func (p progress) conditions() []corev1.NamespaceCondition {
	bad := map[corev1.NamespaceConditionType][2]string{}
	if p.discoveryErr != nil {
		bad[corev1.NamespaceDeletionDiscoveryFailure] = [2]string{"DiscoveryFailed", p.discoveryErr.Error()}
	}
	if len(p.deleteErrs) > 0 {
		msgs := make([]string, 0, len(p.deleteErrs))
		for _, err := range p.deleteErrs {
			msgs = append(msgs, err.Error())
		}
		slices.Sort(msgs)
		bad[corev1.NamespaceDeletionContentFailure] = [2]string{"ContentDeletionFailed",
			fmt.Sprintf("Failed to delete all resource types, %d remaining: %s", len(msgs), strings.Join(msgs, ", "))}
	}
	var left []string
	for gvr, n := range p.remaining {
		if n > 0 {
			left = append(left, fmt.Sprintf("%s.%s has %d resource instances", gvr.Resource, gvr.Group, n))
		}
	}
	if len(left) > 0 {
		slices.Sort(left)
		bad[corev1.NamespaceContentRemaining] = [2]string{"SomeResourcesRemain", "Some resources are remaining: " + strings.Join(left, ", ")}
	}
	var held []string
	for _, f := range slices.Sorted(maps.Keys(p.finalizers)) {
		if n := p.finalizers[f]; n > 0 {
			held = append(held, fmt.Sprintf("%s in %d resource instances", f, n))
		}
	}
	if len(held) > 0 {
		bad[corev1.NamespaceFinalizersRemaining] = [2]string{"SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: " + strings.Join(held, ", ")}
	}
	out := make([]corev1.NamespaceCondition, 0, len(conditionTypes))
	for _, t := range conditionTypes {
		c := corev1.NamespaceCondition{Type: t, Status: corev1.ConditionFalse, Reason: okConditions[t][0], Message: okConditions[t][1]}
		if b, ok := bad[t]; ok {
			c.Status, c.Reason, c.Message = corev1.ConditionTrue, b[0], b[1]
		}
		out = append(out, c)
	}
	return out
}

// mergeConditions sets want into status, keeping each unchanged
// condition's transition time and stamping now on those whose status
// changed or that are new; it reports whether anything changed.
func mergeConditions(status *corev1.NamespaceStatus, want []corev1.NamespaceCondition, now metav1.Time) bool {
	changed := false
	for _, w := range want {
		i := slices.IndexFunc(status.Conditions, func(c corev1.NamespaceCondition) bool { return c.Type == w.Type })
		if i < 0 {
			w.LastTransitionTime = now
			status.Conditions = append(status.Conditions, w)
			changed = true
			continue
		}
		cur := &status.Conditions[i]
		if cur.Status == w.Status && cur.Reason == w.Reason && cur.Message == w.Message {
			continue
		}
		if cur.Status != w.Status {
			cur.LastTransitionTime = now
		}
		cur.Status, cur.Reason, cur.Message = w.Status, w.Reason, w.Message
		changed = true
	}
	return changed
}
