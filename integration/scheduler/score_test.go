package scheduler

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestScoresPickTheBetterNode runs each score rule on a pair of nodes that
// differ only in what the rule looks at; the pod is confined to its pair
// by a nodeSelector, so the score alone decides.
func TestScoresPickTheBetterNode(t *testing.T) {
	c := startCluster(t)
	pair := func(name string) map[string]string { return map[string]string{"pair": name} }
	withLabels := func(base, extra map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	image := node("image-yes", "4", pair("image"), nil)
	image.Status.Images = []corev1.ContainerImage{{Names: []string{"registry.local/app:1"}, SizeBytes: 900 << 20}}
	c.createNodes(t,
		node("affinity-yes", "4", withLabels(pair("affinity"), map[string]string{"color": "blue"}), nil),
		node("affinity-no", "4", pair("affinity"), nil),
		node("taint-no", "4", pair("taint"), []corev1.Taint{{Key: "spot", Value: "true", Effect: corev1.TaintEffectPreferNoSchedule}}),
		node("taint-yes", "4", pair("taint"), nil),
		node("alloc-no", "4", pair("alloc"), nil),
		node("alloc-yes", "4", pair("alloc"), nil),
		image,
		node("image-no", "4", pair("image"), nil),
		node("podaff-yes", "4", pair("podaff"), nil),
		node("podaff-no", "4", pair("podaff"), nil),
		node("spread-no", "4", pair("spread"), nil),
		node("spread-yes", "4", pair("spread"), nil),
	)
	on := func(host string, labels map[string]string, cpu string) {
		name := "existing-" + host
		c.createPod(t, pod(name, cpu, func(p *corev1.Pod) {
			p.Labels = labels
			p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: host}
		}))
		c.waitBound(t, name)
	}
	on("alloc-no", map[string]string{}, "3")
	on("podaff-yes", map[string]string{"app": "db"}, "")
	on("spread-no", map[string]string{"app": "web"}, "")

	tests := []struct {
		name   string
		pair   string
		mutate func(*corev1.Pod)
	}{
		{"preferred node affinity", "affinity", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
				Weight: 10, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "color", Operator: corev1.NodeSelectorOpIn, Values: []string{"blue"}}}},
			}}}}
		}},
		{"PreferNoSchedule taint avoided", "taint", nil},
		{"least allocated and balanced", "alloc", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: mustQuantity("500m")}
		}},
		{"image locality", "image", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "registry.local/app:1" }},
		{"preferred pod affinity", "podaff", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight: 50, PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, TopologyKey: corev1.LabelHostname},
			}}}}
		}},
		{"topology spread ScheduleAnyway", "spread", func(p *corev1.Pod) {
			p.Labels["app"] = "web"
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			}}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := "score-" + tc.pair
			c.createPod(t, pod(name, "", func(p *corev1.Pod) {
				p.Spec.NodeSelector = map[string]string{"pair": tc.pair}
				if tc.mutate != nil {
					tc.mutate(p)
				}
			}))
			if got, want := c.waitBound(t, name), tc.pair+"-yes"; got != want {
				t.Errorf("bound to %s, want %s", got, want)
			}
		})
	}
	// The image is on 1 of 12 nodes; check the node kept it (the server
	// stored status.images), so the image case tested what it claims.
	n, err := c.client.CoreV1().Nodes().Get(context.Background(), "image-yes", metav1.GetOptions{})
	if err != nil || len(n.Status.Images) != 1 {
		t.Fatalf("image-yes status.images = %v (err %v), want the image", n.Status.Images, err)
	}
}
