package apiserver_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"berth/internal/testpki"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// serviceWebhook is an admission webhook server on 127.0.0.1 whose
// certificate names SERVICE.NAMESPACE.svc, reached by the apiserver through
// a Service and its EndpointSlice. /inject adds a sidecar (with a
// warning), /deny refuses with a message.
type serviceWebhook struct {
	port  int32
	caPEM []byte
	mu    sync.Mutex
	// requests are the AdmissionReview requests received, by path.
	requests map[string][]*admissionv1.AdmissionRequest
}

func (s *serviceWebhook) received(path string) []*admissionv1.AdmissionRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*admissionv1.AdmissionRequest(nil), s.requests[path]...)
}

func startServiceWebhook(t *testing.T, dnsName string) *serviceWebhook {
	t.Helper()
	ca := testpki.NewCA(t, "service-webhook-ca")
	s := &serviceWebhook{caPEM: ca.CertPEM, requests: map[string][]*admissionv1.AdmissionRequest{}}
	handle := func(respond func(req *admissionv1.AdmissionRequest, resp *admissionv1.AdmissionResponse)) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			var in admissionv1.AdmissionReview
			if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Request == nil {
				http.Error(w, "bad review", http.StatusBadRequest)
				return
			}
			s.mu.Lock()
			s.requests[r.URL.Path] = append(s.requests[r.URL.Path], in.Request)
			s.mu.Unlock()
			resp := &admissionv1.AdmissionResponse{UID: in.Request.UID, Allowed: true}
			respond(in.Request, resp)
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(admissionv1.AdmissionReview{TypeMeta: in.TypeMeta, Response: resp})
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/inject", handle(func(req *admissionv1.AdmissionRequest, resp *admissionv1.AdmissionResponse) {
		pod := &corev1.Pod{}
		if err := json.Unmarshal(req.Object.Raw, pod); err != nil {
			return
		}
		for _, c := range pod.Spec.Containers {
			if c.Name == "sidecar" {
				return
			}
		}
		sidecar := corev1.Container{Name: "sidecar", Image: "busybox", Command: []string{"sleep", "3600"}}
		patch, _ := json.Marshal([]map[string]any{{"op": "add", "path": "/spec/containers/-", "value": sidecar}})
		pt := admissionv1.PatchTypeJSONPatch
		resp.Patch, resp.PatchType = patch, &pt
		resp.Warnings = []string{"sidecar injected by the test webhook"}
	}))
	mux.Handle("/deny", handle(func(req *admissionv1.AdmissionRequest, resp *admissionv1.AdmissionResponse) {
		resp.Allowed = false
		resp.Result = &metav1.Status{Code: http.StatusForbidden, Message: "pods labelled deny=yes are not welcome"}
	}))
	s.port = int32(testpki.ServeTLS(t, mux, &tls.Config{Certificates: []tls.Certificate{ca.Serving(t, dnsName)}}))
	return s
}

// exposeService creates a selectorless Service (port 443) in ns and the
// EndpointSlice pointing it at 127.0.0.1:targetPort.
func exposeService(t *testing.T, cs kubernetes.Interface, ns, name string, targetPort int32) {
	t.Helper()
	ctx := context.Background()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP,
		Ports: []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(targetPort)}}}}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create service: %v", err)
	}
	portName, ready, proto := "https", true, corev1.ProtocolTCP
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"127.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &targetPort, Protocol: &proto}},
	}
	if _, err := cs.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create endpoint slice: %v", err)
	}
}

// validatingHook is a webhook calling cc for rule in namespaces labelled
// nsLabels: no side effects, failing closed, AdmissionReview v1.
func validatingHook(name string, cc admissionregistrationv1.WebhookClientConfig, rule admissionregistrationv1.RuleWithOperations, nsLabels map[string]string) admissionregistrationv1.ValidatingWebhook {
	none, fail := admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.Fail
	return admissionregistrationv1.ValidatingWebhook{Name: name, ClientConfig: cc, Rules: []admissionregistrationv1.RuleWithOperations{rule},
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: nsLabels},
		SideEffects:       &none, FailurePolicy: &fail, AdmissionReviewVersions: []string{"v1"}}
}

