package validation

import (
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// deprecatedNodeLabels maps node labels upstream deprecated to the release
// that deprecated them and their replacement.
var deprecatedNodeLabels = map[string]struct{ since, use string }{
	"beta.kubernetes.io/arch":                  {"v1.14", "kubernetes.io/arch"},
	"beta.kubernetes.io/os":                    {"v1.14", "kubernetes.io/os"},
	"failure-domain.beta.kubernetes.io/region": {"v1.17", "topology.kubernetes.io/region"},
	"failure-domain.beta.kubernetes.io/zone":   {"v1.17", "topology.kubernetes.io/zone"},
	"beta.kubernetes.io/instance-type":         {"v1.17", "node.kubernetes.io/instance-type"},
}

// WarningsForPod returns the warnings upstream gives for a pod that passes
// validation but is probably not what its author meant: a negative
// terminationGracePeriodSeconds (treated as 1), deprecated node labels in
// the node selector or node affinity, and the same container port declared
// twice. Each is "<field path>: <message>".
func WarningsForPod(pod *v1.Pod) []string {
	return WarningsForPodSpec(&pod.Spec, field.NewPath("spec"))
}

// WarningsForPodSpec is WarningsForPod for a pod spec at fldPath (a
// template's spec.template.spec).
func WarningsForPodSpec(spec *v1.PodSpec, fldPath *field.Path) []string {
	var warnings []string
	if g := spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		warnings = append(warnings, fmt.Sprintf("%s: must be >= 0; negative values are invalid and will be treated as 1", fldPath.Child("terminationGracePeriodSeconds")))
	}
	keys := make([]string, 0, len(spec.NodeSelector))
	for k := range spec.NodeSelector {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if d, ok := deprecatedNodeLabels[k]; ok {
			warnings = append(warnings, fmt.Sprintf("%s: deprecated since %s; use %q instead", fldPath.Child("nodeSelector").Key(k), d.since, d.use))
		}
	}
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		termsPath := fldPath.Child("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
		for i, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for j, req := range term.MatchExpressions {
				if d, ok := deprecatedNodeLabels[req.Key]; ok {
					warnings = append(warnings, fmt.Sprintf("%s: %s is deprecated since %s; use %q instead", termsPath.Index(i).Child("matchExpressions").Index(j).Child("key"), req.Key, d.since, d.use))
				}
			}
		}
	}
	for i, c := range spec.Containers {
		seen := map[string]int{}
		portsPath := fldPath.Child("containers").Index(i).Child("ports")
		for j, p := range c.Ports {
			key := fmt.Sprintf("%d/%s/%s/%d", p.ContainerPort, p.Protocol, p.HostIP, p.HostPort)
			if first, dup := seen[key]; dup {
				warnings = append(warnings, fmt.Sprintf("%s: duplicate port definition with %s", portsPath.Index(j), portsPath.Index(first)))
				continue
			}
			seen[key] = j
		}
	}
	return warnings
}
