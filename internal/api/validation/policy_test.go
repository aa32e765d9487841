package validation

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidateLimitRange(t *testing.T) {
	q := resource.MustParse
	meta := metav1.ObjectMeta{Name: "lr", Namespace: "default"}
	for _, tc := range []struct {
		name  string
		items []v1.LimitRangeItem
		wants []want
	}{
		{"valid", []v1.LimitRangeItem{{Type: v1.LimitTypeContainer, Min: v1.ResourceList{"cpu": q("100m")}, Max: v1.ResourceList{"cpu": q("1")},
			Default: v1.ResourceList{"cpu": q("500m")}, DefaultRequest: v1.ResourceList{"cpu": q("200m")}, MaxLimitRequestRatio: v1.ResourceList{"cpu": q("4")}}}, nil},
		{"min above max", []v1.LimitRangeItem{{Type: v1.LimitTypeContainer, Min: v1.ResourceList{"cpu": q("2")}, Max: v1.ResourceList{"cpu": q("1")}}},
			[]want{{field.ErrorTypeInvalid, "spec.limits[0].min[cpu]", "min value 2 is greater than max value 1"}}},
		{"default request above default", []v1.LimitRangeItem{{Type: v1.LimitTypeContainer, Default: v1.ResourceList{"memory": q("1Gi")}, DefaultRequest: v1.ResourceList{"memory": q("2Gi")}}},
			[]want{{field.ErrorTypeInvalid, "spec.limits[0].defaultRequest[memory]", "default request value 2Gi is greater than default limit value 1Gi"}}},
		{"pod defaults forbidden", []v1.LimitRangeItem{{Type: v1.LimitTypePod, Default: v1.ResourceList{"cpu": q("1")}}},
			[]want{{field.ErrorTypeForbidden, "spec.limits[0].default", "may not be specified when `type` is 'Pod'"}}},
		{"duplicate type and ratio below 1", []v1.LimitRangeItem{{Type: v1.LimitTypeContainer}, {Type: v1.LimitTypeContainer, MaxLimitRequestRatio: v1.ResourceList{"cpu": q("500m")}}},
			[]want{{field.ErrorTypeDuplicate, "spec.limits[1].type", ""}, {field.ErrorTypeInvalid, "spec.limits[1].maxLimitRequestRatio[cpu]", "is less than 1"}}},
		{"pvc needs storage bound", []v1.LimitRangeItem{{Type: v1.LimitTypePersistentVolumeClaim}},
			[]want{{field.ErrorTypeRequired, "spec.limits[0].limits", "either minimum or maximum storage value is required"}}},
		{"negative", []v1.LimitRangeItem{{Type: v1.LimitTypeContainer, Max: v1.ResourceList{"cpu": q("-1")}}},
			[]want{{field.ErrorTypeInvalid, "spec.limits[0].max[cpu]", "must be greater than or equal to 0"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkErrors(t, ValidateLimitRange(&v1.LimitRange{ObjectMeta: meta, Spec: v1.LimitRangeSpec{Limits: tc.items}}), tc.wants...)
		})
	}
}

func TestValidateResourceQuota(t *testing.T) {
	q := resource.MustParse
	meta := metav1.ObjectMeta{Name: "rq", Namespace: "default"}
	checkErrors(t, ValidateResourceQuota(&v1.ResourceQuota{ObjectMeta: meta, Spec: v1.ResourceQuotaSpec{
		Hard: v1.ResourceList{"pods": q("2"), "requests.cpu": q("1"), "count/deployments.apps": q("3"), "requests.nvidia.com/gpu": q("1")}}}))
	checkErrors(t, ValidateResourceQuota(&v1.ResourceQuota{ObjectMeta: meta, Spec: v1.ResourceQuotaSpec{
		Hard:   v1.ResourceList{"widgets": q("1"), "pods": q("-1")},
		Scopes: []v1.ResourceQuotaScope{"Forever", v1.ResourceQuotaScopeBestEffort, v1.ResourceQuotaScopeBestEffort}}}),
		want{field.ErrorTypeInvalid, "spec.hard[widgets]", "must be a standard resource for quota"},
		want{field.ErrorTypeInvalid, "spec.hard[pods]", "must be greater than or equal to 0"},
		want{field.ErrorTypeNotSupported, "spec.scopes[0]", ""},
		want{field.ErrorTypeDuplicate, "spec.scopes[2]", ""})
	old := &v1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "rq", Namespace: "default", ResourceVersion: "1"},
		Spec: v1.ResourceQuotaSpec{Scopes: []v1.ResourceQuotaScope{v1.ResourceQuotaScopeBestEffort}}}
	upd := old.DeepCopy()
	upd.Spec.Scopes = nil
	checkErrors(t, ValidateResourceQuotaUpdate(upd, old), want{field.ErrorTypeInvalid, "spec.scopes", "field is immutable"})
}

