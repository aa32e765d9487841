package admission_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	admissionlisters "k8s.io/client-go/listers/admissionregistration/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	berthadm "berth/controlplane/admission"
	"berth/internal/testpki"
)

// webhookServer is a TLS AdmissionReview v1 server with a few behaviours.
type webhookServer struct {
	*httptest.Server
	mu       sync.Mutex
	calls    map[string]int
	requests []*admissionv1.AdmissionRequest
}

func newWebhookServer(t *testing.T) *webhookServer {
	t.Helper()
	s := &webhookServer{calls: map[string]int{}}
	mux := http.NewServeMux()
	review := func(w http.ResponseWriter, r *http.Request, respond func(req *admissionv1.AdmissionRequest, resp *admissionv1.AdmissionResponse)) {
		var in admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.calls[r.URL.Path]++
		s.requests = append(s.requests, in.Request)
		s.mu.Unlock()
		resp := &admissionv1.AdmissionResponse{UID: in.Request.UID, Allowed: true}
		respond(in.Request, resp)
		out := admissionv1.AdmissionReview{TypeMeta: in.TypeMeta, Response: resp}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}
	jsonPatch := admissionv1.PatchTypeJSONPatch
	mux.HandleFunc("/inject", func(w http.ResponseWriter, r *http.Request) {
		review(w, r, func(req *admissionv1.AdmissionRequest, resp *admissionv1.AdmissionResponse) {
			var pod corev1.Pod
			_ = json.Unmarshal(req.Object.Raw, &pod)
			for _, c := range pod.Spec.Containers {
				if c.Name == "sidecar" {
					return
				}
			}
			resp.Patch = []byte(`[{"op":"add","path":"/spec/containers/-","value":{"name":"sidecar","image":"proxy:1"}}]`)
			resp.PatchType = &jsonPatch
			resp.Warnings = []string{"sidecar injected"}
		})
	})
	mux.HandleFunc("/label", func(w http.ResponseWriter, r *http.Request) {
		review(w, r, func(req *admissionv1.AdmissionRequest, resp *admissionv1.AdmissionResponse) {
			var pod corev1.Pod
			_ = json.Unmarshal(req.Object.Raw, &pod)
			// Records how many containers it saw: reinvocation shows the sidecar.
			op := "add"
			if _, ok := pod.Labels["containers-seen"]; ok {
				op = "replace"
			}
			patch := fmt.Sprintf(`[{"op":"add","path":"/metadata/labels","value":{}}]`)
			if pod.Labels != nil {
				patch = "[]"
			}
			var ops []map[string]any
			_ = json.Unmarshal([]byte(patch), &ops)
			ops = append(ops, map[string]any{"op": op, "path": "/metadata/labels/containers-seen", "value": fmt.Sprint(len(pod.Spec.Containers))})
			resp.Patch, _ = json.Marshal(ops)
			resp.PatchType = &jsonPatch
		})
	})
	mux.HandleFunc("/deny", func(w http.ResponseWriter, r *http.Request) {
		review(w, r, func(req *admissionv1.AdmissionRequest, resp *admissionv1.AdmissionResponse) {
			resp.Allowed = false
			resp.Result = &metav1.Status{Message: "pods need a team label", Code: http.StatusForbidden}
		})
	})
	mux.HandleFunc("/allow", func(w http.ResponseWriter, r *http.Request) {
		review(w, r, func(*admissionv1.AdmissionRequest, *admissionv1.AdmissionResponse) {})
	})
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "webhook is broken", http.StatusInternalServerError)
	})
	release := make(chan struct{})
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	s.Server = httptest.NewTLSServer(mux)
	t.Cleanup(s.Close)
	t.Cleanup(func() { close(release) }) // runs first: hung handlers return before Close waits for them
	return s
}

func (s *webhookServer) caBundle() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
}

func (s *webhookServer) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[path]
}

func (s *webhookServer) clientConfig(path string) admissionregistrationv1.WebhookClientConfig {
	u := s.URL + path
	return admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: s.caBundle()}
}

