package admission_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"

	berthadm "berth/controlplane/admission"
)

func TestDefaultTolerationSeconds(t *testing.T) {
	secs := int64(60)
	cases := []struct {
		name     string
		existing []corev1.Toleration
		want     []string // keys of added tolerations
	}{
		{"none", nil, []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable}},
		{"tolerates not-ready", []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs}},
			[]string{corev1.TaintNodeUnreachable}},
		{"tolerates unreachable with any effect", []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists}},
			[]string{corev1.TaintNodeNotReady}},
		{"tolerates everything", []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, nil},
		{"NoSchedule does not count", []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			[]string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable}},
	}
	p := berthadm.NewDefaultTolerationSeconds()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := newPod("ns", "p")
			pod.Spec.Tolerations = append([]corev1.Toleration(nil), tc.existing...)
			if err := admit(context.Background(), p, podCreate(pod, alice)); err != nil {
				t.Fatal(err)
			}
			added := pod.Spec.Tolerations[len(tc.existing):]
			if len(added) != len(tc.want) {
				t.Fatalf("added %v, want keys %v", added, tc.want)
			}
			for i, tol := range added {
				if tol.Key != tc.want[i] || tol.Operator != corev1.TolerationOpExists || tol.Effect != corev1.TaintEffectNoExecute ||
					tol.TolerationSeconds == nil || *tol.TolerationSeconds != 300 {
					t.Errorf("added toleration %+v, want %s Exists NoExecute 300s", tol, tc.want[i])
				}
			}
		})
	}
}
