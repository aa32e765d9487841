package apiserver_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"berth/internal/testpki"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// admissionNamespace creates a namespace with labels for one test and
// deletes it at the end.
func admissionNamespace(t *testing.T, cs kubernetes.Interface, name string, labels map[string]string) {
	t.Helper()
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

// plainPod is a pod with one container and nothing else set.
func plainPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}
}

func TestAdmissionDefaultTolerationSeconds(t *testing.T) {
	cs := shared.Client(t)
	ctx := context.Background()
	admissionNamespace(t, cs, "adm-tolerations", nil)
	pod, err := cs.CoreV1().Pods("adm-tolerations").Create(ctx, plainPod("p"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod: %v", err)
	}
	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		found := false
		for _, tol := range pod.Spec.Tolerations {
			if tol.Key == key && tol.Operator == corev1.TolerationOpExists && tol.Effect == corev1.TaintEffectNoExecute &&
				tol.TolerationSeconds != nil && *tol.TolerationSeconds == 300 {
				found = true
			}
		}
		if !found {
			t.Errorf("pod has no %s:NoExecute toleration for 300s; tolerations: %+v", key, pod.Spec.Tolerations)
		}
	}
}

// createQuota creates a ResourceQuota in ns and waits for the quota
// controller to fill its status.hard and status.used.
func createQuota(t *testing.T, cs kubernetes.Interface, ns, name string, hard corev1.ResourceList) {
	t.Helper()
	ctx := context.Background()
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}
	if _, err := cs.CoreV1().ResourceQuotas(ns).Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create quota: %v", err)
	}
	poll(t, "quota status computed", func() bool {
		got, err := cs.CoreV1().ResourceQuotas(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && got.Status.Hard != nil && got.Status.Used != nil
	})
}

func TestAdmissionResourceQuota(t *testing.T) {
	cs := shared.Client(t)
	ctx := context.Background()
	const ns = "adm-quota"
	admissionNamespace(t, cs, ns, nil)
	createQuota(t, cs, ns, "two-pods", corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2")})

	// A dry run is admitted but charges nothing.
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, plainPod("dry"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatalf("dry-run create: %v", err)
	}
	got, err := cs.CoreV1().ResourceQuotas(ns).Get(ctx, "two-pods", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get quota: %v", err)
	}
	if used := got.Status.Used[corev1.ResourcePods]; used.Value() != 0 {
		t.Fatalf("after a dry run, quota used pods = %s, want 0", used.String())
	}

	for _, name := range []string{"one", "two"} {
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, plainPod(name), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %s within quota: %v", name, err)
		}
	}
	_, err = cs.CoreV1().Pods(ns).Create(ctx, plainPod("three"), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("third pod: got %v, want 403 Forbidden", err)
	}
	want := `pods "three" is forbidden: exceeded quota: two-pods, requested: pods=1, used: pods=2, limited: pods=2`
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("third pod: error %q, want it to contain %q", err.Error(), want)
	}
}

func TestAdmissionLimitRangeDefaults(t *testing.T) {
	cs := shared.Client(t)
	ctx := context.Background()
	const ns = "adm-limits"
	admissionNamespace(t, cs, ns, nil)
	lr := &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Name: "defaults"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type:           corev1.LimitTypeContainer,
			Default:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
			DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		}}},
	}
	if _, err := cs.CoreV1().LimitRanges(ns).Create(ctx, lr, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create limit range: %v", err)
	}
	// The plugin reads LimitRanges from the server's informer: retry with
	// new pods until it has seen this one.
	var pod *corev1.Pod
	n := 0
	poll(t, "a pod defaulted by the LimitRange", func() bool {
		n++
		p, err := cs.CoreV1().Pods(ns).Create(ctx, plainPod(fmt.Sprintf("p%d", n)), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create pod: %v", err)
		}
		pod = p
		return len(p.Spec.Containers[0].Resources.Requests) > 0
	})
	res := pod.Spec.Containers[0].Resources
	for _, c := range []struct {
		what string
		got  resource.Quantity
		want string
	}{
		{"cpu request", res.Requests[corev1.ResourceCPU], "100m"},
		{"memory request", res.Requests[corev1.ResourceMemory], "64Mi"},
		{"cpu limit", res.Limits[corev1.ResourceCPU], "500m"},
		{"memory limit", res.Limits[corev1.ResourceMemory], "256Mi"},
	} {
		if c.got.Cmp(resource.MustParse(c.want)) != 0 {
			t.Errorf("%s = %s, want %s", c.what, c.got.String(), c.want)
		}
	}
}

