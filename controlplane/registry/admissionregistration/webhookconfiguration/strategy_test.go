package webhookconfiguration

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth/internal/api/scheme"
)

func TestGenerationFollowsTheWebhooks(t *testing.T) {
	ctx := context.Background()
	s := MutatingKind.Strategy(scheme.New())
	old := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "m"}}
	s.PrepareForCreate(ctx, old)
	if old.Generation != 1 {
		t.Fatalf("generation %d after create, want 1", old.Generation)
	}
	same := old.DeepCopy()
	same.Labels = map[string]string{"a": "b"}
	s.PrepareForUpdate(ctx, same, old)
	if same.Generation != 1 {
		t.Errorf("generation %d after a label change, want 1", same.Generation)
	}
	changed := old.DeepCopy()
	changed.Webhooks = []admissionregistrationv1.MutatingWebhook{{Name: "w.example.com"}}
	s.PrepareForUpdate(ctx, changed, old)
	if changed.Generation != 2 {
		t.Errorf("generation %d after a webhook change, want 2", changed.Generation)
	}
}

func TestValidatingKindValidatesItsOwnType(t *testing.T) {
	s := ValidatingKind.Strategy(scheme.New())
	bad := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "v"},
		Webhooks:   []admissionregistrationv1.ValidatingWebhook{{Name: "not-qualified"}},
	}
	if errs := s.Validate(context.Background(), bad); len(errs) == 0 {
		t.Fatal("a webhook without a qualified name, client config or sideEffects validated")
	}
}

func TestTablesCountTheWebhooks(t *testing.T) {
	now := time.Now()
	created := metav1.NewTime(now.Add(-time.Hour))
	m := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "m", CreationTimestamp: created},
		Webhooks: make([]admissionregistrationv1.MutatingWebhook, 2)}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "v", CreationTimestamp: created},
		Webhooks: make([]admissionregistrationv1.ValidatingWebhook, 3)}
	if row, _ := MutatingKind.Table.Row(m, now); row[0] != "m" || row[1] != int64(2) || row[2] != "60m" {
		t.Errorf("mutating row %v", row)
	}
	if row, _ := ValidatingKind.Table.Row(v, now); row[0] != "v" || row[1] != int64(3) {
		t.Errorf("validating row %v", row)
	}
}

// TestMatchConditionsCompile: a matchCondition whose CEL does not compile
// is refused with upstream's "compilation failed" (the webhook
// conformance spec); names must be unique.
func TestMatchConditionsCompile(t *testing.T) {
	s := ValidatingKind.Strategy(scheme.New())
	url := "https://127.0.0.1/x"
	none := admissionregistrationv1.SideEffectClassNone
	cfg := func(conds ...admissionregistrationv1.MatchCondition) *admissionregistrationv1.ValidatingWebhookConfiguration {
		return &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "v"},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "v.example.com", SideEffects: &none,
				ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url}, AdmissionReviewVersions: []string{"v1"},
				MatchConditions: conds}}}
	}
	good := admissionregistrationv1.MatchCondition{Name: "ok", Expression: `request.userInfo.username != "x" && authorizer.group("").resource("pods").check("get").allowed()`}
	if errs := s.Validate(context.Background(), cfg(good)); len(errs) != 0 {
		t.Fatalf("a good condition: %v", errs)
	}
	errs := s.Validate(context.Background(), cfg(admissionregistrationv1.MatchCondition{Name: "bad", Expression: "... [] bad expression"}))
	if len(errs) != 1 || errs[0].Field != "webhooks[0].matchConditions[0].expression" || !strings.Contains(errs[0].Error(), "compilation failed") {
		t.Fatalf("a bad expression: %v", errs)
	}
	errs = s.Validate(context.Background(), cfg(good, good))
	if len(errs) != 1 || errs[0].Type != field.ErrorTypeDuplicate {
		t.Fatalf("duplicate names: %v", errs)
	}
}

// TestServicePath: an empty service path is the root, as upstream (the
// webhook conformance spec registers one); a relative one is refused.
func TestServicePath(t *testing.T) {
	s := ValidatingKind.Strategy(scheme.New())
	none := admissionregistrationv1.SideEffectClassNone
	for path, ok := range map[string]bool{"": true, "/": true, "/x": true, "x": false} {
		p := path
		cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "v"},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "v.example.com", SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
				ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "svc", Path: &p}}}}}
		if errs := s.Validate(context.Background(), cfg); (len(errs) == 0) != ok {
			t.Errorf("path %q: %v", path, errs)
		}
	}
}
