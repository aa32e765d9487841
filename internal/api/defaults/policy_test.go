package defaults

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestLimitRangeDefaults(t *testing.T) {
	lr := &corev1.LimitRange{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
		{Type: corev1.LimitTypeContainer, Max: corev1.ResourceList{"cpu": resource.MustParse("2")}, Min: corev1.ResourceList{"memory": resource.MustParse("64Mi")},
			Default: corev1.ResourceList{"ephemeral-storage": resource.MustParse("1Gi")}},
		{Type: corev1.LimitTypePod, Max: corev1.ResourceList{"cpu": resource.MustParse("4")}},
	}}}
	LimitRange(lr)
	c := lr.Spec.Limits[0]
	if q := c.Default["cpu"]; q.String() != "2" {
		t.Errorf("default cpu = %v, want max 2", q.String())
	}
	if q := c.DefaultRequest["cpu"]; q.String() != "2" {
		t.Errorf("defaultRequest cpu = %v, want the default 2", q.String())
	}
	if q := c.DefaultRequest["memory"]; q.String() != "64Mi" {
		t.Errorf("defaultRequest memory = %v, want min 64Mi", q.String())
	}
	if q := c.DefaultRequest["ephemeral-storage"]; q.String() != "1Gi" {
		t.Errorf("defaultRequest ephemeral-storage = %v, want the default 1Gi", q.String())
	}
	if _, ok := c.Default["memory"]; ok {
		t.Error("min must not become a default limit")
	}
	if lr.Spec.Limits[1].Default != nil {
		t.Error("Pod limits get no defaults")
	}
}

func TestWebhookDefaults(t *testing.T) {
	m := &admissionregistrationv1.MutatingWebhookConfiguration{Webhooks: []admissionregistrationv1.MutatingWebhook{{
		ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Name: "s", Namespace: "n"}},
		Rules:        []admissionregistrationv1.RuleWithOperations{{}},
	}}}
	MutatingWebhookConfiguration(m)
	w := m.Webhooks[0]
	if *w.FailurePolicy != admissionregistrationv1.Fail || *w.MatchPolicy != admissionregistrationv1.Equivalent || *w.TimeoutSeconds != 10 ||
		*w.ReinvocationPolicy != admissionregistrationv1.NeverReinvocationPolicy || w.NamespaceSelector == nil || w.ObjectSelector == nil ||
		*w.ClientConfig.Service.Port != 443 || *w.Rules[0].Scope != admissionregistrationv1.AllScopes {
		t.Errorf("mutating defaults = %+v", w)
	}
	ignore := admissionregistrationv1.Ignore
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{Webhooks: []admissionregistrationv1.ValidatingWebhook{{FailurePolicy: &ignore}}}
	ValidatingWebhookConfiguration(v)
	if *v.Webhooks[0].FailurePolicy != admissionregistrationv1.Ignore || *v.Webhooks[0].TimeoutSeconds != 10 {
		t.Errorf("validating defaults = %+v", v.Webhooks[0])
	}
}
