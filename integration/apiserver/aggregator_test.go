package apiserver_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	"k8s.io/client-go/dynamic"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"berth/integration/harness"
	"berth/internal/testpki"
)

// widgetsGV is the group-version the test's extension apiserver serves.
var widgetsGV = schema.GroupVersion{Group: "widgets.berth.test", Version: "v1alpha1"}

// extensionServer is a small extension apiserver on 127.0.0.1: it trusts
// requests as a k8s.io/apiserver-based one does, from the
// extension-apiserver-authentication ConfigMap (k8s.io/apiserver's
// request-header authenticator: a client certificate from the front-proxy
// CA with an allowed name, the user in X-Remote-* headers), and serves
// widgets (list, get, watch) and its discovery.
type extensionServer struct {
	port  int32
	caPEM []byte
	// failDiscovery makes /apis/GROUP/VERSION answer 500.
	failDiscovery atomic.Bool
	mu            sync.Mutex
	users         []string // "name groups" of the authenticated requests
}

func (s *extensionServer) sawUser(name, group string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.ContainsFunc(s.users, func(u string) bool {
		return strings.HasPrefix(u, name+" ") && strings.Contains(u, group)
	})
}

func startExtensionServer(t *testing.T, cm *corev1.ConfigMap, dnsName string) *extensionServer {
	t.Helper()
	ca := testpki.NewCA(t, "extension-ca")
	s := &extensionServer{caPEM: ca.CertPEM}
	list := func(key string) headerrequest.StaticStringSlice {
		var v []string
		if err := json.Unmarshal([]byte(cm.Data[key]), &v); err != nil {
			t.Fatalf("extension-apiserver-authentication %s: %v", key, err)
		}
		return v
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(cm.Data["requestheader-client-ca-file"])) {
		t.Fatal("extension-apiserver-authentication: no requestheader-client-ca-file")
	}
	verify := func() (x509.VerifyOptions, bool) {
		return x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, true
	}
	auth := headerrequest.NewDynamicVerifyOptionsSecure(x509request.VerifyOptionFunc(verify), list("requestheader-allowed-names"),
		list("requestheader-username-headers"), list("requestheader-uid-headers"), list("requestheader-group-headers"),
		list("requestheader-extra-headers-prefix"))
	widget := func(name string) map[string]any {
		return map[string]any{"apiVersion": widgetsGV.String(), "kind": "Widget",
			"metadata": map[string]any{"name": name, "namespace": "default", "resourceVersion": "1", "creationTimestamp": "2026-01-01T00:00:00Z"}}
	}
	writeJSON := func(w http.ResponseWriter, code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(v)
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, ok, err := auth.AuthenticateRequest(r)
		if !ok || err != nil {
			writeJSON(w, http.StatusUnauthorized, metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
				Status: metav1.StatusFailure, Code: 401, Reason: metav1.StatusReasonUnauthorized, Message: fmt.Sprintf("Unauthorized: %v", err)})
			return
		}
		s.mu.Lock()
		s.users = append(s.users, resp.User.GetName()+" "+strings.Join(resp.User.GetGroups(), ","))
		s.mu.Unlock()
		base := "/apis/" + widgetsGV.String()
		switch {
		case r.URL.Path == base:
			if s.failDiscovery.Load() {
				http.Error(w, "discovery broken on purpose", http.StatusInternalServerError)
				return
			}
			writeJSON(w, http.StatusOK, metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
				GroupVersion: widgetsGV.String(), APIResources: []metav1.APIResource{{Name: "widgets", SingularName: "widget",
					Namespaced: true, Kind: "Widget", Verbs: metav1.Verbs{"get", "list", "watch"}}}})
		case r.URL.Path == base+"/namespaces/default/widgets" && r.URL.Query().Get("watch") == "true":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_ = json.NewEncoder(w).Encode(map[string]any{"type": "ADDED", "object": widget("streamed")})
			http.NewResponseController(w).Flush()
			<-r.Context().Done()
		case r.URL.Path == base+"/namespaces/default/widgets":
			writeJSON(w, http.StatusOK, map[string]any{"apiVersion": widgetsGV.String(), "kind": "WidgetList",
				"metadata": map[string]any{"resourceVersion": "1"}, "items": []any{widget("first")}})
		case r.URL.Path == base+"/namespaces/default/widgets/first":
			writeJSON(w, http.StatusOK, widget("first"))
		default:
			writeJSON(w, http.StatusNotFound, metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
				Status: metav1.StatusFailure, Code: 404, Reason: metav1.StatusReasonNotFound, Message: "not found: " + r.URL.Path})
		}
	})
	s.port = int32(testpki.ServeTLS(t, handler, &tls.Config{Certificates: []tls.Certificate{ca.Serving(t, dnsName)}, ClientAuth: tls.RequestClientCert}))
	return s
}

