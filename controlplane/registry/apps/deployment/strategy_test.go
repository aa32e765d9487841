package deployment

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/internal/api/scheme"
)

func TestDeploymentGenerationAndStatus(t *testing.T) {
	s := Kind.Strategy(scheme.New())
	d := &appsv1.Deployment{Status: appsv1.DeploymentStatus{Replicas: 5}}
	s.PrepareForCreate(context.Background(), d)
	if d.Generation != 1 || d.Status.Replicas != 0 {
		t.Fatalf("after create: generation %d status %+v", d.Generation, d.Status)
	}
	d.Status.ReadyReplicas = 2
	labelsOnly := d.DeepCopy()
	labelsOnly.Labels = map[string]string{"a": "b"}
	labelsOnly.Status = appsv1.DeploymentStatus{}
	s.PrepareForUpdate(context.Background(), labelsOnly, d)
	if labelsOnly.Generation != 1 || labelsOnly.Status.ReadyReplicas != 2 {
		t.Errorf("labels update: generation %d ready %d", labelsOnly.Generation, labelsOnly.Status.ReadyReplicas)
	}
	annotated := d.DeepCopy()
	annotated.Annotations = map[string]string{"deprecated.deployment.rollback.to": "1"}
	s.PrepareForUpdate(context.Background(), annotated, d)
	if annotated.Generation != 2 {
		t.Errorf("annotation update: generation %d, want 2", annotated.Generation)
	}
	replicas := int32(3)
	scaled := d.DeepCopy()
	scaled.Spec.Replicas = &replicas
	s.PrepareForUpdate(context.Background(), scaled, d)
	if scaled.Generation != 2 {
		t.Errorf("spec update: generation %d, want 2", scaled.Generation)
	}
}

func TestDeploymentTable(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	replicas := int32(3)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", CreationTimestamp: metav1.Time{Time: now.Add(-5 * time.Minute)}},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: v1.PodTemplateSpec{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a", Image: "nginx:1"}, {Name: "b", Image: "busybox:1"}}}}},
		Status: appsv1.DeploymentStatus{ReadyReplicas: 2, UpdatedReplicas: 3, AvailableReplicas: 2}}
	tbl := Kind.Table
	tbl.Now = func() time.Time { return now }
	out, err := tbl.ConvertToTable(context.Background(), d, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []interface{}{"web", "2/3", int64(3), int64(2), "5m", "a,b", "nginx:1,busybox:1", "app=web"}
	for i, w := range want {
		if out.Rows[0].Cells[i] != w {
			t.Errorf("%s = %#v, want %#v", out.ColumnDefinitions[i].Name, out.Rows[0].Cells[i], w)
		}
	}
}

func TestDeploymentTemplateWarnings(t *testing.T) {
	s := Kind.Strategy(scheme.New())
	d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: v1.PodTemplateSpec{Spec: v1.PodSpec{NodeSelector: map[string]string{"beta.kubernetes.io/arch": "amd64"}}}}}
	w := s.WarningsOnCreate(context.Background(), d)
	if len(w) != 1 || w[0] != `spec.template.spec.nodeSelector[beta.kubernetes.io/arch]: deprecated since v1.14; use "kubernetes.io/arch" instead` {
		t.Fatalf("warnings = %q", w)
	}
	if w := s.WarningsOnUpdate(context.Background(), d, d.DeepCopy()); len(w) != 0 {
		t.Errorf("unchanged template warned again: %q", w)
	}
}
