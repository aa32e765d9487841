package namespace

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/internal/api/scheme"
)

func TestNamespaceStrategy(t *testing.T) {
	s := Kind.Strategy(scheme.New())
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}, Status: v1.NamespaceStatus{Phase: v1.NamespaceTerminating}}
	s.PrepareForCreate(context.Background(), ns)
	if ns.Status.Phase != v1.NamespaceActive || len(ns.Spec.Finalizers) != 1 || ns.Spec.Finalizers[0] != v1.FinalizerKubernetes {
		t.Fatalf("after create: %+v", ns)
	}
	s.PrepareForCreate(context.Background(), ns)
	if len(ns.Spec.Finalizers) != 1 {
		t.Errorf("kubernetes finalizer added twice: %v", ns.Spec.Finalizers)
	}
	s.Canonicalize(ns)
	if ns.Labels[v1.LabelMetadataName] != "team" {
		t.Errorf("metadata.name label missing: %v", ns.Labels)
	}
	upd := ns.DeepCopy()
	upd.Spec.Finalizers = nil
	upd.Status.Phase = v1.NamespaceTerminating
	s.PrepareForUpdate(context.Background(), upd, ns)
	if len(upd.Spec.Finalizers) != 1 || upd.Status.Phase != v1.NamespaceActive {
		t.Errorf("plain update changed finalizers or status: %+v", upd)
	}
	out, _ := Kind.Table.ConvertToTable(context.Background(), ns, nil)
	if out.Rows[0].Cells[1] != "Active" {
		t.Errorf("STATUS = %v", out.Rows[0].Cells[1])
	}
}
