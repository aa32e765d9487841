package apiserver_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"berth/controlplane/authorization/rbac/bootstrap"
	"berth/controlplane/pki"
	"berth/integration/harness"
)

// TestIngressAPI: networking.k8s.io/v1 ingresses and ingressclasses in
// discovery; `kubectl create ingress` and `kubectl get ingress`
// (NAME CLASS HOSTS ADDRESS PORTS AGE) and `kubectl get ingressclass`;
// upstream's validation messages; /status writable with its metadata but
// not the spec; kubectl explain from the OpenAPI documents.
func TestIngressAPI(t *testing.T) {
	ctx := context.Background()
	cs := shared.Client(t)
	const ns = "ingress-api"
	admissionNamespace(t, cs, ns, nil)
	k := func(args ...string) string {
		t.Helper()
		out, errOut, err := shared.kubectl(t, "1.34", "", args...)
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, errOut)
		}
		return out
	}

	res, err := cs.Discovery().ServerResourcesForGroupVersion("networking.k8s.io/v1")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range res.APIResources {
		names = append(names, r.Name)
		if r.Name == "ingresses" && (!r.Namespaced || !slices.Equal(r.ShortNames, []string{"ing"})) {
			t.Errorf("ingresses: %+v", r)
		}
		if r.Name == "ingressclasses" && r.Namespaced {
			t.Errorf("ingressclasses namespaced: %+v", r)
		}
	}
	for _, want := range []string{"ingresses", "ingresses/status", "ingressclasses"} {
		if !slices.Contains(names, want) {
			t.Fatalf("networking.k8s.io/v1 serves %v, no %s", names, want)
		}
	}

	classYAML := `apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: api-test}
spec:
  controller: example.com/ingress
  parameters: {kind: Config, name: p}
`
	if out, errOut, err := shared.kubectl(t, "1.34", classYAML, "apply", "-f", "-"); err != nil {
		t.Fatalf("apply class: %v %s %s", err, out, errOut)
	}
	t.Cleanup(func() {
		_ = cs.NetworkingV1().IngressClasses().Delete(context.Background(), "api-test", metav1.DeleteOptions{})
	})
	class, err := cs.NetworkingV1().IngressClasses().Get(ctx, "api-test", metav1.GetOptions{})
	if err != nil || class.Spec.Parameters.Scope == nil || *class.Spec.Parameters.Scope != "Cluster" || class.Generation != 1 {
		t.Fatalf("class (parameters scope defaults to Cluster): %+v %v", class, err)
	}
	if out := k("get", "ingressclass", "api-test"); !strings.Contains(out, "NAME") || !strings.Contains(out, "CONTROLLER") ||
		!strings.Contains(out, "PARAMETERS") || !strings.Contains(out, "example.com/ingress") || !strings.Contains(out, "Config/p") {
		t.Errorf("kubectl get ingressclass:\n%s", out)
	}

	k("-n", ns, "create", "ingress", "web", "--class=api-test",
		"--rule=web.example/=web:80", "--rule=web.example/api*=api:http", "--rule=secure.example/=web:80,tls=web-tls")
	ing, err := cs.NetworkingV1().Ingresses(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ing.Spec.Rules) != 2 || len(ing.Spec.TLS) != 1 || *ing.Spec.Rules[0].HTTP.Paths[1].PathType != networkingv1.PathTypePrefix ||
		ing.Spec.Rules[0].HTTP.Paths[1].Backend.Service.Port.Name != "http" || ing.Generation != 1 {
		t.Fatalf("created ingress: %+v", ing.Spec)
	}
	out := k("-n", ns, "get", "ingress", "web")
	header := strings.Fields(strings.SplitN(out, "\n", 2)[0])
	if !slices.Equal(header, []string{"NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"}) ||
		!strings.Contains(out, "api-test") || !strings.Contains(out, "web.example,secure.example") || !strings.Contains(out, "80, 443") {
		t.Errorf("kubectl get ingress:\n%s", out)
	}

	// /status takes the status and metadata, keeps the spec.
	w, err := cs.NetworkingV1().Ingresses(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: ing.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	patched, err := cs.NetworkingV1().Ingresses(ns).Patch(ctx, "web", types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"patchedstatus":"true"}},"spec":{"ingressClassName":"other"},"status":{"loadBalancer":{"ingress":[{"ip":"10.9.0.1"}]}}}`),
		metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatal(err)
	}
	if patched.Annotations["patchedstatus"] != "true" || *patched.Spec.IngressClassName != "api-test" || patched.Status.LoadBalancer.Ingress[0].IP != "10.9.0.1" {
		t.Fatalf("status patch: %+v", patched)
	}
	if ev := nextEventOf(t, w, watch.Modified); ev.Object.(*networkingv1.Ingress).Status.LoadBalancer.Ingress[0].IP != "10.9.0.1" {
		t.Errorf("watch event: %+v", ev.Object)
	}
	if out := k("-n", ns, "get", "ingress", "web"); !strings.Contains(out, "10.9.0.1") {
		t.Errorf("ADDRESS missing:\n%s", out)
	}
	// The main resource ignores a status and keeps the generation for a
	// metadata change.
	patched.Status.LoadBalancer.Ingress[0].IP = "10.9.0.2"
	patched.Labels = map[string]string{"x": "y"}
	upd, err := cs.NetworkingV1().Ingresses(ns).Update(ctx, patched, metav1.UpdateOptions{})
	if err != nil || upd.Status.LoadBalancer.Ingress[0].IP != "10.9.0.1" || upd.Generation != 1 {
		t.Fatalf("update with status: %+v %v", upd, err)
	}
	_, err = cs.NetworkingV1().Ingresses(ns).Patch(ctx, "web", types.MergePatchType,
		[]byte(`{"status":{"loadBalancer":{"ingress":[{"hostname":"10.9.0.3"}]}}}`), metav1.PatchOptions{}, "status")
	wantInvalid(t, err, "status.loadBalancer.ingress[0].hostname", "must be a DNS name, not an IP address")

	// Validation, as kubectl shows it.
	bad := `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: bad}