func TestValidateWebhookConfigurations(t *testing.T) {
	none := admissionregistrationv1.SideEffectClassNone
	some := admissionregistrationv1.SideEffectClassSome
	url := "https://127.0.0.1:9443/mutate"
	httpURL := "http://127.0.0.1/x"
	timeout := int32(31)
	ok := admissionregistrationv1.MutatingWebhook{Name: "inject.sidecar.berth.dev", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url},
		SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"CREATE"},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}}
	meta := metav1.ObjectMeta{Name: "hooks"}
	checkErrors(t, ValidateMutatingWebhookConfiguration(&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: meta, Webhooks: []admissionregistrationv1.MutatingWebhook{ok}}))

	bad := ok
	bad.Name = "two.parts"
	bad.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &httpURL}
	bad.SideEffects = &some
	bad.TimeoutSeconds = &timeout
	bad.AdmissionReviewVersions = []string{"v2"}
	bad.Rules = []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"*", "CREATE"}}}
	checkErrors(t, ValidateMutatingWebhookConfiguration(&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: meta, Webhooks: []admissionregistrationv1.MutatingWebhook{ok, bad, ok}}),
		want{field.ErrorTypeInvalid, "webhooks[1].name", "should be a domain with at least three segments separated by dots"},
		want{field.ErrorTypeDuplicate, "webhooks[2].name", ""},
		want{field.ErrorTypeInvalid, "webhooks[1].clientConfig.url", "'https' is the only allowed URL scheme"},
		want{field.ErrorTypeNotSupported, "webhooks[1].sideEffects", ""},
		want{field.ErrorTypeInvalid, "webhooks[1].timeoutSeconds", "the timeout value must be between 1 and 30 seconds"},
		want{field.ErrorTypeInvalid, "webhooks[1].admissionReviewVersions", "must include at least one of v1, v1beta1"},
		want{field.ErrorTypeInvalid, "webhooks[1].rules[0].operations", "if '*' is present, must not specify other operations"},
		want{field.ErrorTypeRequired, "webhooks[1].rules[0].apiGroups", ""},
		want{field.ErrorTypeRequired, "webhooks[1].rules[0].apiVersions", ""},
		want{field.ErrorTypeRequired, "webhooks[1].rules[0].resources", ""})

	noSE := admissionregistrationv1.ValidatingWebhook{Name: "check.sidecar.berth.dev", AdmissionReviewVersions: []string{"v1"},
		ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "default"}}}
	checkErrors(t, ValidateValidatingWebhookConfiguration(&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: meta, Webhooks: []admissionregistrationv1.ValidatingWebhook{noSE}}),
		want{field.ErrorTypeRequired, "webhooks[0].sideEffects", ""},
		want{field.ErrorTypeRequired, "webhooks[0].clientConfig.service.name", ""})
}

func testCSRPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func TestValidateCertificateSigningRequest(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "csr-1"}
	good := certificatesv1.CertificateSigningRequestSpec{Request: testCSRPEM(t), SignerName: "kubernetes.io/kube-apiserver-client-kubelet",
		Usages: []certificatesv1.KeyUsage{"digital signature", "client auth"}}
	checkErrors(t, ValidateCertificateSigningRequest(&certificatesv1.CertificateSigningRequest{ObjectMeta: meta, Spec: good}))

	short := int32(599)
	bad := good
	bad.Request = []byte("not pem")
	bad.SignerName = "no-slash"
	bad.Usages = []certificatesv1.KeyUsage{"client auth", "client auth", "flying"}
	bad.ExpirationSeconds = &short
	checkErrors(t, ValidateCertificateSigningRequest(&certificatesv1.CertificateSigningRequest{ObjectMeta: meta, Spec: bad}),
		want{field.ErrorTypeInvalid, "spec.request", "CERTIFICATE REQUEST"},
		want{field.ErrorTypeInvalid, "spec.signerName", "example.com/signer-name"},
		want{field.ErrorTypeDuplicate, "spec.usages[1]", ""},
		want{field.ErrorTypeNotSupported, "spec.usages[2]", ""},
		want{field.ErrorTypeInvalid, "spec.expirationSeconds", "may not specify a duration less than 600 seconds"})

	none := good
	none.Usages, none.SignerName = nil, ""
	checkErrors(t, ValidateCertificateSigningRequest(&certificatesv1.CertificateSigningRequest{ObjectMeta: meta, Spec: none}),
		want{field.ErrorTypeRequired, "spec.usages", ""}, want{field.ErrorTypeRequired, "spec.signerName", ""})

	// Status: Approved and Denied exclude each other; a certificate needs
	// Approved; once approved the condition stays; a certificate never changes.
	old := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "csr-1", ResourceVersion: "1"}, Spec: good}
	both := old.DeepCopy()
	both.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: "Approved", Status: "True"}, {Type: "Denied", Status: "True"}}
	checkErrors(t, ValidateCertificateSigningRequestStatusUpdate(both, old), want{field.ErrorTypeInvalid, "status.conditions", "mutually exclusive"})
	unapproved := old.DeepCopy()
	unapproved.Status.Certificate = []byte("junk")
	checkErrors(t, ValidateCertificateSigningRequestStatusUpdate(unapproved, old),
		want{field.ErrorTypeInvalid, "status.certificate", "may only be set if the Approved condition is true"},
		want{field.ErrorTypeInvalid, "status.certificate", "PEM"})
	approved := old.DeepCopy()
	approved.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: "Approved", Status: "True"}}
	removed := approved.DeepCopy()
	removed.Status.Conditions = nil
	checkErrors(t, ValidateCertificateSigningRequestStatusUpdate(removed, approved), want{field.ErrorTypeForbidden, "status.conditions", `may not remove a condition of type "Approved"`})
	changedSpec := old.DeepCopy()
	changedSpec.Spec.SignerName = "example.com/other"
	checkErrors(t, ValidateCertificateSigningRequestUpdate(changedSpec, old), want{field.ErrorTypeForbidden, "spec", "field is immutable"})
}
