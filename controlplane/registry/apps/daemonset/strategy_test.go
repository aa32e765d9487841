package daemonset

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"berth/internal/api/defaults"
	"berth/internal/api/scheme"
)

func validDS() *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "default", ResourceVersion: "1"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img:v1"}}, NodeSelector: map[string]string{"role": "edge"}}},
		},
	}
	defaults.DaemonSet(ds)
	return ds
}

func TestDefaults(t *testing.T) {
	ds := validDS()
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || ru.MaxUnavailable.IntValue() != 1 || ru.MaxSurge.IntValue() != 0 || *ds.Spec.RevisionHistoryLimit != 10 {
		t.Fatalf("defaults: %+v", ds.Spec)
	}
}

func TestValidateFieldPathsAndMessages(t *testing.T) {
	s := Kind.Strategy(scheme.New())
	pct := func(v string) *intstr.IntOrString { x := intstr.FromString(v); return &x }
	num := func(v int32) *intstr.IntOrString { x := intstr.FromInt32(v); return &x }
	for _, tc := range []struct {
		name   string
		mutate func(*appsv1.DaemonSet)
		want   string
	}{
		{"valid", func(*appsv1.DaemonSet) {}, ""},
		{"empty selector", func(ds *appsv1.DaemonSet) { ds.Spec.Selector = &metav1.LabelSelector{} }, "spec.selector: Invalid value: {}: empty selector is invalid for daemonset"},
		{"selector not matching", func(ds *appsv1.DaemonSet) { ds.Spec.Selector.MatchLabels["app"] = "x" }, "spec.template.metadata.labels: Invalid value: {\"app\":\"agent\"}: `selector` does not match template `labels`"},
		{"restart never", func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever }, `spec.template.spec.restartPolicy: Unsupported value: "Never"`},
		{"deadline", func(ds *appsv1.DaemonSet) { n := int64(1); ds.Spec.Template.Spec.ActiveDeadlineSeconds = &n }, "activeDeadlineSeconds in DaemonSet is not Supported"},
		{"both set", func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy.RollingUpdate.MaxSurge = num(1) }, "spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: 1: may not be set when maxUnavailable is non-zero"},
		{"both zero", func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = num(0) }, "spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0"},
		{"over 100%", func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = pct("150%") }, `spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: "150%": must not be greater than 100%`},
		{"bad type", func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy.Type = "Sometimes" }, `spec.updateStrategy: Unsupported value`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := validDS()
			tc.mutate(ds)
			errs := s.Validate(context.Background(), ds)
			if tc.want == "" {
				if len(errs) != 0 {
					t.Fatalf("unexpected errors: %v", errs)
				}
				return
			}
			if !strings.Contains(errs.ToAggregate().Error(), tc.want) {
				t.Fatalf("errors %v, want %q", errs, tc.want)
			}
		})
	}
}

func TestGenerationsSelectorAndTable(t *testing.T) {
	s := Kind.Strategy(scheme.New())
	ds := validDS()
	ds.Status.NumberReady = 4
	s.PrepareForCreate(context.Background(), ds)
	if ds.Generation != 1 || ds.Annotations[TemplateGenerationAnnotation] != "1" || ds.Status.NumberReady != 0 {
		t.Fatalf("after create: %+v", ds.ObjectMeta)
	}
	ds.Status = appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, NumberReady: 2, UpdatedNumberScheduled: 1, NumberAvailable: 2}
	upd := ds.DeepCopy()
	upd.Spec.MinReadySeconds = 5
	s.PrepareForUpdate(context.Background(), upd, ds)
	if upd.Generation != 2 || upd.Annotations[TemplateGenerationAnnotation] != "1" {
		t.Fatalf("spec change: generation %d template generation %s", upd.Generation, upd.Annotations[TemplateGenerationAnnotation])
	}
	upd2 := upd.DeepCopy()
	upd2.Spec.Template.Spec.Containers[0].Image = "img:v2"
	s.PrepareForUpdate(context.Background(), upd2, upd)
	if upd2.Generation != 3 || upd2.Annotations[TemplateGenerationAnnotation] != "2" {
		t.Fatalf("template change: generation %d template generation %s", upd2.Generation, upd2.Annotations[TemplateGenerationAnnotation])
	}
	moved := upd2.DeepCopy()
	moved.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent", "x": "y"}}
	moved.Spec.Template.Labels["x"] = "y"
	if errs := s.ValidateUpdate(context.Background(), moved, upd2); !strings.Contains(errs.ToAggregate().Error(), "spec.selector: Invalid value") || !strings.Contains(errs.ToAggregate().Error(), "field is immutable") {
		t.Errorf("selector change: %v", errs)
	}
	st := Kind.StatusStrategy(scheme.New())
	cc := int32(2)
	withCC := upd2.DeepCopy()
	withCC.Status.CollisionCount = &cc
	lower := withCC.DeepCopy()
	one := int32(1)
	lower.Status.CollisionCount = &one
	if errs := st.ValidateUpdate(context.Background(), lower, withCC); !strings.Contains(errs.ToAggregate().Error(), "status.collisionCount: Invalid value: 1: cannot be decremented") {
		t.Errorf("collisionCount decrement: %v", errs)
	}
	out, err := Kind.Table.ConvertToTable(context.Background(), upd2, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := out.Rows[0].Cells
	want := []interface{}{"agent", int64(3), int64(3), int64(2), int64(1), int64(2), "role=edge"}
	for i, w := range want {
		if c[i] != w {
			t.Errorf("cell %d (%s) = %v, want %v", i, out.ColumnDefinitions[i].Name, c[i], w)
		}
	}
	if c[8] != "c" || c[9] != "img:v2" || c[10] != "app=agent" {
		t.Errorf("wide cells %v", c[8:])
	}
}