spec:
  rules:
  - host: "10.0.0.1"
    http:
      paths:
      - path: /a
        backend:
          service: {name: web, port: {number: 80}}
          resource: {kind: Bucket, name: b}
`
	_, errOut, err := shared.kubectl(t, "1.34", bad, "-n", ns, "create", "-f", "-")
	for _, want := range []string{
		`spec.rules[0].host: Invalid value: "10.0.0.1": must be a DNS name, not an IP address`,
		`spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified`,
	} {
		if err == nil || !strings.Contains(errOut, want) {
			t.Errorf("bad ingress: %v, stderr lacks %q:\n%s", err, want, errOut)
		}
	}
	_, err = cs.NetworkingV1().Ingresses(ns).Create(ctx, &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "empty"}}, metav1.CreateOptions{})
	wantInvalid(t, err, "spec", "either `defaultBackend` or `rules` must be specified")
	class.Spec.Controller = "example.com/other"
	_, err = cs.NetworkingV1().IngressClasses().Update(ctx, class, metav1.UpdateOptions{})
	wantInvalid(t, err, "spec.controller", "field is immutable")

	if out := k("explain", "ingress.spec.rules.http.paths.pathType"); !strings.Contains(out, "Prefix") || !strings.Contains(out, "Exact") {
		t.Errorf("kubectl explain:\n%s", out)
	}
	if out := k("explain", "ingressclass.spec.controller"); !strings.Contains(out, "controller") {
		t.Errorf("kubectl explain ingressclass:\n%s", out)
	}

	if err := cs.NetworkingV1().Ingresses(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.NetworkingV1().Ingresses(ns).Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after deletecollection: %v", err)
	}
}

// TestDefaultIngressClassAdmission: an Ingress naming no class gets the
// class annotated ingressclass.kubernetes.io/is-default-class (of
// several, the newest); one naming a class (or the deprecated annotation) keeps it.
func TestDefaultIngressClassAdmission(t *testing.T) {
	ctx := context.Background()
	cs := shared.Client(t)
	const ns = "adm-ingressclass"
	admissionNamespace(t, cs, ns, nil)
	classes := cs.NetworkingV1().IngressClasses()
	ingresses := cs.NetworkingV1().Ingresses(ns)
	mkClass := func(name string) {
		t.Helper()
		ic := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: name,
			Annotations: map[string]string{networkingv1.AnnotationIsDefaultIngressClass: "true"}},
			Spec: networkingv1.IngressClassSpec{Controller: "example.com/" + name}}
		if _, err := classes.Create(ctx, ic, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = classes.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	backend := &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}
	// createdClass creates an Ingress (a dry run) until its class is want:
	// the plugin reads an informer's cache, which follows the class's
	// creation within moments.
	createdClass := func(annotations map[string]string, class *string, want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: annotations},
				Spec: networkingv1.IngressSpec{DefaultBackend: backend, IngressClassName: class}}
			got, err := ingresses.Create(ctx, ing, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil {
				t.Fatal(err)
			}
			name := ""
			if got.Spec.IngressClassName != nil {
				name = *got.Spec.IngressClassName
			}
			if name == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("ingress class %q, want %q", name, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	createdClass(nil, nil, "")
	mkClass("adm-default-z")
	createdClass(nil, nil, "adm-default-z")
	// Newer, or as old and a lower name: chosen either way (the unit
	// tests tell the two rules apart).
	mkClass("adm-default-a")
	createdClass(nil, nil, "adm-default-a")
	mine := "mine"
	createdClass(nil, &mine, "mine")
	createdClass(map[string]string{"kubernetes.io/ingress.class": "legacy"}, nil, "")
}

// TestIngressCommand runs `berth ingress` as a process with the
// controller's own identity (a client certificate for
// system:berth-ingress-controller, nothing else: its ClusterRole must be
// enough) against the server, with a Service whose EndpointSlice points at
// an HTTP server of the test's: the Ingress's host and path reach it
// through the controller, another path is 404, the status is written.
func TestIngressCommand(t *testing.T) {
	ctx := context.Background()
	cs := shared.Client(t)
	const ns = "ingress-command"
	admissionNamespace(t, cs, ns, nil)
	certPEM, keyPEM, caPEM, err := pki.EnsureClient(shared.Dir, "ingress-controller", bootstrap.IngressController)
	if err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["berth"] = &clientcmdapi.Cluster{Server: "https://" + shared.Addr, CertificateAuthorityData: caPEM}
	kc.AuthInfos["ingress"] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	kc.Contexts["ingress"] = &clientcmdapi.Context{Cluster: "berth", AuthInfo: "ingress"}
	kc.CurrentContext = "ingress"
	kubeconfig := filepath.Join(t.TempDir(), "ingress.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}

	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "backend %s via %s", r.URL.Path, r.Header.Get("X-Forwarded-Host"))
	}))
	t.Cleanup(backend.Close)
	_, portStr, _ := net.SplitHostPort(backend.Listener.Addr().String())
	port64, _ := strconv.ParseInt(portStr, 10, 32)
	port, portName, ready := int32(port64), "http", true

	const controllerName = "berth.dev/ingress-command-test"
	class := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "command-test"}, Spec: networkingv1.IngressClassSpec{Controller: controllerName}}
	if _, err := cs.NetworkingV1().IngressClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.NetworkingV1().IngressClasses().Delete(context.Background(), class.Name, metav1.DeleteOptions{})
	})
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "local"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "local-1", Labels: map[string]string{discoveryv1.LabelServiceName: "local"}},
		AddressType: discoveryv1.AddressTypeIPv4, Ports: []discoveryv1.EndpointPort{{Name: &portName, Port: &port}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"127.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}}}
	if _, err := cs.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	prefix := networkingv1.PathTypePrefix
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "local"}, Spec: networkingv1.IngressSpec{IngressClassName: &class.Name,
		Rules: []networkingv1.IngressRule{{Host: "local.example", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
			Paths: []networkingv1.HTTPIngressPath{{Path: "/app", PathType: &prefix, Backend: networkingv1.IngressBackend{
				Service: &networkingv1.IngressServiceBackend{Name: "local", Port: networkingv1.ServiceBackendPort{Name: "http"}}}}}}}}}}}
	if _, err := cs.NetworkingV1().Ingresses(ns).Create(ctx, ing, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	httpAddr := "127.0.0.1:" + strconv.Itoa(harness.FreePort(t))
	harness.Start(t, "berth ingress", "ingress", "--kubeconfig", kubeconfig, "--controller-name", controllerName,
		"--http-address", httpAddr, "--https-address", "127.0.0.1:"+strconv.Itoa(harness.FreePort(t)), "--status-address", "192.0.2.77")
	get := func(path string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+httpAddr+path, nil)
		req.Host = "local.example"
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	harness.WaitFor(t, 30*time.Second, "local.example/app/x through berth ingress", func() (bool, string) {
		code, body := get("/app/x")
		return code == 200 && body == "backend /app/x via local.example", fmt.Sprintf("%d %q", code, body)
	})
	if code, _ := get("/other"); code != http.StatusNotFound {
		t.Errorf("local.example/other: %d, want 404", code)
	}
	harness.WaitFor(t, 30*time.Second, "the Ingress's status", func() (bool, string) {
		got, err := cs.NetworkingV1().Ingresses(ns).Get(ctx, "local", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		lb := got.Status.LoadBalancer.Ingress
		return len(lb) == 1 && lb[0].IP == "192.0.2.77", fmt.Sprintf("%+v", lb)
	})
	// The endpoint turning not ready takes it out: 503.
	ready = false
	cur, err := cs.DiscoveryV1().EndpointSlices(ns).Get(ctx, "local-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Endpoints[0].Conditions.Ready = &ready
	if _, err := cs.DiscoveryV1().EndpointSlices(ns).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, 30*time.Second, "503 once the endpoint is not ready", func() (bool, string) {
		code, body := get("/app/x")
		return code == http.StatusServiceUnavailable, fmt.Sprintf("%d %q", code, body)
	})
}
