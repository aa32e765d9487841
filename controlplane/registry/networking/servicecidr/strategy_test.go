package servicecidr

import (
	"context"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/internal/api/scheme"
)

func TestStatusKeptOnCreateAndMetadataOnStatusWrites(t *testing.T) {
	ready := []metav1.Condition{{Type: networkingv1.ServiceCIDRConditionReady, Status: metav1.ConditionTrue}}
	c := &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Labels: map[string]string{"a": "1"}},
		Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.96.0.0/16"}}, Status: networkingv1.ServiceCIDRStatus{Conditions: ready}}
	Kind.Strategy(scheme.New()).PrepareForCreate(context.Background(), c)
	if len(c.Status.Conditions) != 1 {
		t.Fatalf("create cleared the status: %+v", c.Status)
	}
	upd := c.DeepCopy()
	upd.Labels["a"] = "2"
	upd.Spec.CIDRs = []string{"10.0.0.0/16"}
	upd.Status.Conditions = nil
	Kind.StatusStrategy(scheme.New()).PrepareForUpdate(context.Background(), upd, c)
	if upd.Labels["a"] != "1" || upd.Spec.CIDRs[0] != "10.96.0.0/16" || len(upd.Status.Conditions) != 0 {
		t.Errorf("status write: labels %v spec %v status %+v", upd.Labels, upd.Spec, upd.Status)
	}
}
