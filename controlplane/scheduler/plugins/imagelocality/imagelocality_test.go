package imagelocality

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"

	st "berth/controlplane/scheduler/schedtest"
)

func TestScore(t *testing.T) {
	snap := st.Snapshot(t, []*v1.Node{
		st.Node("nginx", st.Image(500*mb, "registry.local/nginx:1.0", "registry.local/nginx@sha256:abc")),
		st.Node("both", st.Image(500*mb, "registry.local/nginx:1.0"), st.Image(300*mb, "redis:latest")),
		st.Node("small", st.Image(10*mb, "pause:3.9")),
		st.Node("none"),
	})
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]int64
	}{
		// nginx is on 2 of 4 nodes: 500MiB*2/4 = 250MiB → 100*(250-23)/(1000-23) = 23.
		{"image present scores by size and spread", st.Pod("p", func(p *v1.Pod) { p.Spec.Containers[0].Image = "registry.local/nginx:1.0" }),
			map[string]int64{"nginx": 23, "both": 23, "small": 0, "none": 0}},
		// "redis" normalizes to redis:latest; 300MiB on 1 of 4 nodes = 75MiB;
		// with nginx (250MiB) on "both": 325MiB of 2000MiB max → 100*(325-23)/(2000-23) = 15.
		{"untagged name matches :latest, containers add up", st.Pod("p", func(p *v1.Pod) { p.Spec.Containers[0].Image = "registry.local/nginx:1.0" }, st.Container("redis")),
			map[string]int64{"nginx": 11, "both": 15, "small": 0, "none": 0}},
		{"images below the 23MiB threshold score 0", st.Pod("p", func(p *v1.Pod) { p.Spec.Containers[0].Image = "pause:3.9" }),
			map[string]int64{"nginx": 0, "both": 0, "small": 0, "none": 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := st.RunScore(t, New(), tc.pod, snap); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