var (
	sideEffectsNone = admissionregistrationv1.SideEffectClassNone
	podCreateRule   = []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
	}}
)

func mutatingHook(name string, cc admissionregistrationv1.WebhookClientConfig, mutate func(*admissionregistrationv1.MutatingWebhook)) admissionregistrationv1.MutatingWebhook {
	w := admissionregistrationv1.MutatingWebhook{Name: name, ClientConfig: cc, Rules: podCreateRule,
		SideEffects: &sideEffectsNone, AdmissionReviewVersions: []string{"v1"}}
	if mutate != nil {
		mutate(&w)
	}
	return w
}

func validatingHook(name string, cc admissionregistrationv1.WebhookClientConfig, mutate func(*admissionregistrationv1.ValidatingWebhook)) admissionregistrationv1.ValidatingWebhook {
	w := admissionregistrationv1.ValidatingWebhook{Name: name, ClientConfig: cc, Rules: podCreateRule,
		SideEffects: &sideEffectsNone, AdmissionReviewVersions: []string{"v1"}}
	if mutate != nil {
		mutate(&w)
	}
	return w
}

func webhookPlugins(t *testing.T, mutating []admissionregistrationv1.MutatingWebhook, validating []admissionregistrationv1.ValidatingWebhook) (*berthadm.MutatingWebhook, *berthadm.ValidatingWebhook) {
	t.Helper()
	m := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if len(mutating) > 0 {
		_ = m.Add(&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "m"}, Webhooks: mutating})
	}
	v := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if len(validating) > 0 {
		_ = v.Add(&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "v"}, Webhooks: validating})
	}
	cfg := berthadm.WebhookConfig{
		Mutating:   admissionlisters.NewMutatingWebhookConfigurationLister(m),
		Validating: admissionlisters.NewValidatingWebhookConfigurationLister(v),
		Namespaces: corelisters.NewNamespaceLister(indexer(t,
			namespace("ns", corev1.NamespaceActive, map[string]string{"inject": "enabled"}),
			namespace("plain", corev1.NamespaceActive, nil))),
	}
	mp, err := berthadm.NewMutatingWebhook(cfg)
	if err != nil {
		t.Fatal(err)
	}
	vp, err := berthadm.NewValidatingWebhook(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return mp, vp
}

func containerNames(pod *corev1.Pod) []string {
	var out []string
	for _, c := range pod.Spec.Containers {
		out = append(out, c.Name)
	}
	return out
}

func TestWebhookInjectsSidecar(t *testing.T) {
	srv := newWebhookServer(t)
	m, _ := webhookPlugins(t, []admissionregistrationv1.MutatingWebhook{mutatingHook("inject.example.com", srv.clientConfig("/inject"),
		func(w *admissionregistrationv1.MutatingWebhook) {
			w.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"inject": "enabled"}}
		})}, nil)
	pod := newPod("ns", "web")
	if err := admit(context.Background(), m, podCreate(pod, alice)); err != nil {
		t.Fatal(err)
	}
	if got := containerNames(pod); len(got) != 2 || got[1] != "sidecar" || pod.Spec.Containers[1].Image != "proxy:1" {
		t.Fatalf("containers %v", got)
	}
	if srv.count("/inject") != 1 {
		t.Fatalf("calls %d", srv.count("/inject"))
	}
	req := srv.requests[0]
	if req.Kind.Kind != "Pod" || req.Resource.Resource != "pods" || req.Namespace != "ns" || req.Name != "web" ||
		req.Operation != admissionv1.Create || req.UserInfo.Username != "alice" || req.UID == "" || req.DryRun == nil || *req.DryRun {
		t.Errorf("request %+v", req)
	}
	var sent corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &sent); err != nil || sent.APIVersion != "v1" || sent.Kind != "Pod" {
		t.Errorf("object sent %s (%v)", req.Object.Raw, err)
	}

	// Not selected: a namespace without the label, an object the rules do not cover.
	other := newPod("plain", "web")
	if err := admit(context.Background(), m, podCreate(other, alice)); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
	if err := admit(context.Background(), m, createAttrs(cm, corev1.SchemeGroupVersion.WithKind("ConfigMap"), corev1.SchemeGroupVersion.WithResource("configmaps"), "ns", "c", alice)); err != nil {
		t.Fatal(err)
	}
	upd := admission.NewAttributesRecord(newPod("ns", "web"), newPod("ns", "web"), podGVK, "ns", "web", podGVR, "", admission.Update, &metav1.UpdateOptions{}, false, alice)
	if err := admit(context.Background(), m, upd); err != nil {
		t.Fatal(err)
	}
	if len(other.Spec.Containers) != 1 || srv.count("/inject") != 1 {
		t.Fatalf("webhook called outside its selectors/rules: %d calls", srv.count("/inject"))
	}
}