func TestAdmissionPodSecurity(t *testing.T) {
	cs := shared.Client(t)
	ctx := context.Background()
	const ns = "adm-restricted"
	admissionNamespace(t, cs, ns, map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
	privileged := true
	pod := plainPod("privileged")
	pod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: &privileged}
	_, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("privileged pod in a restricted namespace: got %v, want 403 Forbidden", err)
	}
	for _, want := range []string{`pods "privileged" is forbidden: violates PodSecurity "restricted:latest"`, `privileged (container "main" must not set securityContext.privileged=true)`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q, want it to contain %q", err.Error(), want)
		}
	}
}

// A Service updated from ClusterIP to NodePort is charged its node ports:
// over the quota, the update is refused.
func TestAdmissionResourceQuotaOnUpdate(t *testing.T) {
	cs := shared.Client(t)
	ctx := context.Background()
	const ns = "adm-quota-update"
	admissionNamespace(t, cs, ns, nil)
	createQuota(t, cs, ns, "one-node-port", corev1.ResourceList{corev1.ResourceServicesNodePorts: resource.MustParse("1")})
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": "web"},
		Ports:    []corev1.ServicePort{{Name: "http", Port: 80}, {Name: "https", Port: 443}}}}
	created, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create a ClusterIP service: %v", err)
	}
	created.Spec.Type = corev1.ServiceTypeNodePort
	_, err = cs.CoreV1().Services(ns).Update(ctx, created, metav1.UpdateOptions{})
	want := `services "web" is forbidden: exceeded quota: one-node-port, requested: services.nodeports=2, used: services.nodeports=0, limited: services.nodeports=1`
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("ClusterIP -> NodePort with 2 ports: %v, want 403 %q", err, want)
	}
	if got, _ := cs.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{}); got.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Fatalf("the refused update was stored: type %s", got.Spec.Type)
	}
}

// webhookServer is a TLS admission webhook server on 127.0.0.1: /inject
// adds a sidecar container to pods, /fail answers 500, /connect refuses
// exec of "forbidden", attach with stdin and port-forward to port 22
// (recording what it is asked).
type webhookServer struct {
	url      string
	caPEM    []byte
	injected atomic.Int32

	mu       sync.Mutex
	connects []*admissionv1.AdmissionRequest
}