// availability is an APIService's Available condition as "Status Reason".
func availability(t *testing.T, agg aggregatorclient.Interface, name string) string {
	t.Helper()
	svc, err := agg.ApiregistrationV1().APIServices().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	for _, c := range svc.Status.Conditions {
		if c.Type == apiregistrationv1.Available {
			return string(c.Status) + " " + c.Reason
		}
	}
	return "no Available condition"
}

// TestAggregatedAPIService registers an extension apiserver (a server on
// 127.0.0.1 behind a Service and its EndpointSlice, trusting berth from
// the published extension-apiserver-authentication ConfigMap) through an
// APIService, and uses it as clients do: kubectl get through discovery,
// client-go list and watch (streamed through the proxy), kubectl proxy;
// the Available condition follows the Service, its endpoints and the
// discovery check.
func TestAggregatedAPIService(t *testing.T) {
	cs := shared.Client(t)
	agg, err := aggregatorclient.NewForConfig(shared.RESTConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const ns, name = "widgets-api", "v1alpha1.widgets.berth.test"
	admissionNamespace(t, cs, ns, nil)

	t.Run("berth's own group-versions are local APIServices", func(t *testing.T) {
		out := shared.mustKubectl(t, "1.34", "", "get", "apiservices")
		for _, want := range []string{"v1.apps", "v1.", "v1.apiregistration.k8s.io"} {
			found := false
			for _, line := range strings.Split(out, "\n") {
				if f := strings.Fields(line); len(f) >= 3 && f[0] == want && f[1] == "Local" && f[2] == "True" {
					found = true
				}
			}
			if !found {
				t.Errorf("kubectl get apiservices has no %q Local True line:\n%s", want, out)
			}
		}
	})

	var cm *corev1.ConfigMap
	harness.WaitFor(t, 30*time.Second, "kube-system/extension-apiserver-authentication", func() (bool, string) {
		cm, err = cs.CoreV1().ConfigMaps("kube-system").Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	for _, k := range []string{"client-ca-file", "requestheader-client-ca-file"} {
		if !strings.Contains(cm.Data[k], "BEGIN CERTIFICATE") {
			t.Fatalf("extension-apiserver-authentication %s: %q", k, cm.Data[k])
		}
	}
	if cm.Data["client-ca-file"] == cm.Data["requestheader-client-ca-file"] {
		t.Fatal("the front-proxy CA is the cluster CA: it must be a CA of its own")
	}
	ext := startExtensionServer(t, cm, "widgets."+ns+".svc")

	t.Run("the extension apiserver refuses a caller without the front-proxy certificate", func(t *testing.T) {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(ext.caPEM)
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "widgets." + ns + ".svc"}}}
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/apis/%s", ext.port, widgetsGV), nil)
		req.Header.Set("X-Remote-User", "mallory")
		req.Header.Set("X-Remote-Group", "system:masters")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("forged headers without the front-proxy certificate: %s, want 401", resp.Status)
		}
	})

	exposeService(t, cs, ns, "widgets", ext.port)
	port := int32(443)
	apiService := &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: apiregistrationv1.APIServiceSpec{Group: widgetsGV.Group, Version: widgetsGV.Version,
			Service:  &apiregistrationv1.ServiceReference{Namespace: ns, Name: "widgets", Port: &port},
			CABundle: ext.caPEM, GroupPriorityMinimum: 2000, VersionPriority: 200},
	}
	if _, err := agg.ApiregistrationV1().APIServices().Create(ctx, apiService, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = agg.ApiregistrationV1().APIServices().Delete(ctx, name, metav1.DeleteOptions{}) })
	harness.WaitFor(t, 60*time.Second, name+" Available", func() (bool, string) {
		got := availability(t, agg, name)
		return got == "True Passed", got
	})

	t.Run("a name other than VERSION.GROUP is refused", func(t *testing.T) {
		bad := apiService.DeepCopy()
		bad.Name = "widgets"
		_, err := agg.ApiregistrationV1().APIServices().Create(ctx, bad, metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), `metadata.name: Invalid value: "widgets": must be`) {
			t.Fatalf("create APIService named widgets: %v", err)
		}
	})

	t.Run("kubectl reaches the extension apiserver through discovery", func(t *testing.T) {
		out := shared.mustKubectl(t, "1.34", "", "api-resources", "--api-group", widgetsGV.Group, "-o", "name")
		if strings.TrimSpace(out) != "widgets.widgets.berth.test" {
			t.Errorf("kubectl api-resources --api-group %s: %q", widgetsGV.Group, out)
		}
		out = shared.mustKubectl(t, "1.34", "", "get", "widgets", "-n", "default", "-o", "name")
		if strings.TrimSpace(out) != "widget.widgets.berth.test/first" {
			t.Errorf("kubectl get widgets: %q", out)
		}
		out = shared.mustKubectl(t, "1.34", "", "get", "widget", "first", "-n", "default", "-o", "jsonpath={.kind}")
		if out != "Widget" {
			t.Errorf("kubectl get widget first: kind %q", out)
		}
		if !ext.sawUser("kubernetes-admin", "system:masters") {
			t.Errorf("the extension apiserver never saw kubernetes-admin in system:masters: %v", ext.users)
		}
		if !ext.sawUser("system:kube-aggregator", "system:masters") {
			t.Errorf("the availability check did not come as system:kube-aggregator: %v", ext.users)
		}
		groups, err := cs.Discovery().ServerGroups()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(groups.Groups, func(g metav1.APIGroup) bool {
			return g.Name == widgetsGV.Group && g.PreferredVersion.GroupVersion == widgetsGV.String()
		}) {
			t.Errorf("/apis lacks %s", widgetsGV.Group)
		}
	})

	t.Run("a watch streams through the proxy", func(t *testing.T) {
		dyn, err := dynamic.NewForConfig(shared.RESTConfig(t))
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		w, err := dyn.Resource(widgetsGV.WithResource("widgets")).Namespace("default").Watch(wctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		ev, ok := <-w.ResultChan()
		if !ok {
			t.Fatal("watch closed without an event")
		}
		if m, err := metaName(ev.Object); err != nil || m != "streamed" || ev.Type != "ADDED" {
			t.Fatalf("event %s %v (%v), want ADDED streamed", ev.Type, m, err)
		}
	})

	t.Run("kubectl proxy serves the API and the extension", func(t *testing.T) {
		lines, stderr := harness.Kubectl{Bin: requireKubectl(t, "1.34"), Args: []string{"--kubeconfig", shared.Kubeconfig()}}.Stream(t, 5*time.Minute, "proxy", "--port", "0")
		if !lines.Scan() {
			t.Fatalf("kubectl proxy: %v; stderr: %s", lines.Err(), stderr.String())
		}
		line := lines.Text()
		addr := strings.TrimSpace(line[strings.LastIndex(line, " ")+1:]) // "Starting to serve on 127.0.0.1:PORT"
		for path, want := range map[string]string{
			"/api/v1/namespaces/" + ns:                                    `"name":"` + ns + `"`,
			"/apis/" + widgetsGV.String() + "/namespaces/default/widgets": `"name":"first"`,
		} {
			body, err := harness.HTTPGet("http://" + addr + path)
			if err != nil || !strings.Contains(body, want) {
				t.Errorf("GET %s through kubectl proxy: %v %s, want 200 with %s", path, err, body, want)
			}
		}
	})

	t.Run("Available follows the discovery check, the endpoints and the Service", func(t *testing.T) {
		ext.failDiscovery.Store(true)
		harness.WaitFor(t, 90*time.Second, "FailedDiscoveryCheck", func() (bool, string) {
			got := availability(t, agg, name)
			return got == "False FailedDiscoveryCheck", got
		})
		_, _, err := shared.kubectl(t, "1.34", "", "get", "--raw", "/apis/"+widgetsGV.String()+"/namespaces/default/widgets")
		if err == nil {
			t.Error("an unavailable APIService still answered")
		}
		ext.failDiscovery.Store(false)
		harness.WaitFor(t, 90*time.Second, "Available again", func() (bool, string) {
			got := availability(t, agg, name)
			return got == "True Passed", got
		})
		if err := cs.DiscoveryV1().EndpointSlices(ns).Delete(ctx, "widgets-1", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		harness.WaitFor(t, 60*time.Second, "EndpointsNotFound", func() (bool, string) {
			got := availability(t, agg, name)
			return got == "False EndpointsNotFound", got
		})
		if err := cs.CoreV1().Services(ns).Delete(ctx, "widgets", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		harness.WaitFor(t, 60*time.Second, "ServiceNotFound", func() (bool, string) {
			got := availability(t, agg, name)
			return got == "False ServiceNotFound", got
		})
		out := shared.mustKubectl(t, "1.34", "", "get", "apiservice", name)
		if !strings.Contains(out, ns+"/widgets") || !strings.Contains(out, "False (ServiceNotFound)") {
			t.Errorf("kubectl get apiservice %s:\n%s", name, out)
		}
		exposeService(t, cs, ns, "widgets", ext.port)
		harness.WaitFor(t, 60*time.Second, "Available with the Service back", func() (bool, string) {
			got := availability(t, agg, name)
			return got == "True Passed", got
		})
	})
}

// metaName is an object's metadata.name.
func metaName(obj any) (string, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return "", err
	}
	var m struct {
		Metadata struct{ Name string } `json:"metadata"`
	}
	err = json.Unmarshal(b, &m)
	return m.Metadata.Name, err
}
