package admission_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/kubernetes/fake"
	admissionlisters "k8s.io/client-go/listers/admissionregistration/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"

	berthadm "berth/controlplane/admission"
	"berth/internal/testpki"
)

// reviewServer is a TLS server answering each AdmissionReview with what
// respond returns (marshalled as is), recording requests and query strings.
type reviewServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []*admissionv1.AdmissionRequest
	queries  []string
}

func newReviewServer(t *testing.T, respond func(req *admissionv1.AdmissionRequest) any) *reviewServer {
	t.Helper()
	s := &reviewServer{}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.requests = append(s.requests, in.Request)
		s.queries = append(s.queries, r.URL.RawQuery)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(respond(in.Request))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *reviewServer) clientConfig() admissionregistrationv1.WebhookClientConfig {
	u := s.URL + "/review"
	return admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})}
}

// review wraps a response in an AdmissionReview v1.
func review(resp *admissionv1.AdmissionResponse) *admissionv1.AdmissionReview {
	return &admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Response: resp}
}

// warningRecorder collects the warnings plugins add to a request.
type warningRecorder struct {
	mu   sync.Mutex
	list []string
}

func (r *warningRecorder) AddWarning(_, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, text)
}

// TestWebhookRequestFields: the AdmissionReview v1 request carries what
// upstream sends (uid, kind, resource, subResource, operation, userInfo
// with extra, object, oldObject, options with their kind, dryRun), the
// call carries the timeout, and warnings reach the client.
func TestWebhookRequestFields(t *testing.T) {
	srv := newReviewServer(t, func(req *admissionv1.AdmissionRequest) any {
		return review(&admissionv1.AdmissionResponse{UID: req.UID, Allowed: true, Warnings: []string{"seen by the webhook"}})
	})
	three := int32(3)
	_, v := webhookPlugins(t, nil, []admissionregistrationv1.ValidatingWebhook{validatingHook("fields.example.com", srv.clientConfig(),
		func(w *admissionregistrationv1.ValidatingWebhook) {
			w.TimeoutSeconds = &three
			w.Rules = []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/status"}},
			}}
		})})
	bob := &user.DefaultInfo{Name: "bob", UID: "u-1", Groups: []string{"devs"}, Extra: map[string][]string{"scopes": {"a", "b"}}}
	old, pod := newPod("ns", "p"), newPod("ns", "p")
	pod.Status.Phase = corev1.PodRunning
	a := admission.NewAttributesRecord(pod, old, podGVK, "ns", "p", podGVR, "status", admission.Update, &metav1.UpdateOptions{FieldManager: "me"}, false, bob)
	rec := &warningRecorder{}
	ctx := warning.WithWarningRecorder(context.Background(), rec)
	if err := admit(ctx, v, a); err != nil {
		t.Fatal(err)
	}
	// The same request without the subresource does not match pods/status.
	if err := admit(ctx, v, podCreate(newPod("ns", "q"), bob)); err != nil || len(srv.requests) != 1 {
		t.Fatalf("pods create: %v, %d calls", err, len(srv.requests))
	}
	req := srv.requests[0]
	if req.UID == "" || req.Kind != (metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}) ||
		req.Resource != (metav1.GroupVersionResource{Version: "v1", Resource: "pods"}) || req.SubResource != "status" ||
		req.RequestSubResource != "status" || req.Operation != admissionv1.Update || req.Name != "p" || req.Namespace != "ns" {
		t.Errorf("request %+v", req)
	}
	if req.UserInfo.Username != "bob" || req.UserInfo.UID != "u-1" || len(req.UserInfo.Groups) != 1 || len(req.UserInfo.Extra["scopes"]) != 2 {
		t.Errorf("userInfo %+v", req.UserInfo)
	}
	var sentNew, sentOld corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &sentNew); err != nil || sentNew.Status.Phase != corev1.PodRunning || sentNew.Kind != "Pod" {
		t.Errorf("object %s (%v)", req.Object.Raw, err)
	}
	if err := json.Unmarshal(req.OldObject.Raw, &sentOld); err != nil || sentOld.Status.Phase != "" || sentOld.APIVersion != "v1" {
		t.Errorf("oldObject %s (%v)", req.OldObject.Raw, err)
	}
	var opts metav1.UpdateOptions
	if err := json.Unmarshal(req.Options.Raw, &opts); err != nil || opts.Kind != "UpdateOptions" || opts.APIVersion != "meta.k8s.io/v1" || opts.FieldManager != "me" {
		t.Errorf("options %s (%v)", req.Options.Raw, err)
	}
	if req.DryRun == nil || *req.DryRun {
		t.Errorf("dryRun %v", req.DryRun)
	}
	if srv.queries[0] != "timeout=3s" {
		t.Errorf("query %q, want timeout=3s", srv.queries[0])
	}
	if len(rec.list) != 1 || rec.list[0] != "seen by the webhook" {
		t.Errorf("warnings %v", rec.list)
	}
}

