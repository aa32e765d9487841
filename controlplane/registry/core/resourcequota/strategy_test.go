package resourcequota

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"berth/internal/api/scheme"
)

func TestUsageCells(t *testing.T) {
	rq := &v1.ResourceQuota{Status: v1.ResourceQuotaStatus{
		Hard: v1.ResourceList{"pods": resource.MustParse("2"), "requests.cpu": resource.MustParse("1"), "limits.memory": resource.MustParse("1Gi")},
		Used: v1.ResourceList{"pods": resource.MustParse("1"), "requests.cpu": resource.MustParse("500m")},
	}}
	req, lim := UsageCells(rq)
	if req != "pods: 1/2, requests.cpu: 500m/1" || lim != "limits.memory: 0/1Gi" {
		t.Errorf("cells = %q, %q", req, lim)
	}
}

func TestSpecAndStatusApart(t *testing.T) {
	s := scheme.New()
	old := &v1.ResourceQuota{Spec: v1.ResourceQuotaSpec{Hard: v1.ResourceList{"pods": resource.MustParse("2")}},
		Status: v1.ResourceQuotaStatus{Used: v1.ResourceList{"pods": resource.MustParse("1")}}}
	n := old.DeepCopy()
	n.Status.Used = nil
	Kind.Strategy(s).PrepareForUpdate(context.Background(), n, old)
	if len(n.Status.Used) != 1 {
		t.Error("main resource update changed the status")
	}
	n = old.DeepCopy()
	n.Spec.Hard = nil
	n.Status.Used = v1.ResourceList{"pods": resource.MustParse("2")}
	Kind.StatusStrategy(s).PrepareForUpdate(context.Background(), n, old)
	if len(n.Spec.Hard) != 1 || n.Status.Used.Pods().Value() != 2 {
		t.Errorf("status update = %+v", n)
	}
	created := old.DeepCopy()
	Kind.Strategy(s).PrepareForCreate(context.Background(), created)
	if len(created.Status.Used) != 0 {
		t.Error("status not cleared on create")
	}
}
