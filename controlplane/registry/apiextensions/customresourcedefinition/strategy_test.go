package customresourcedefinition

import (
	"context"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/internal/api/scheme"
)

func sample() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: &apiextensionsv1.CustomResourceValidation{
					OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}},
			},
		},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{AcceptedNames: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Stale"}},
	}
}

func TestPrepareForCreate(t *testing.T) {
	s := NewStrategy(scheme.New())
	crd := sample()
	s.PrepareForCreate(context.Background(), crd)
	if crd.Generation != 1 || crd.Status.AcceptedNames.Kind != "" {
		t.Errorf("after PrepareForCreate: generation %d, status %+v; want 1 and a cleared status", crd.Generation, crd.Status)
	}
	if len(crd.Status.StoredVersions) != 1 || crd.Status.StoredVersions[0] != "v1" {
		t.Errorf("stored versions %v, want [v1]", crd.Status.StoredVersions)
	}
	if errs := s.Validate(context.Background(), crd); len(errs) != 0 {
		t.Errorf("valid CRD refused: %v", errs)
	}
}

// TestValidateUsesUpstreamRules checks a few of upstream's messages come
// through the conversion to the internal type, with their field paths.
func TestValidateUsesUpstreamRules(t *testing.T) {
	s := NewStrategy(scheme.New())
	cases := map[string]struct {
		mutate func(*apiextensionsv1.CustomResourceDefinition)
		field  string
		detail string
	}{
		"name not plural.group": {func(c *apiextensionsv1.CustomResourceDefinition) { c.Name = "widget.example.com" },
			"metadata.name", `must be spec.names.plural+"."+spec.group`},
		"no storage version": {func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Versions[0].Storage = false },
			"spec.versions", "must have exactly one version marked as storage version"},
		"bad CEL rule": {func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions[0].Schema.OpenAPIV3Schema.XValidations = apiextensionsv1.ValidationRules{{Rule: "self.nope ==="}}
		}, "spec.validation.openAPIV3Schema.x-kubernetes-validations[0].rule", "compilation failed"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			crd := sample()
			c.mutate(crd)
			s.PrepareForCreate(context.Background(), crd)
			errs := s.Validate(context.Background(), crd)
			for _, e := range errs {
				if e.Field == c.field && strings.Contains(e.Error(), c.detail) {
					return
				}
			}
			t.Fatalf("errors %v: want one on %s saying %q", errs, c.field, c.detail)
		})
	}
}

func TestUpdateKeepsStatusAndBumpsGeneration(t *testing.T) {
	s := NewStrategy(scheme.New())
	old := sample()
	s.PrepareForCreate(context.Background(), old)
	old.Status.AcceptedNames = old.Spec.Names
	old.ResourceVersion = "1"
	cur := old.DeepCopy()
	cur.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
	cur.Spec.Names.ShortNames = []string{"wd"}
	s.PrepareForUpdate(context.Background(), cur, old)
	if cur.Generation != 2 || cur.Status.AcceptedNames.Kind != "Widget" {
		t.Errorf("after a spec update: generation %d, accepted names %+v", cur.Generation, cur.Status.AcceptedNames)
	}
	if errs := s.ValidateUpdate(context.Background(), cur, old); len(errs) != 0 {
		t.Errorf("valid update refused: %v", errs)
	}
	// Changing the scope of an established CRD is refused, as upstream.
	old.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}
	bad := cur.DeepCopy()
	bad.Spec.Scope = apiextensionsv1.ClusterScoped
	if errs := s.ValidateUpdate(context.Background(), bad, old); len(errs) != 1 || errs[0].Field != "spec.scope" {
		t.Errorf("scope change: %v", errs)
	}
}

func TestStatusStrategyKeepsSpec(t *testing.T) {
	s := NewStatusStrategy(scheme.New())
	old := sample()
	cur := old.DeepCopy()
	cur.Spec.Group = "other.example.com"
	cur.Status.AcceptedNames = old.Spec.Names
	s.PrepareForUpdate(context.Background(), cur, old)
	if cur.Spec.Group != "example.com" || cur.Status.AcceptedNames.Plural != "widgets" {
		t.Errorf("status update: spec group %q, accepted names %+v", cur.Spec.Group, cur.Status.AcceptedNames)
	}
	if _, ok := s.GetResetFields()["apiextensions.k8s.io/v1"]; !ok || len(s.GetResetFields()) != 1 {
		t.Errorf("reset fields %v: want the served version only", s.GetResetFields())
	}
}
