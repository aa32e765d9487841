package base

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

var ctx = context.Background()

func noErrors[T any](T) field.ErrorList          { return nil }
func noUpdateErrors[T any](T, T) field.ErrorList { return nil }

// replicaSets is a kind with a spec and a status kept apart and a
// generation counting the spec.
var replicaSets = Kind[*appsv1.ReplicaSet]{
	APIVersion: "apps/v1", Namespaced: true, Status: true, SpecGeneration: true,
	Validate: noErrors[*appsv1.ReplicaSet], ValidateUpdate: noUpdateErrors[*appsv1.ReplicaSet],
}

func replicas(n int32) *int32 { return &n }

func TestStatusClearedOnCreateAndKeptOnUpdate(t *testing.T) {
	s := replicaSets.Strategy(runtime.NewScheme())
	rs := &appsv1.ReplicaSet{Spec: appsv1.ReplicaSetSpec{Replicas: replicas(1)}, Status: appsv1.ReplicaSetStatus{Replicas: 7}}
	s.PrepareForCreate(ctx, rs)
	if rs.Status.Replicas != 0 || rs.Generation != 1 {
		t.Fatalf("after create: status %+v generation %d", rs.Status, rs.Generation)
	}
	rs.Status.Replicas = 3
	same := rs.DeepCopy()
	same.Status.Replicas = 9
	same.Labels = map[string]string{"a": "b"}
	s.PrepareForUpdate(ctx, same, rs)
	if same.Status.Replicas != 3 || same.Generation != 1 {
		t.Errorf("metadata update: status %+v generation %d", same.Status, same.Generation)
	}
	scaled := rs.DeepCopy()
	scaled.Spec.Replicas = replicas(2)
	s.PrepareForUpdate(ctx, scaled, rs)
	if scaled.Generation != 2 {
		t.Errorf("spec update: generation %d, want 2", scaled.Generation)
	}
}

func TestStatusWriteKeepsSpecAndOptionallyMetadata(t *testing.T) {
	old := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "1"}}, Spec: appsv1.ReplicaSetSpec{Replicas: replicas(1)}}
	for _, keepMeta := range []bool{false, true} {
		k := replicaSets
		k.StatusKeepsMeta = keepMeta
		upd := old.DeepCopy()
		upd.Spec.Replicas = replicas(5)
		upd.Labels = map[string]string{"a": "2"}
		upd.Status.Replicas = 4
		k.StatusStrategy(runtime.NewScheme()).PrepareForUpdate(ctx, upd, old)
		if *upd.Spec.Replicas != 1 || upd.Status.Replicas != 4 {
			t.Errorf("keepMeta=%v: spec %d status %d", keepMeta, *upd.Spec.Replicas, upd.Status.Replicas)
		}
		if want := map[bool]string{false: "2", true: "1"}[keepMeta]; upd.Labels["a"] != want {
			t.Errorf("keepMeta=%v: label %q, want %q", keepMeta, upd.Labels["a"], want)
		}
	}
}

func TestNewStatusReplacesClearing(t *testing.T) {
	k := replicaSets
	k.NewStatus = AsSent[*appsv1.ReplicaSet]
	rs := &appsv1.ReplicaSet{Status: appsv1.ReplicaSetStatus{Replicas: 7}}
	k.Strategy(runtime.NewScheme()).PrepareForCreate(ctx, rs)
	if rs.Status.Replicas != 7 {
		t.Errorf("AsSent: status %+v", rs.Status)
	}
	k.NewStatus = func(rs *appsv1.ReplicaSet) { rs.Status = appsv1.ReplicaSetStatus{ObservedGeneration: -1} }
	k.Strategy(runtime.NewScheme()).PrepareForCreate(ctx, rs)
	if rs.Status.Replicas != 0 || rs.Status.ObservedGeneration != -1 {
		t.Errorf("NewStatus: status %+v", rs.Status)
	}
}

func TestKindStepsRunBeforeTheGenerationIsCounted(t *testing.T) {
	k := replicaSets
	var created bool
	k.PrepareCreate = func(context.Context, *appsv1.ReplicaSet) { created = true }
	k.PrepareUpdate = func(n, o *appsv1.ReplicaSet) { n.Spec.Replicas = o.Spec.Replicas } // undoes the change
	s := k.Strategy(runtime.NewScheme())
	old := &appsv1.ReplicaSet{Spec: appsv1.ReplicaSetSpec{Replicas: replicas(1)}}
	s.PrepareForCreate(ctx, old.DeepCopy())
	upd := old.DeepCopy()
	upd.Spec.Replicas = replicas(2)
	s.PrepareForUpdate(ctx, upd, old)
	if !created || upd.Generation != 0 {
		t.Errorf("PrepareCreate ran %v; generation %d after an undone change", created, upd.Generation)
	}
}