func startWebhookServer(t *testing.T) *webhookServer {
	t.Helper()
	ca := testpki.NewCA(t, "webhook-test-ca")
	ws := &webhookServer{caPEM: ca.CertPEM}
	mux := http.NewServeMux()
	mux.HandleFunc("/inject", func(w http.ResponseWriter, r *http.Request) {
		review := &admissionv1.AdmissionReview{}
		if err := json.NewDecoder(r.Body).Decode(review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		pod := &corev1.Pod{}
		if err := json.Unmarshal(review.Request.Object.Raw, pod); err == nil {
			sidecar := corev1.Container{Name: "sidecar", Image: "busybox", Command: []string{"sleep", "3600"}}
			patch, _ := json.Marshal([]map[string]any{{"op": "add", "path": "/spec/containers/-", "value": sidecar}})
			pt := admissionv1.PatchTypeJSONPatch
			resp.Patch, resp.PatchType = patch, &pt
			ws.injected.Add(1)
		}
		review.Response = resp
		review.Request = nil
		_ = json.NewEncoder(w).Encode(review)
	})
	mux.HandleFunc("/connect", func(w http.ResponseWriter, r *http.Request) {
		review := &admissionv1.AdmissionReview{}
		if err := json.NewDecoder(r.Body).Decode(review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		ws.mu.Lock()
		ws.connects = append(ws.connects, review.Request)
		ws.mu.Unlock()
		var refusal string
		switch review.Request.SubResource {
		case "exec":
			var opts corev1.PodExecOptions
			if err := json.Unmarshal(review.Request.Object.Raw, &opts); err != nil || len(opts.Command) == 0 || opts.Command[0] == "forbidden" {
				refusal = fmt.Sprintf("exec of %q refused", opts.Command)
			}
		case "attach":
			var opts corev1.PodAttachOptions
			if err := json.Unmarshal(review.Request.Object.Raw, &opts); err != nil || opts.Stdin {
				refusal = "attach with stdin refused"
			}
		case "portforward":
			var opts corev1.PodPortForwardOptions
			if err := json.Unmarshal(review.Request.Object.Raw, &opts); err != nil || slices.Contains(opts.Ports, 22) {
				refusal = "port-forward to 22 refused"
			}
		}
		resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: refusal == ""}
		if refusal != "" {
			resp.Result = &metav1.Status{Message: refusal, Code: http.StatusForbidden}
		}
		review.Response, review.Request = resp, nil
		_ = json.NewEncoder(w).Encode(review)
	})
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "webhook broken on purpose", http.StatusInternalServerError)
	})
	port := testpki.ServeTLS(t, mux, &tls.Config{Certificates: []tls.Certificate{ca.Serving(t, "127.0.0.1")}})
	ws.url = fmt.Sprintf("https://127.0.0.1:%d", port)
	return ws
}

func TestAdmissionMutatingWebhookInjectsSidecar(t *testing.T) {
	cs := shared.Client(t)
	ctx := context.Background()
	ws := startWebhookServer(t)
	const ns = "adm-inject"
	admissionNamespace(t, cs, ns, map[string]string{"adm-test": "inject"})
	url := ws.url + "/inject"
	createMutating(t, cs, "adm-test-injector", mutatingHook("injector.adm-test.berth.dev",
		admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ws.caPEM}, podCreateRule(), map[string]string{"adm-test": "inject"}))
	// The configuration reaches the plugin through the server's informer:
	// retry with new pods until one is mutated.
	var pod *corev1.Pod
	n := 0
	poll(t, "a pod with the injected sidecar", func() bool {
		n++
		p, err := cs.CoreV1().Pods(ns).Create(ctx, plainPod(fmt.Sprintf("p%d", n)), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create pod: %v", err)
		}
		pod = p
		return len(p.Spec.Containers) > 1
	})
	if len(pod.Spec.Containers) != 2 || pod.Spec.Containers[1].Name != "sidecar" || pod.Spec.Containers[1].Image != "busybox" {
		t.Fatalf("containers after injection: %+v", pod.Spec.Containers)
	}
	// The injected container went through defaulting and validation.
	if pod.Spec.Containers[1].TerminationMessagePath == "" || pod.Spec.Containers[1].ImagePullPolicy == "" {
		t.Errorf("the sidecar was not defaulted: %+v", pod.Spec.Containers[1])
	}
	stored, err := cs.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil || len(stored.Spec.Containers) != 2 {
		t.Fatalf("stored pod: %v, %+v", err, stored)
	}
	if ws.injected.Load() == 0 {
		t.Fatalf("the webhook server saw no request")
	}
}

