package validation

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestWarningsForPod(t *testing.T) {
	pod := validPod()
	if w := WarningsForPod(pod); len(w) != 0 {
		t.Fatalf("valid pod warnings: %v", w)
	}
	pod.Spec.TerminationGracePeriodSeconds = ptr(int64(-5))
	pod.Spec.NodeSelector = map[string]string{"beta.kubernetes.io/os": "linux", "disk": "ssd"}
	pod.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
		NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "failure-domain.beta.kubernetes.io/zone", Operator: v1.NodeSelectorOpExists}}}}}}}
	pod.Spec.Containers[0].Ports = append(pod.Spec.Containers[0].Ports, pod.Spec.Containers[0].Ports[0])
	pod.Spec.Containers[0].Ports[1].Name = "other"
	want := []string{
		"spec.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will be treated as 1",
		`spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; use "kubernetes.io/os" instead`,
		`spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key: failure-domain.beta.kubernetes.io/zone is deprecated since v1.17; use "topology.kubernetes.io/zone" instead`,
		"spec.containers[0].ports[1]: duplicate port definition with spec.containers[0].ports[0]",
	}
	if got := WarningsForPod(pod); !reflect.DeepEqual(got, want) {
		t.Fatalf("warnings:\n got %q\nwant %q", got, want)
	}
	if errs := ValidatePod(pod); len(errs) != 0 {
		t.Fatalf("warned-about pod must still be valid: %v", errs)
	}
}
