package admission_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"

	berthadm "berth/controlplane/admission"
)

func rl(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

func limitRanger(t *testing.T, items ...corev1.LimitRangeItem) *berthadm.LimitRanger {
	t.Helper()
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "limits"}, Spec: corev1.LimitRangeSpec{Limits: items}}
	p, err := berthadm.NewLimitRanger(berthadm.LimitRangerConfig{LimitRanges: corelisters.NewLimitRangeLister(indexer(t, lr))})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLimitRangerDefaults(t *testing.T) {
	p := limitRanger(t, corev1.LimitRangeItem{
		Type:           corev1.LimitTypeContainer,
		Default:        rl("cpu", "500m", "memory", "256Mi"),
		DefaultRequest: rl("cpu", "100m", "memory", "128Mi"),
	})
	pod := newPod("ns", "p")
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "sized", Image: "busybox",
		Resources: corev1.ResourceRequirements{Requests: rl("cpu", "200m", "memory", "200Mi"), Limits: rl("cpu", "1", "memory", "1Gi")}})
	if err := admit(context.Background(), p, podCreate(pod, alice)); err != nil {
		t.Fatal(err)
	}
	got := pod.Spec.Containers[0].Resources
	if q := got.Requests[corev1.ResourceCPU]; q.String() != "100m" {
		t.Errorf("cpu request %s, want 100m", q.String())
	}
	if q := got.Requests[corev1.ResourceMemory]; q.String() != "128Mi" {
		t.Errorf("memory request %s, want 128Mi", q.String())
	}
	if q := got.Limits[corev1.ResourceCPU]; q.String() != "500m" {
		t.Errorf("cpu limit %s, want 500m", q.String())
	}
	if q := got.Limits[corev1.ResourceMemory]; q.String() != "256Mi" {
		t.Errorf("memory limit %s, want 256Mi", q.String())
	}
	sized := pod.Spec.Containers[1].Resources
	if q := sized.Requests[corev1.ResourceCPU]; q.String() != "200m" {
		t.Errorf("explicit request overwritten: %s", q.String())
	}
	want := "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app"
	if a := pod.Annotations[berthadm.LimitRangerAnnotation]; a != want {
		t.Errorf("annotation %q, want %q", a, want)
	}
}

func TestLimitRangerBounds(t *testing.T) {
	container := corev1.LimitRangeItem{Type: corev1.LimitTypeContainer,
		Min: rl("cpu", "100m"), Max: rl("cpu", "1", "memory", "1Gi"), MaxLimitRequestRatio: rl("cpu", "2"),
		Default: rl("cpu", "500m", "memory", "512Mi"), DefaultRequest: rl("cpu", "250m", "memory", "256Mi")}
	podItem := corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: rl("memory", "1Gi")}
	cases := []struct {
		name string
		res  corev1.ResourceRequirements
		more int // extra identical containers
		want string
	}{
		{"defaults fit", corev1.ResourceRequirements{}, 0, ""},
		{"below min", corev1.ResourceRequirements{Requests: rl("cpu", "50m"), Limits: rl("cpu", "100m")}, 0,
			"minimum cpu usage per Container is 100m, but request is 50m"},
		{"above max", corev1.ResourceRequirements{Requests: rl("cpu", "1"), Limits: rl("cpu", "2")}, 0,
			"maximum cpu usage per Container is 1, but limit is 2"},
		{"ratio", corev1.ResourceRequirements{Requests: rl("cpu", "100m"), Limits: rl("cpu", "400m")}, 0,
			"cpu max limit to request ratio per Container is 2, but provided ratio is 4.000000"},
		{"pod total", corev1.ResourceRequirements{Requests: rl("memory", "600Mi"), Limits: rl("memory", "600Mi")}, 1,
			"maximum memory usage per Pod is 1Gi, but limit is 1200Mi"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := limitRanger(t, container, podItem)
			pod := newPod("ns", "p")
			pod.Spec.Containers[0].Resources = tc.res
			for i := 0; i < tc.more; i++ {
				c := pod.Spec.Containers[0].DeepCopy()
				c.Name = "more"
				pod.Spec.Containers = append(pod.Spec.Containers, *c)
			}
			err := admit(context.Background(), p, podCreate(pod, alice))
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantStatus(t, err, 403, `pods "p" is forbidden: `+tc.want)
		})
	}
}