// mutatingHook is validatingHook's webhook, mutating.
func mutatingHook(name string, cc admissionregistrationv1.WebhookClientConfig, rule admissionregistrationv1.RuleWithOperations, nsLabels map[string]string) admissionregistrationv1.MutatingWebhook {
	v := validatingHook(name, cc, rule, nsLabels)
	return admissionregistrationv1.MutatingWebhook{Name: v.Name, ClientConfig: v.ClientConfig, Rules: v.Rules, NamespaceSelector: v.NamespaceSelector,
		SideEffects: v.SideEffects, FailurePolicy: v.FailurePolicy, AdmissionReviewVersions: v.AdmissionReviewVersions}
}

// createValidating creates a ValidatingWebhookConfiguration of hooks,
// deleted when the test ends.
func createValidating(t *testing.T, cs kubernetes.Interface, name string, hooks ...admissionregistrationv1.ValidatingWebhook) *admissionregistrationv1.ValidatingWebhookConfiguration {
	t.Helper()
	api := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	created, err := api.Create(context.Background(), &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: hooks}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create validating webhook configuration: %v", err)
	}
	t.Cleanup(func() { _ = api.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return created
}

// createMutating creates a MutatingWebhookConfiguration of hooks, deleted
// when the test ends.
func createMutating(t *testing.T, cs kubernetes.Interface, name string, hooks ...admissionregistrationv1.MutatingWebhook) {
	t.Helper()
	api := cs.AdmissionregistrationV1().MutatingWebhookConfigurations()
	if _, err := api.Create(context.Background(), &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: hooks}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create mutating webhook configuration: %v", err)
	}
	t.Cleanup(func() { _ = api.Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

// podCreateRule matches creating core/v1 pods.
func podCreateRule() admissionregistrationv1.RuleWithOperations {
	return admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
	}
}

// connectRule matches CONNECT to core/v1 subresources.
func connectRule(resources ...string) admissionregistrationv1.RuleWithOperations {
	return admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Connect},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: resources},
	}
}