// TestWebhookInvalidResponses: answers upstream rejects are call
// failures, subject to failurePolicy.
func TestWebhookInvalidResponses(t *testing.T) {
	jsonPatch := admissionv1.PatchTypeJSONPatch
	cases := []struct {
		name    string
		respond func(req *admissionv1.AdmissionRequest) any
		want    string
	}{
		{"uid mismatch", func(*admissionv1.AdmissionRequest) any {
			return review(&admissionv1.AdmissionResponse{UID: "other", Allowed: true})
		}, `expected response.uid="`},
		{"no apiVersion and kind", func(req *admissionv1.AdmissionRequest) any {
			return &admissionv1.AdmissionReview{Response: &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}}
		}, "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview"},
		{"no response", func(*admissionv1.AdmissionRequest) any { return review(nil) }, "webhook response was absent"},
		{"validating webhook patches", func(req *admissionv1.AdmissionRequest) any {
			return review(&admissionv1.AdmissionResponse{UID: req.UID, Allowed: true, Patch: []byte(`[]`), PatchType: &jsonPatch})
		}, "validating webhook may not return response.patch"},
	}
	fail, ignore := admissionregistrationv1.Fail, admissionregistrationv1.Ignore
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newReviewServer(t, tc.respond)
			for _, policy := range []*admissionregistrationv1.FailurePolicyType{&fail, &ignore} {
				_, v := webhookPlugins(t, nil, []admissionregistrationv1.ValidatingWebhook{validatingHook("odd.example.com", srv.clientConfig(),
					func(w *admissionregistrationv1.ValidatingWebhook) { w.FailurePolicy = policy })})
				err := admit(context.Background(), v, podCreate(newPod("ns", "p"), alice))
				if *policy == ignore {
					if err != nil {
						t.Fatalf("Ignore: %v", err)
					}
					continue
				}
				wantStatus(t, err, 500, `failed calling webhook "odd.example.com": received invalid webhook response: `+tc.want)
			}
		})
	}
	// A mutating webhook's patch needs a patchType.
	srv := newReviewServer(t, func(req *admissionv1.AdmissionRequest) any {
		return review(&admissionv1.AdmissionResponse{UID: req.UID, Allowed: true, Patch: []byte(`[]`)})
	})
	m, _ := webhookPlugins(t, []admissionregistrationv1.MutatingWebhook{mutatingHook("odd.example.com", srv.clientConfig(), nil)}, nil)
	wantStatus(t, admit(context.Background(), m, podCreate(newPod("ns", "p"), alice)), 500,
		"received invalid webhook response: webhook returned response.patch but not response.patchType")
}