func TestAdmissionWebhookFailurePolicy(t *testing.T) {
	cs := shared.Client(t)
	ctx := context.Background()
	ws := startWebhookServer(t)
	const ns = "adm-failing"
	admissionNamespace(t, cs, ns, map[string]string{"adm-test": "failing"})
	url := ws.url + "/fail"
	ignore := admissionregistrationv1.Ignore
	created := createValidating(t, cs, "adm-test-failing", validatingHook("failing.adm-test.berth.dev",
		admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ws.caPEM}, podCreateRule(), map[string]string{"adm-test": "failing"}))

	// failurePolicy Fail: creation is refused once the plugin knows the webhook.
	n := 0
	var refused error
	poll(t, "a pod refused by the failing webhook", func() bool {
		n++
		_, err := cs.CoreV1().Pods(ns).Create(ctx, plainPod(fmt.Sprintf("p%d", n)), metav1.CreateOptions{})
		refused = err
		return err != nil
	})
	want := `failed calling webhook "failing.adm-test.berth.dev"`
	if !apierrors.IsInternalError(refused) || !strings.Contains(refused.Error(), want) {
		t.Fatalf("refusal: %v, want a 500 InternalError containing %q", refused, want)
	}

	// failurePolicy Ignore: the same broken webhook no longer blocks.
	created.Webhooks[0].FailurePolicy = &ignore
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update webhook configuration: %v", err)
	}
	poll(t, "a pod admitted despite the failing webhook", func() bool {
		n++
		_, err := cs.CoreV1().Pods(ns).Create(ctx, plainPod(fmt.Sprintf("p%d", n)), metav1.CreateOptions{})
		if err != nil && !strings.Contains(err.Error(), want) {
			t.Fatalf("create pod: %v", err)
		}
		return err == nil
	})
}

// TestAdmissionConnectWebhookRefusesExec: pods/exec, attach and
// portforward go through admission as CONNECT with their options object
// (PodExecOptions, PodAttachOptions, PodPortForwardOptions), so a
// ValidatingWebhook with CONNECT rules refuses them before the node is
// reached; what it allows goes on to the node.
func TestAdmissionConnectWebhookRefusesExec(t *testing.T) {
	cs := shared.Client(t)
	ctx := context.Background()
	ws := startWebhookServer(t)
	const ns = "adm-connect"
	admissionNamespace(t, cs, ns, map[string]string{"adm-test": "connect"})
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, plainPod("target"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	url := ws.url + "/connect"
	createValidating(t, cs, "adm-test-connect", validatingHook("connect.adm-test.berth.dev",
		admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ws.caPEM},
		connectRule("pods/exec", "pods/attach", "pods/portforward"), map[string]string{"adm-test": "connect"}))
	connect := func(sub string, params ...string) error {
		req := cs.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name("target").SubResource(sub)
		for i := 0; i+1 < len(params); i += 2 {
			req = req.Param(params[i], params[i+1])
		}
		return req.Do(ctx).Error()
	}
	// The configuration reaches the plugin through the server's informer.
	var refused error
	poll(t, "exec refused by the webhook", func() bool {
		refused = connect("exec", "command", "forbidden", "command", "-x", "stdout", "true")
		return apierrors.IsForbidden(refused)
	})
	want := `admission webhook "connect.adm-test.berth.dev" denied the request: exec of ["forbidden" "-x"] refused`
	if !strings.Contains(refused.Error(), want) {
		t.Fatalf("refusal %q, want %q", refused, want)
	}
	ws.mu.Lock()
	got := ws.connects[len(ws.connects)-1]
	ws.mu.Unlock()
	var opts corev1.PodExecOptions
	if err := json.Unmarshal(got.Object.Raw, &opts); err != nil {
		t.Fatal(err)
	}
	if got.Operation != admissionv1.Connect || got.Kind != (metav1.GroupVersionKind{Version: "v1", Kind: "PodExecOptions"}) ||
		got.Resource.Resource != "pods" || got.SubResource != "exec" || got.Name != "target" || got.Namespace != ns ||
		!slices.Equal(opts.Command, []string{"forbidden", "-x"}) || !opts.Stdout || opts.Stdin || opts.Kind != "PodExecOptions" ||
		got.UserInfo.Username == "" {
		t.Fatalf("the webhook was asked %+v with %+v", got, opts)
	}
	// Allowed: admission passes, the request goes on (the pod has no node).
	if err := connect("exec", "command", "date", "stdout", "true"); !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "does not have a host assigned") {
		t.Fatalf("an allowed exec: %v, want past admission to the node lookup", err)
	}
	for _, tc := range []struct {
		sub    string
		params []string
		refuse string
	}{
		{"attach", []string{"stdin", "true", "stdout", "true"}, "attach with stdin refused"},
		{"attach", []string{"stdout", "true"}, ""},
		{"portforward", []string{"ports", "22"}, "port-forward to 22 refused"},
		{"portforward", []string{"ports", "8080"}, ""},
	} {
		err := connect(tc.sub, tc.params...)
		if tc.refuse != "" && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.refuse)) {
			t.Errorf("%s %v: %v, want refused with %q", tc.sub, tc.params, err, tc.refuse)
		}
		if tc.refuse == "" && !apierrors.IsBadRequest(err) {
			t.Errorf("%s %v: %v, want admitted (then 400: no host)", tc.sub, tc.params, err)
		}
	}
}