// TestAdmissionWebhookThroughService runs a sidecar injector the way
// clusters do: the webhook is a Service (here backed by an EndpointSlice
// pointing at a server on 127.0.0.1) whose certificate names
// SERVICE.NAMESPACE.svc. Checked through the real API and kubectl: the
// namespace and object selectors, the warning kubectl prints, the second
// round of in-tree admission (the LimitRange defaults reach the injected
// sidecar), a validating webhook's refusal as the client sees it, and a
// server-side dry run refused by a webhook with side effects.
func TestAdmissionWebhookThroughService(t *testing.T) {
	cs := shared.Client(t)
	ctx := context.Background()
	const hookNS, ns = "adm-svc-hooks", "adm-svc-app"
	admissionNamespace(t, cs, hookNS, nil)
	admissionNamespace(t, cs, ns, map[string]string{"adm-svc-test": "inject"})
	hook := startServiceWebhook(t, "injector."+hookNS+".svc")
	exposeService(t, cs, hookNS, "injector", hook.port)
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "defaults"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type: corev1.LimitTypeContainer, DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m")},
		Default: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
	}}}}
	if _, err := cs.CoreV1().LimitRanges(ns).Create(ctx, lr, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create limit range: %v", err)
	}

	svcRef := func(path string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{
			Service:  &admissionregistrationv1.ServiceReference{Namespace: hookNS, Name: "injector", Path: &path},
			CABundle: hook.caPEM,
		}
	}
	injector := mutatingHook("injector.adm-svc.berth.dev", svcRef("/inject"), podCreateRule(), map[string]string{"adm-svc-test": "inject"})
	injector.ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "sidecar", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"off"}}}}
	injector.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "not-opted-out", Expression: `object.metadata.name != "cel-skipped"`}}
	createMutating(t, cs, "adm-svc-injector", injector)

	// The configuration, service and slice reach the plugin through the
	// server's informers: retry with new pods until one is mutated.
	var pod *corev1.Pod
	n := 0
	poll(t, "a pod injected through the service", func() bool {
		n++
		p, err := cs.CoreV1().Pods(ns).Create(ctx, plainPod(fmt.Sprintf("p%d", n)), metav1.CreateOptions{})
		if err != nil && !strings.Contains(err.Error(), "failed calling webhook") {
			t.Fatalf("create pod: %v", err)
		}
		pod = p
		return err == nil && len(p.Spec.Containers) == 2
	})
	if pod.Spec.Containers[1].Name != "sidecar" {
		t.Fatalf("containers %+v", pod.Spec.Containers)
	}
	// Reinvocation: the in-tree plugins ran again after the webhook's
	// change, so the sidecar has the LimitRange's defaults too.
	for _, c := range pod.Spec.Containers {
		if got := c.Resources.Requests[corev1.ResourceCPU]; got.Cmp(resource.MustParse("50m")) != 0 {
			t.Errorf("container %s: cpu request %s, want the LimitRange default 50m", c.Name, got.String())
		}
	}
	reqs := hook.received("/inject")
	last := reqs[len(reqs)-1]
	if last.Namespace != ns || last.Operation != admissionv1.Create || last.Kind.Kind != "Pod" || last.UserInfo.Username == "" {
		t.Errorf("review request %+v", last)
	}

	// kubectl shows the webhook's warning; a pod labelled sidecar=off is left alone.
	manifest := func(name, labels string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  labels: {%s}\nspec:\n  containers:\n  - name: main\n    image: busybox\n", name, labels)
	}
	_, stderr, err := shared.kubectl(t, "1.32", manifest("via-kubectl", ""), "create", "-n", ns, "-f", "-")
	if err != nil || !strings.Contains(stderr, "Warning: sidecar injected by the test webhook") {
		t.Errorf("kubectl create: %v; stderr %q, want the webhook's warning", err, stderr)
	}
	off, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "no-sidecar", Labels: map[string]string{"sidecar": "off"}},
		Spec: plainPod("x").Spec}, metav1.CreateOptions{})
	if err != nil || len(off.Spec.Containers) != 1 {
		t.Fatalf("pod outside the object selector: %v, %+v", err, off)
	}
	// A matchCondition (CEL) false: not injected.
	skipped, err := cs.CoreV1().Pods(ns).Create(ctx, plainPod("cel-skipped"), metav1.CreateOptions{})
	if err != nil || len(skipped.Spec.Containers) != 1 {
		t.Fatalf("pod failing the matchCondition: %v, %+v", err, skipped)
	}
	// Outside the namespace selector: not injected.
	other, err := cs.CoreV1().Pods(hookNS).Create(ctx, plainPod("elsewhere"), metav1.CreateOptions{})
	if err != nil || len(other.Spec.Containers) != 1 {
		t.Fatalf("pod outside the namespace selector: %v, %+v", err, other)
	}

	// A validating webhook's refusal reaches the client with its message;
	// a server-side dry run reaches a NoneOnDryRun webhook marked dryRun.
	// (v1 only admits None and NoneOnDryRun, so the refusal of dry runs by
	// webhooks with side effects is covered by the plugin's unit tests.)
	noneOnDryRun := admissionregistrationv1.SideEffectClassNoneOnDryRun
	denier := validatingHook("deny.adm-svc.berth.dev", svcRef("/deny"), podCreateRule(), map[string]string{"adm-svc-test": "inject"})
	denier.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"deny": "yes"}}
	denier.SideEffects = &noneOnDryRun
	createValidating(t, cs, "adm-svc-deny", denier)
	var refused error
	poll(t, "a pod refused by the validating webhook", func() bool {
		n++
		p := plainPod(fmt.Sprintf("denied%d", n))
		p.Labels = map[string]string{"deny": "yes"}
		_, refused = cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		return refused != nil
	})
	want := `admission webhook "deny.adm-svc.berth.dev" denied the request: pods labelled deny=yes are not welcome`
	if !apierrors.IsForbidden(refused) || !strings.Contains(refused.Error(), want) {
		t.Fatalf("refusal %v, want 403 with %q", refused, want)
	}
	_, stderr, err = shared.kubectl(t, "1.32", manifest("dry", "deny: \"yes\""), "create", "-n", ns, "--dry-run=server", "-f", "-")
	if err == nil || !strings.Contains(stderr, want) {
		t.Fatalf("server-side dry run: %v; stderr %q, want the webhook's refusal", err, stderr)
	}
	denied := hook.received("/deny")
	if dry := denied[len(denied)-1]; dry.DryRun == nil || !*dry.DryRun || dry.Name != "dry" {
		t.Fatalf("dry-run review: name %q dryRun %v, want dryRun true", dry.Name, dry.DryRun)
	}
	if _, err := cs.CoreV1().Pods(ns).Get(ctx, "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the dry-run pod exists: %v", err)
	}
}