func TestWebhookObjectSelector(t *testing.T) {
	srv := newWebhookServer(t)
	m, _ := webhookPlugins(t, []admissionregistrationv1.MutatingWebhook{mutatingHook("inject.example.com", srv.clientConfig("/inject"),
		func(w *admissionregistrationv1.MutatingWebhook) {
			w.ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "sidecar", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"off"}}}}
		})}, nil)
	off := newPod("ns", "off")
	off.Labels = map[string]string{"sidecar": "off"}
	on := newPod("ns", "on")
	for _, p := range []*corev1.Pod{off, on} {
		if err := admit(context.Background(), m, podCreate(p, alice)); err != nil {
			t.Fatal(err)
		}
	}
	if len(off.Spec.Containers) != 1 || len(on.Spec.Containers) != 2 {
		t.Fatalf("off %v on %v", containerNames(off), containerNames(on))
	}
}

func TestWebhookFailurePolicy(t *testing.T) {
	srv := newWebhookServer(t)
	fail, ignore := admissionregistrationv1.Fail, admissionregistrationv1.Ignore
	one := int32(1)
	cases := []struct {
		name   string
		path   string
		policy *admissionregistrationv1.FailurePolicyType
		want   string
	}{
		{"error status, Fail", "/fail", &fail, `failed calling webhook "broken.example.com": failed to call webhook: the server responded with status 500`},
		{"error status, default policy is Fail", "/fail", nil, `failed calling webhook "broken.example.com"`},
		{"error status, Ignore", "/fail", &ignore, ""},
		{"timeout, Fail", "/hang", &fail, `failed calling webhook "broken.example.com": failed to call webhook`},
		{"timeout, Ignore", "/hang", &ignore, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, v := webhookPlugins(t,
				[]admissionregistrationv1.MutatingWebhook{mutatingHook("broken.example.com", srv.clientConfig(tc.path), func(w *admissionregistrationv1.MutatingWebhook) {
					w.FailurePolicy = tc.policy
					w.TimeoutSeconds = &one
				})},
				[]admissionregistrationv1.ValidatingWebhook{validatingHook("broken.example.com", srv.clientConfig(tc.path), func(w *admissionregistrationv1.ValidatingWebhook) {
					w.FailurePolicy = tc.policy
					w.TimeoutSeconds = &one
				})})
			for _, p := range []admission.Interface{m, v} {
				pod := newPod("ns", "p")
				err := admit(context.Background(), p, podCreate(pod, alice))
				if tc.want == "" {
					if err != nil {
						t.Fatalf("%T: %v", p, err)
					}
					if len(pod.Spec.Containers) != 1 {
						t.Fatalf("pod changed: %v", containerNames(pod))
					}
					continue
				}
				if !apierrors.IsInternalError(err) {
					t.Fatalf("%T: %v is not an internal error", p, err)
				}
				wantStatus(t, err, 500, tc.want)
			}
		})
	}
}