// TestAdmissionConnectWebhookRefusesProxy: pods/proxy, services/proxy and
// nodes/proxy go through admission as CONNECT with their options object
// (PodProxyOptions, ... with the path after /proxy), as upstream, so a
// webhook refuses them before any backend is looked up.
func TestAdmissionConnectWebhookRefusesProxy(t *testing.T) {
	cs := shared.Client(t)
	ctx := context.Background()
	const ns = "adm-connect-proxy"
	admissionNamespace(t, cs, ns, map[string]string{"adm-test": "connect-proxy"})
	hook := startServiceWebhook(t, "denier."+ns+".svc")
	exposeService(t, cs, ns, "denier", hook.port)
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, plainPod("target"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	path := "/deny"
	createValidating(t, cs, "adm-test-connect-proxy", validatingHook("proxy.adm-test.berth.dev",
		admissionregistrationv1.WebhookClientConfig{CABundle: hook.caPEM,
			Service: &admissionregistrationv1.ServiceReference{Namespace: ns, Name: "denier", Path: &path}},
		connectRule("pods/proxy", "services/proxy", "nodes/proxy"), map[string]string{"adm-test": "connect-proxy"}))
	var refused error
	poll(t, "pods/proxy refused by the webhook", func() bool {
		refused = cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/" + ns + "/pods/target/proxy/some/page").Do(ctx).Error()
		return apierrors.IsForbidden(refused)
	})
	if want := `admission webhook "proxy.adm-test.berth.dev" denied the request`; !strings.Contains(refused.Error(), want) {
		t.Fatalf("refusal %q, want %q", refused, want)
	}
	got := hook.received("/deny")
	last := got[len(got)-1]
	var opts corev1.PodProxyOptions
	if err := json.Unmarshal(last.Object.Raw, &opts); err != nil {
		t.Fatal(err)
	}
	if last.Operation != admissionv1.Connect || last.Kind != (metav1.GroupVersionKind{Version: "v1", Kind: "PodProxyOptions"}) ||
		last.SubResource != "proxy" || last.Name != "target" || opts.Path != "/some/page" {
		t.Fatalf("the webhook was asked %+v with %+v", last, opts)
	}
	_, stderr, err := shared.kubectl(t, "1.34", "", "get", "--raw", "/api/v1/namespaces/"+ns+"/services/denier:443/proxy/")
	if err == nil || !strings.Contains(stderr, "denied the request") {
		t.Fatalf("services/proxy through kubectl: %v %s, want the webhook's refusal", err, stderr)
	}
	got = hook.received("/deny")
	if last := got[len(got)-1]; last.Kind.Kind != "ServiceProxyOptions" || last.SubResource != "proxy" {
		t.Fatalf("services/proxy review %+v", last)
	}
}