// TestWebhookPatchWithoutObject: a patch for a request without an object
// (a DELETE) is refused with upstream's message, whatever failurePolicy.
func TestWebhookPatchWithoutObject(t *testing.T) {
	jsonPatch := admissionv1.PatchTypeJSONPatch
	srv := newReviewServer(t, func(req *admissionv1.AdmissionRequest) any {
		return review(&admissionv1.AdmissionResponse{UID: req.UID, Allowed: true,
			Patch: []byte(`[{"op":"add","path":"/metadata/labels","value":{"a":"b"}}]`), PatchType: &jsonPatch})
	})
	ignore := admissionregistrationv1.Ignore
	m, _ := webhookPlugins(t, []admissionregistrationv1.MutatingWebhook{mutatingHook("deleter.example.com", srv.clientConfig(),
		func(w *admissionregistrationv1.MutatingWebhook) {
			w.FailurePolicy = &ignore
			w.Rules = []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
			}}
		})}, nil)
	del := admission.NewAttributesRecord(nil, newPod("ns", "p"), podGVK, "ns", "p", podGVR, "", admission.Delete, &metav1.DeleteOptions{}, false, alice)
	err := admit(context.Background(), m, del)
	wantStatus(t, err, 500, `admission webhook "deleter.example.com" attempted to modify the object, which is not supported for this operation`)
	if req := srv.requests[0]; req.Object.Raw != nil || req.OldObject.Raw == nil || req.Operation != admissionv1.Delete {
		t.Fatalf("delete request: object %s oldObject %s", req.Object.Raw, req.OldObject.Raw)
	}
}

// TestWebhookDenialStatus: a refusal keeps the webhook's code (at least
// 400) and reason, prefixed as upstream does.
func TestWebhookDenialStatus(t *testing.T) {
	srv := newReviewServer(t, func(req *admissionv1.AdmissionRequest) any {
		return review(&admissionv1.AdmissionResponse{UID: req.UID, Allowed: false,
			Result: &metav1.Status{Code: 200, Reason: "TeamLabelMissing"}})
	})
	_, v := webhookPlugins(t, nil, []admissionregistrationv1.ValidatingWebhook{validatingHook("team.example.com", srv.clientConfig(), nil)})
	err := admit(context.Background(), v, podCreate(newPod("ns", "p"), alice))
	wantStatus(t, err, 400, `admission webhook "team.example.com" denied the request: TeamLabelMissing`)
	if apierrors.ReasonForError(err) != "TeamLabelMissing" {
		t.Errorf("reason %q", apierrors.ReasonForError(err))
	}
}

// TestWebhookReinvocationRerunsInTreePlugins: after a webhook injects a
// container, the apiserver's second round runs the in-tree plugins again,
// so the sidecar gets the LimitRange's defaults too.
func TestWebhookReinvocationRerunsInTreePlugins(t *testing.T) {
	srv := newWebhookServer(t)
	m, _ := webhookPlugins(t, []admissionregistrationv1.MutatingWebhook{mutatingHook("inject.example.com", srv.clientConfig("/inject"), nil)}, nil)
	limits := limitRanger(t, corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, DefaultRequest: rl("cpu", "100m"), Default: rl("cpu", "200m")})
	chain := berthadm.NewReinvocationHandler(admission.NewChainHandler(limits, m))
	pod := newPod("ns", "p")
	if err := admit(context.Background(), chain, podCreate(pod, alice)); err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.Containers) != 2 {
		t.Fatalf("containers %v", containerNames(pod))
	}
	for _, c := range pod.Spec.Containers {
		if got := c.Resources.Requests[corev1.ResourceCPU]; got.String() != "100m" {
			t.Errorf("container %s cpu request %q, want the LimitRange default 100m", c.Name, got.String())
		}
	}
	if srv.count("/inject") != 1 {
		t.Errorf("inject called %d times; a webhook with reinvocationPolicy Never runs once", srv.count("/inject"))
	}
}