func TestValidatingWebhookDenies(t *testing.T) {
	srv := newWebhookServer(t)
	_, v := webhookPlugins(t, nil, []admissionregistrationv1.ValidatingWebhook{
		validatingHook("allow.example.com", srv.clientConfig("/allow"), nil),
		validatingHook("team.example.com", srv.clientConfig("/deny"), nil),
	})
	err := admit(context.Background(), v, podCreate(newPod("ns", "p"), alice))
	wantStatus(t, err, 403, `admission webhook "team.example.com" denied the request: pods need a team label`)
	if srv.count("/allow") != 1 || srv.count("/deny") != 1 {
		t.Fatalf("calls allow=%d deny=%d", srv.count("/allow"), srv.count("/deny"))
	}
}

func TestWebhookDryRun(t *testing.T) {
	srv := newWebhookServer(t)
	unknown := admissionregistrationv1.SideEffectClassSome
	m, _ := webhookPlugins(t, []admissionregistrationv1.MutatingWebhook{
		mutatingHook("pure.example.com", srv.clientConfig("/inject"), nil),
		mutatingHook("effects.example.com", srv.clientConfig("/allow"), func(w *admissionregistrationv1.MutatingWebhook) { w.SideEffects = &unknown }),
	}, nil)
	dry := admission.NewAttributesRecord(newPod("ns", "p"), nil, podGVK, "ns", "p", podGVR, "", admission.Create, &metav1.CreateOptions{}, true, alice)
	err := admit(context.Background(), m, dry)
	wantStatus(t, err, 400, `admission webhook "effects.example.com" does not support dry run`)
	if srv.count("/inject") != 1 || srv.count("/allow") != 0 {
		t.Fatalf("calls inject=%d allow=%d", srv.count("/inject"), srv.count("/allow"))
	}
	if req := srv.requests[0]; req.DryRun == nil || !*req.DryRun {
		t.Fatalf("dryRun not sent: %+v", req.DryRun)
	}
}

func TestWebhookReinvocation(t *testing.T) {
	for _, policy := range []admissionregistrationv1.ReinvocationPolicyType{admissionregistrationv1.NeverReinvocationPolicy, admissionregistrationv1.IfNeededReinvocationPolicy} {
		t.Run(string(policy), func(t *testing.T) {
			srv := newWebhookServer(t)
			m, _ := webhookPlugins(t, []admissionregistrationv1.MutatingWebhook{
				mutatingHook("a-label.example.com", srv.clientConfig("/label"), func(w *admissionregistrationv1.MutatingWebhook) { w.ReinvocationPolicy = &policy }),
				mutatingHook("b-inject.example.com", srv.clientConfig("/inject"), nil),
			}, nil)
			pod := newPod("ns", "p")
			// Reinvocation is a second round of the whole chain, run by
			// the apiserver's reinvocation handler.
			if err := admit(context.Background(), berthadm.NewReinvocationHandler(admission.NewChainHandler(m)), podCreate(pod, alice)); err != nil {
				t.Fatal(err)
			}
			wantCalls, wantSeen := 1, "1"
			if policy == admissionregistrationv1.IfNeededReinvocationPolicy {
				wantCalls, wantSeen = 2, "2" // called again after the sidecar was added
			}
			if srv.count("/label") != wantCalls || pod.Labels["containers-seen"] != wantSeen {
				t.Fatalf("label webhook calls %d, containers-seen %q; want %d, %q", srv.count("/label"), pod.Labels["containers-seen"], wantCalls, wantSeen)
			}
		})
	}
}

// The webhook's certificate must chain to the configured caBundle.
func TestWebhookRequiresConfiguredCA(t *testing.T) {
	srv := newWebhookServer(t)
	cc := srv.clientConfig("/inject")
	cc.CABundle = testpki.NewCA(t, "other-ca").CertPEM
	m, _ := webhookPlugins(t, []admissionregistrationv1.MutatingWebhook{mutatingHook("inject.example.com", cc, nil)}, nil)
	err := admit(context.Background(), m, podCreate(newPod("ns", "p"), alice))
	wantStatus(t, err, 500, "certificate signed by unknown authority")
	if srv.count("/inject") != 0 {
		t.Fatal("request reached a server with an untrusted certificate")
	}
}
