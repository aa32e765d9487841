package daemonset

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/controller/controllerref"
)

// Labels the controller puts on its pods (upstream's keys).
const (
	// HashLabel is the hash of the ControllerRevision a pod was made from.
	HashLabel = appsv1.DefaultDaemonSetUniqueLabelKey
	// TemplateGenerationLabel is the daemon set's template generation a pod
	// was made from.
	TemplateGenerationLabel = "pod-template-generation"
	// TemplateGenerationAnnotation holds a daemon set's template generation.
	TemplateGenerationAnnotation = "deprecated.daemonset.template.generation"
)

// Taints every daemon pod tolerates (upstream's daemon set tolerations):
// a node that is not ready or unreachable does not evict them, and node
// pressure and cordoning do not keep them off.
var daemonTolerations = []corev1.Toleration{
	{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
}

// hostNetworkToleration is added for hostNetwork pods, which do not need
// the node's pod network.
var hostNetworkToleration = corev1.Toleration{Key: corev1.TaintNodeNetworkUnavailable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}

// addDaemonTolerations adds the daemon tolerations to spec, replacing a
// toleration of the same key, operator, value and effect.
func addDaemonTolerations(spec *corev1.PodSpec) {
	add := daemonTolerations
	if spec.HostNetwork {
		add = append(append([]corev1.Toleration(nil), add...), hostNetworkToleration)
	}
	for _, t := range add {
		replaced := false
		for i := range spec.Tolerations {
			old := &spec.Tolerations[i]
			if old.Key == t.Key && old.Operator == t.Operator && old.Value == t.Value && old.Effect == t.Effect {
				if !equality.Semantic.DeepEqual(*old, t) {
					*old = t
				}
				replaced = true
				break
			}
		}
		if !replaced {
			spec.Tolerations = append(spec.Tolerations, t)
		}
	}
}

// templateGeneration is ds's template generation (nil when unset or unparsable).
func templateGeneration(ds *appsv1.DaemonSet) *int64 {
	n, err := strconv.ParseInt(ds.Annotations[TemplateGenerationAnnotation], 10, 64)
	if err != nil {
		return nil
	}
	return &n
}

// podTemplate is the template of ds's pods: its template with the daemon
// tolerations and the hash and template generation labels.
func podTemplate(ds *appsv1.DaemonSet, hash string) *corev1.PodTemplateSpec {
	t := ds.Spec.Template.DeepCopy()
	addDaemonTolerations(&t.Spec)
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	if gen := templateGeneration(ds); gen != nil {
		t.Labels[TemplateGenerationLabel] = strconv.FormatInt(*gen, 10)
	}
	if hash != "" {
		t.Labels[HashLabel] = hash
	}
	return t
}

// NewPod is the pod ds runs on node: the pod template (podTemplate) with
// its required node affinity replaced by one term matching the node's
// name (metadata.name, as matchFields), so the scheduler binds it there,
// and ds as its controller.
func NewPod(ds *appsv1.DaemonSet, node, hash string) *corev1.Pod {
	t := podTemplate(ds, hash)
	t.Spec.Affinity = pinToNode(t.Spec.Affinity, node)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    ds.Name + "-",
			Namespace:       ds.Namespace,
			Labels:          t.Labels,
			Annotations:     t.Annotations,
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*controllerref.NewControllerRef(ds, Kind)},
		},
		Spec: t.Spec,
	}
}

// pinToNode returns affinity with its required node selector replaced by
// one term: metadata.name In [node] (preferred terms are kept).
func pinToNode(affinity *corev1.Affinity, node string) *corev1.Affinity {
	sel := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchFields: []corev1.NodeSelectorRequirement{{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
	}}}
	if affinity == nil {
		affinity = &corev1.Affinity{}
	}
	if affinity.NodeAffinity == nil {
		affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = sel
	return affinity
}

// TargetNode is the node a daemon pod is for: its spec.nodeName once
// bound, before that the node its affinity pins it to ("" if none).
func TargetNode(p *corev1.Pod) string {
	if p.Spec.NodeName != "" {
		return p.Spec.NodeName
	}
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, req := range term.MatchFields {
			if req.Key == metav1.ObjectNameField && req.Operator == corev1.NodeSelectorOpIn && len(req.Values) == 1 {
				return req.Values[0]
			}
		}
	}
	return ""
}

// isUpdated reports whether p was made from ds's current revision (hash) or
// current template generation.
func isUpdated(p *corev1.Pod, ds *appsv1.DaemonSet, hash string) bool {
	if gen := templateGeneration(ds); gen != nil && p.Labels[TemplateGenerationLabel] == strconv.FormatInt(*gen, 10) {
		return true
	}
	return hash != "" && p.Labels[HashLabel] == hash
}