// TestWebhookServiceReference: clientConfig.service resolves through the
// Service's port to a ready endpoint of its EndpointSlices (the target
// port), and the serving certificate must name NAME.NAMESPACE.svc.
func TestWebhookServiceReference(t *testing.T) {
	base := newWebhookServer(t)
	ca := testpki.NewCA(t, "webhook-ca")
	caPEM := ca.CertPEM
	targetPort := int32(testpki.ServeTLS(t, base.Config.Handler, &tls.Config{Certificates: []tls.Certificate{ca.Serving(t, "injector.hooks.svc")}}))

	svc := func(name string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "hooks", Name: name}, Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.10",
			Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(targetPort)}}}}
	}
	portName, ready, notReady := "https", true, false
	slice := func(service, name string, isReady *bool) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "hooks", Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: service}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"127.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: isReady}}},
			Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &targetPort}},
		}
	}
	resolve := berthadm.EndpointServiceResolver(
		corelisters.NewServiceLister(indexer(t, svc("injector"), svc("wrong-name"), svc("down"), svc("empty"))),
		discoverylisters.NewEndpointSliceLister(indexer(t, slice("injector", "injector-1", &ready), slice("wrong-name", "wrong-1", &ready), slice("down", "down-1", &notReady))))

	path := "/inject"
	hook := func(service string) admissionregistrationv1.MutatingWebhook {
		p := int32(443)
		return mutatingHook(service+".example.com", admissionregistrationv1.WebhookClientConfig{
			Service:  &admissionregistrationv1.ServiceReference{Namespace: "hooks", Name: service, Path: &path, Port: &p},
			CABundle: caPEM,
		}, nil)
	}
	plugin := func(service string) *berthadm.MutatingWebhook {
		idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
		_ = idx.Add(&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "m"},
			Webhooks: []admissionregistrationv1.MutatingWebhook{hook(service)}})
		m, err := berthadm.NewMutatingWebhook(berthadm.WebhookConfig{
			Mutating:       admissionlisters.NewMutatingWebhookConfigurationLister(idx),
			Namespaces:     corelisters.NewNamespaceLister(indexer(t, namespace("ns", corev1.NamespaceActive, nil))),
			ResolveService: resolve,
		})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}

	pod := newPod("ns", "p")
	if err := admit(context.Background(), plugin("injector"), podCreate(pod, alice)); err != nil {
		t.Fatal(err)
	}
	if got := containerNames(pod); len(got) != 2 || got[1] != "sidecar" || base.count("/inject") != 1 {
		t.Fatalf("through the service: containers %v, %d calls", got, base.count("/inject"))
	}
	// Same endpoint, but the certificate names injector.hooks.svc, not wrong-name.hooks.svc.
	err := admit(context.Background(), plugin("wrong-name"), podCreate(newPod("ns", "q"), alice))
	wantStatus(t, err, 500, "certificate is valid for injector.hooks.svc, not wrong-name.hooks.svc")
	// No ready endpoint, no endpoints at all, no such service.
	err = admit(context.Background(), plugin("down"), podCreate(newPod("ns", "q"), alice))
	wantStatus(t, err, 500, `clientConfig.service hooks/down port 443: no endpoints available for service "down"`)
	err = admit(context.Background(), plugin("empty"), podCreate(newPod("ns", "q"), alice))
	wantStatus(t, err, 500, `no endpoints available for service "empty"`)
	err = admit(context.Background(), plugin("missing"), podCreate(newPod("ns", "q"), alice))
	wantStatus(t, err, 500, `clientConfig.service hooks/missing port 443: service "missing" not found`)
	if base.count("/inject") != 1 {
		t.Fatalf("calls %d after the failures, want 1", base.count("/inject"))
	}
}