func TestResetFields(t *testing.T) {
	main := replicaSets.Strategy(runtime.NewScheme()).GetResetFields()["apps/v1"]
	if main == nil || !main.Has(fieldpath.MakePathOrDie("status")) {
		t.Errorf("main resets %v", main)
	}
	status := replicaSets.StatusStrategy(runtime.NewScheme()).GetResetFields()["apps/v1"]
	if status == nil || !status.Has(fieldpath.MakePathOrDie("spec")) || status.Has(fieldpath.MakePathOrDie("status")) {
		t.Errorf("status resets %v", status)
	}
	k := replicaSets
	k.StatusResets = []string{"metadata", "spec"}
	if set := k.StatusStrategy(runtime.NewScheme()).GetResetFields()["apps/v1"]; !set.Has(fieldpath.MakePathOrDie("metadata")) {
		t.Errorf("StatusResets ignored: %v", set)
	}
	if r := configMaps.Strategy(runtime.NewScheme()).GetResetFields(); r != nil {
		t.Errorf("a kind without status resets %v", r)
	}
}

// configMaps is a cluster-scoped kind without spec or status (scoped so
// for the test), with every optional switch set.
var configMaps = Kind[*v1.ConfigMap]{
	CreateOnUpdate: true, ConditionalUpdate: true, DefaultGC: rest.OrphanDependents,
	NameGenerator: sameName{},
	Generation:    func(cm *v1.ConfigMap) any { return cm.Data },
	Validate: func(cm *v1.ConfigMap) field.ErrorList {
		return field.ErrorList{field.Required(field.NewPath("data"), "")}
	},
	ValidateUpdate: noUpdateErrors[*v1.ConfigMap],
	Canonicalize:   func(cm *v1.ConfigMap) { cm.Name = strings.ToLower(cm.Name) },
	Warnings:       func(*v1.ConfigMap) []string { return []string{"create"} },
	UpdateWarnings: func(_, _ *v1.ConfigMap) []string { return []string{"update"} },
	StatusWarnings: func(_, _ *v1.ConfigMap) []string { return []string{"status"} },
}

type sameName struct{}

func (sameName) GenerateName(base string) string { return base }

func TestSwitchesAndHooks(t *testing.T) {
	s := configMaps.Strategy(runtime.NewScheme())
	if s.NamespaceScoped() || !s.AllowCreateOnUpdate(ctx) || s.AllowUnconditionalUpdate(ctx) {
		t.Errorf("scope %v, create on update %v, unconditional %v", s.NamespaceScoped(), s.AllowCreateOnUpdate(ctx), s.AllowUnconditionalUpdate(ctx))
	}
	if p := s.DefaultGarbageCollectionPolicy(ctx); p != rest.OrphanDependents {
		t.Errorf("policy %q", p)
	}
	if n := s.GenerateName("x-"); n != "x-" {
		t.Errorf("generated %q", n)
	}
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "Web"}, Data: map[string]string{"a": "1"}}
	s.Canonicalize(cm)
	if cm.Name != "web" {
		t.Errorf("canonical name %q", cm.Name)
	}
	s.PrepareForCreate(ctx, cm)
	upd := cm.DeepCopy()
	upd.Data["a"] = "2"
	s.PrepareForUpdate(ctx, upd, cm)
	if cm.Generation != 1 || upd.Generation != 2 {
		t.Errorf("generations %d, %d", cm.Generation, upd.Generation)
	}
	if errs := s.Validate(ctx, cm); len(errs) != 1 {
		t.Errorf("Validate = %v", errs)
	}
	st := configMaps.StatusStrategy(runtime.NewScheme())
	if errs := st.ValidateUpdate(ctx, upd, cm); len(errs) != 0 {
		t.Errorf("status ValidateUpdate without its own = %v, want ValidateUpdate's", errs)
	}
	got := []string{s.WarningsOnCreate(ctx, cm)[0], s.WarningsOnUpdate(ctx, upd, cm)[0], st.WarningsOnUpdate(ctx, upd, cm)[0]}
	if strings.Join(got, ",") != "create,update,status" {
		t.Errorf("warnings %v", got)
	}
}

func TestAttrsAndPredicate(t *testing.T) {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "prod", Labels: map[string]string{"app": "web"}}}
	l, f, err := replicaSets.Attrs(rs)
	if err != nil || l["app"] != "web" || f["metadata.name"] != "web" || f["metadata.namespace"] != "prod" {
		t.Errorf("namespaced attrs %v %v %v", l, f, err)
	}
	if _, f, _ := configMaps.Attrs(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "x"}}); f.Has("metadata.namespace") {
		t.Errorf("cluster-scoped attrs %v", f)
	}
	if _, _, err := replicaSets.Attrs(&v1.ConfigMap{}); err == nil {
		t.Error("attrs of another kind's object")
	}
	k := replicaSets
	k.Fields = func(rs *appsv1.ReplicaSet) fields.Set { return fields.Set{"spec.x": rs.Name} }
	k.IndexFields = []string{"spec.x"}
	p := k.Predicate(labels.Everything(), fields.OneTermEqualSelector("spec.x", "web"))
	if ok, err := p.Matches(rs); !ok || err != nil || len(p.IndexFields) != 1 {
		t.Errorf("custom fields: match %v %v, index %v", ok, err, p.IndexFields)
	}
}

func TestAKindThatDoesNotFitItsTypePanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "*v1.ConfigMap has no Spec") {
			t.Errorf("recovered %v", r)
		}
	}()
	k := configMaps
	k.Status = true
	k.Strategy(runtime.NewScheme())
}
