package replicationcontroller

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/registry/rest"

	"berth/internal/api/defaults"
	"berth/internal/api/scheme"
)

func validRC() *v1.ReplicationController {
	rc := &v1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: v1.ReplicationControllerSpec{Template: &v1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "img:v1"}}},
		}},
	}
	defaults.ReplicationController(rc)
	return rc
}

func TestDefaultsCopyTemplateLabels(t *testing.T) {
	rc := validRC()
	if rc.Spec.Selector["app"] != "web" || rc.Labels["app"] != "web" || *rc.Spec.Replicas != 1 {
		t.Fatalf("defaults: selector %v labels %v replicas %d", rc.Spec.Selector, rc.Labels, *rc.Spec.Replicas)
	}
	if rc.Spec.Template.Spec.RestartPolicy != v1.RestartPolicyAlways {
		t.Errorf("template not defaulted: restartPolicy %q", rc.Spec.Template.Spec.RestartPolicy)
	}
}

func TestValidateFieldPathsAndMessages(t *testing.T) {
	s := Kind.Strategy(scheme.New())
	for _, tc := range []struct {
		name   string
		mutate func(*v1.ReplicationController)
		want   string
	}{
		{"valid", func(*v1.ReplicationController) {}, ""},
		{"negative replicas", func(rc *v1.ReplicationController) { n := int32(-1); rc.Spec.Replicas = &n },
			"spec.replicas: Invalid value: -1: must be greater than or equal to 0"},
		{"no selector", func(rc *v1.ReplicationController) { rc.Spec.Selector = nil }, "spec.selector: Required value"},
		{"selector not matching", func(rc *v1.ReplicationController) { rc.Spec.Selector = map[string]string{"app": "db"} },
			"spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`"},
		{"no template", func(rc *v1.ReplicationController) { rc.Spec.Template = nil }, "spec.template: Required value"},
		{"restart never", func(rc *v1.ReplicationController) { rc.Spec.Template.Spec.RestartPolicy = v1.RestartPolicyNever },
			`spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"`},
		{"deadline", func(rc *v1.ReplicationController) { n := int64(5); rc.Spec.Template.Spec.ActiveDeadlineSeconds = &n },
			"spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicationController is not Supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := validRC()
			tc.mutate(rc)
			errs := s.Validate(context.Background(), rc)
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

func TestSelectorMayChangeOnUpdate(t *testing.T) {
	s := Kind.Strategy(scheme.New())
	old := validRC()
	old.ResourceVersion = "1"
	upd := old.DeepCopy()
	upd.Spec.Selector = map[string]string{"app": "web", "tier": "front"}
	upd.Spec.Template.Labels["tier"] = "front"
	if errs := s.ValidateUpdate(context.Background(), upd, old); len(errs) != 0 {
		t.Fatalf("selector change refused: %v", errs)
	}
}

func TestStrategyStatusTableAndFields(t *testing.T) {
	s := Kind.Strategy(scheme.New())
	rc := validRC()
	rc.Status.Replicas = 7
	s.PrepareForCreate(context.Background(), rc)
	if rc.Generation != 1 || rc.Status.Replicas != 0 {
		t.Fatalf("after create: generation %d status %+v", rc.Generation, rc.Status)
	}
	if p := s.DefaultGarbageCollectionPolicy(context.Background()); p != rest.OrphanDependents {
		t.Errorf("default GC policy %q, want orphan", p)
	}
	rc.Status = v1.ReplicationControllerStatus{Replicas: 2, ReadyReplicas: 1}
	upd := rc.DeepCopy()
	upd.Spec.Replicas = func() *int32 { n := int32(4); return &n }()
	upd.Status = v1.ReplicationControllerStatus{}
	s.PrepareForUpdate(context.Background(), upd, rc)
	if upd.Generation != 2 || upd.Status.Replicas != 2 {
		t.Errorf("after update: generation %d status %+v", upd.Generation, upd.Status)
	}
	st := Kind.StatusStrategy(scheme.New())
	bad := upd.DeepCopy()
	bad.Status.ReadyReplicas = 3
	if errs := st.ValidateUpdate(context.Background(), bad, upd); !strings.Contains(errs.ToAggregate().Error(), "status.readyReplicas: Invalid value: 3: cannot be greater than status.replicas") {
		t.Errorf("status errors %v", errs)
	}
	out, err := Kind.Table.ConvertToTable(context.Background(), upd, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := out.Rows[0].Cells
	if c[0] != "web" || c[1] != int64(4) || c[2] != int64(2) || c[3] != int64(1) || c[5] != "c" || c[6] != "img:v1" || c[7] != "app=web" {
		t.Errorf("row %v", c)
	}
	pred := Kind.Predicate(labels.Everything(), fields.OneTermEqualSelector("status.replicas", "2"))
	if ok, _ := pred.Matches(upd); !ok {
		t.Error("status.replicas=2 did not match")
	}
}