// TestWebhookMatchConditions: CEL matchConditions decide whether a
// matching webhook is called; an expression that fails to evaluate skips
// the webhook under Ignore and refuses the request under Fail.
func TestWebhookMatchConditions(t *testing.T) {
	srv := newWebhookServer(t)
	conditions := []admissionregistrationv1.MatchCondition{
		{Name: "not-skipped", Expression: `object.metadata.name != "skip-me"`},
		{Name: "alice-only", Expression: `request.userInfo.username == "alice"`},
	}
	m, v := webhookPlugins(t,
		[]admissionregistrationv1.MutatingWebhook{mutatingHook("inject.example.com", srv.clientConfig("/inject"),
			func(w *admissionregistrationv1.MutatingWebhook) { w.MatchConditions = conditions })},
		[]admissionregistrationv1.ValidatingWebhook{validatingHook("allow.example.com", srv.clientConfig("/allow"),
			func(w *admissionregistrationv1.ValidatingWebhook) { w.MatchConditions = conditions })})
	bob := &user.DefaultInfo{Name: "bob"}
	for _, tc := range []struct {
		pod   string
		who   user.Info
		calls int
	}{{"skip-me", alice, 0}, {"web", bob, 0}, {"web", alice, 1}} {
		pod := newPod("ns", tc.pod)
		before := srv.count("/inject")
		for _, p := range []admission.Interface{m, v} {
			if err := admit(context.Background(), p, podCreate(pod, tc.who)); err != nil {
				t.Fatalf("%s by %s: %v", tc.pod, tc.who.GetName(), err)
			}
		}
		if got := srv.count("/inject") - before; got != tc.calls || len(pod.Spec.Containers) != 1+tc.calls {
			t.Errorf("%s by %s: %d calls, containers %v; want %d calls", tc.pod, tc.who.GetName(), got, containerNames(pod), tc.calls)
		}
	}
	if srv.count("/allow") != 1 {
		t.Errorf("validating webhook calls %d, want 1", srv.count("/allow"))
	}

	broken := []admissionregistrationv1.MatchCondition{{Name: "broken", Expression: `object.spec.noSuchField == "x"`}}
	fail, ignore := admissionregistrationv1.Fail, admissionregistrationv1.Ignore
	for _, policy := range []admissionregistrationv1.FailurePolicyType{fail, ignore} {
		m, _ := webhookPlugins(t, []admissionregistrationv1.MutatingWebhook{mutatingHook("broken.example.com", srv.clientConfig("/inject"),
			func(w *admissionregistrationv1.MutatingWebhook) { w.MatchConditions, w.FailurePolicy = broken, &policy })}, nil)
		before := srv.count("/inject")
		err := admit(context.Background(), m, podCreate(newPod("ns", "p"), alice))
		if policy == ignore {
			if err != nil {
				t.Fatalf("Ignore: %v", err)
			}
		} else {
			wantStatus(t, err, 403, "no such key: noSuchField")
		}
		if srv.count("/inject") != before {
			t.Errorf("%s: the webhook was called despite a failed condition", policy)
		}
	}
}

// TestWebhookNamespaceNotYetCached: a namespace the lister has not seen
// yet is looked up live, so a pod created right after its namespace is
// still injected; a namespace that does not exist at all gives 404.
func TestWebhookNamespaceNotYetCached(t *testing.T) {
	srv := newWebhookServer(t)
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	_ = idx.Add(&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "m"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{mutatingHook("inject.example.com", srv.clientConfig("/inject"),
			func(w *admissionregistrationv1.MutatingWebhook) {
				w.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"inject": "enabled"}}
			})}})
	m, err := berthadm.NewMutatingWebhook(berthadm.WebhookConfig{
		Mutating:   admissionlisters.NewMutatingWebhookConfigurationLister(idx),
		Namespaces: corelisters.NewNamespaceLister(indexer(t)),
		Client:     fake.NewClientset(namespace("fresh", corev1.NamespaceActive, map[string]string{"inject": "enabled"})),
	})
	if err != nil {
		t.Fatal(err)
	}
	pod := newPod("fresh", "p")
	if err := admit(context.Background(), m, podCreate(pod, alice)); err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.Containers) != 2 {
		t.Fatalf("pod in a namespace not cached yet: containers %v", containerNames(pod))
	}
	err = admit(context.Background(), m, podCreate(newPod("gone", "p"), alice))
	if !apierrors.IsNotFound(err) {
		t.Fatalf("pod in a missing namespace: %v, want 404", err)
	}
}
