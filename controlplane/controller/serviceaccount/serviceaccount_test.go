package serviceaccount

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestMissing(t *testing.T) {
	now := metav1.Now()
	for _, tc := range []struct {
		name string
		ns   *corev1.Namespace
		has  []string
		want []string
	}{
		{"new namespace", &corev1.Namespace{}, nil, []string{"default"}},
		{"already there", &corev1.Namespace{}, []string{"default"}, nil},
		{"other accounts only", &corev1.Namespace{}, []string{"builder"}, []string{"default"}},
		{"terminating phase", &corev1.Namespace{Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}, nil, nil},
		{"being deleted", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}}, nil, nil},
		{"gone", nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Missing(tc.ns, func(n string) bool { return slices.Contains(tc.has, n) })
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Missing = %v, want %v", got, tc.want)
			}
		})
	}
}
