package quota_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"berth/controlplane/admission/quota"
)

func rl(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

func TestPodUsage(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "2")}}},
		Containers: []corev1.Container{
			{Name: "a", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "250m", "memory", "64Mi"), Limits: rl("cpu", "500m", "memory", "128Mi")}},
			{Name: "b", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "250m", "memory", "64Mi"), Limits: rl("memory", "128Mi")}},
		},
	}}
	got := quota.PodUsage(pod)
	want := map[string]string{
		"pods": "1", "count/pods": "1",
		"cpu": "2", "requests.cpu": "2", // the init container's peak
		"memory": "128Mi", "requests.memory": "128Mi",
		"limits.memory": "256Mi", "limits.cpu": "500m",
	}
	for k, v := range want {
		q, ok := got[corev1.ResourceName(k)]
		if !ok || q.String() != v {
			t.Errorf("%s = %v, want %s", k, q.String(), v)
		}
	}
	pod.Status.Phase = corev1.PodSucceeded
	if u := quota.PodUsage(pod); len(u) != 0 {
		t.Errorf("terminated pod uses %v", u)
	}
}

func TestUsageAndNames(t *testing.T) {
	cm := quota.Usage(schema.GroupResource{Resource: "configmaps"}, &corev1.ConfigMap{})
	if quota.PrettyPrint(cm) != "configmaps=1,count/configmaps=1" {
		t.Errorf("configmap usage %s", quota.PrettyPrint(cm))
	}
	d := quota.Usage(schema.GroupResource{Group: "apps", Resource: "deployments"}, nil)
	if quota.PrettyPrint(d) != "count/deployments.apps=1" {
		t.Errorf("deployment usage %s", quota.PrettyPrint(d))
	}
	pvc := &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{Requests: rl("storage", "5Gi")}}}
	if got := quota.PrettyPrint(quota.Usage(schema.GroupResource{Resource: "persistentvolumeclaims"}, pvc)); got != "count/persistentvolumeclaims=1,persistentvolumeclaims=1,requests.storage=5Gi" {
		t.Errorf("pvc usage %s", got)
	}
}

func TestScopes(t *testing.T) {
	deadline := int64(30)
	best := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}
	burst := &corev1.Pod{Spec: corev1.PodSpec{ActiveDeadlineSeconds: &deadline, PriorityClassName: "high",
		Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "1")}}}}}
	scoped := func(scopes ...corev1.ResourceQuotaScope) *corev1.ResourceQuota {
		return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Spec: corev1.ResourceQuotaSpec{Scopes: scopes}}
	}
	cases := []struct {
		name        string
		q           *corev1.ResourceQuota
		best, burst bool
	}{
		{"unscoped", scoped(), true, true},
		{"BestEffort", scoped(corev1.ResourceQuotaScopeBestEffort), true, false},
		{"NotBestEffort", scoped(corev1.ResourceQuotaScopeNotBestEffort), false, true},
		{"Terminating", scoped(corev1.ResourceQuotaScopeTerminating), false, true},
		{"NotTerminating", scoped(corev1.ResourceQuotaScopeNotTerminating), true, false},
		{"PriorityClass In", &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{ScopeSelector: &corev1.ScopeSelector{
			MatchExpressions: []corev1.ScopedResourceSelectorRequirement{{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"high"}}}}}}, false, true},
	}
	for _, tc := range cases {
		if got := quota.Matches(tc.q, best); got != tc.best {
			t.Errorf("%s: best-effort pod matches=%v", tc.name, got)
		}
		if got := quota.Matches(tc.q, burst); got != tc.burst {
			t.Errorf("%s: burstable pod matches=%v", tc.name, got)
		}
	}
	if quota.Matches(scoped(corev1.ResourceQuotaScopeBestEffort), &corev1.ConfigMap{}) {
		t.Error("scoped quota applies to a configmap")
	}
}
