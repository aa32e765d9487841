package flowcontrol

import (
	"sort"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"

	"berth/internal/api/defaults"
)

func schema(name string, precedence int32, generation int64, annotations map[string]string) *flowcontrolv1.FlowSchema {
	return &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: name, Generation: generation, Annotations: annotations},
		Spec: flowcontrolv1.FlowSchemaSpec{MatchingPrecedence: precedence,
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "pl"}},
	}
}

func auto(v string) map[string]string {
	return map[string]string{flowcontrolv1.AutoUpdateAnnotationKey: v}
}

// summary is "verb name[:precedence:annotation]" per step, sorted.
func summary(steps []step[*flowcontrolv1.FlowSchema]) []string {
	var out []string
	for _, s := range steps {
		out = append(out, string(s.verb)+" "+s.obj.Name+" "+s.obj.Annotations[flowcontrolv1.AutoUpdateAnnotationKey]+
			" "+string(rune('0'+s.obj.Spec.MatchingPrecedence/100)))
	}
	sort.Strings(out)
	return out
}

func TestPlanFlowSchemas(t *testing.T) {
	mandatory := []*flowcontrolv1.FlowSchema{schema("m", 100, 0, auto("true"))}
	suggested := []*flowcontrolv1.FlowSchema{schema("s", 200, 0, auto("true"))}
	for name, tc := range map[string]struct {
		current []*flowcontrolv1.FlowSchema
		want    []string
	}{
		"empty cluster: both created": {nil, []string{"create m true 1", "create s true 2"}},
		"up to date: nothing": {
			[]*flowcontrolv1.FlowSchema{schema("m", 100, 3, auto("true")), schema("s", 200, 1, auto("true"))}, nil},
		"mandatory changed: spec restored": {
			[]*flowcontrolv1.FlowSchema{schema("m", 900, 2, auto("false")), schema("s", 200, 1, auto("true"))}, []string{"update m true 1"}},
		"suggested changed with autoupdate false: kept": {
			[]*flowcontrolv1.FlowSchema{schema("m", 100, 1, auto("true")), schema("s", 900, 2, auto("false"))}, nil},
		"suggested changed, no annotation, generation 1: restored": {
			[]*flowcontrolv1.FlowSchema{schema("m", 100, 1, auto("true")), schema("s", 900, 1, nil)}, []string{"update s true 2"}},
		"suggested changed by a user, no annotation: kept, annotated false": {
			[]*flowcontrolv1.FlowSchema{schema("m", 100, 1, auto("true")), schema("s", 900, 2, nil)}, []string{"update s false 9"}},
		"stale auto-updated object: deleted; a user's object: kept": {
			[]*flowcontrolv1.FlowSchema{schema("m", 100, 1, auto("true")), schema("s", 200, 1, auto("true")),
				schema("old", 300, 1, auto("true")), schema("mine", 300, 1, nil)}, []string{"delete old true 3"}},
	} {
		t.Run(name, func(t *testing.T) {
			got := summary(plan(byName(tc.current), mandatory, suggested, flowSchemaOps))
			if len(got) != len(tc.want) {
				t.Fatalf("plan = %q, want %q", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("plan = %q, want %q", got, tc.want)
				}
			}
		})
	}
}

// TestPlanBootstrapIsStable: once the bootstrap objects are in place, as
// the apiserver stores them (defaulted), nothing more is planned.
func TestPlanBootstrapIsStable(t *testing.T) {
	created := map[string]*flowcontrolv1.PriorityLevelConfiguration{}
	for _, s := range plan(nil, bootstrap.MandatoryPriorityLevelConfigurations, bootstrap.SuggestedPriorityLevelConfigurations, priorityLevelOps) {
		if s.verb != create {
			t.Fatalf("first plan has a %s", s.verb)
		}
		o := s.obj.DeepCopy()
		o.Generation = 1
		defaults.PriorityLevelConfiguration(o)
		created[o.Name] = o
	}
	if steps := plan(created, bootstrap.MandatoryPriorityLevelConfigurations, bootstrap.SuggestedPriorityLevelConfigurations, priorityLevelOps); len(steps) != 0 {
		t.Fatalf("second plan: %d steps, first %s %s", len(steps), steps[0].verb, steps[0].obj.Name)
	}
	// The administrator may change the exempt level's shares.
	ten := int32(10)
	created["exempt"].Spec.Exempt.NominalConcurrencyShares = &ten
	if steps := plan(created, bootstrap.MandatoryPriorityLevelConfigurations, bootstrap.SuggestedPriorityLevelConfigurations, priorityLevelOps); len(steps) != 0 {
		t.Fatalf("exempt's shares changed: %d steps", len(steps))
	}
}
