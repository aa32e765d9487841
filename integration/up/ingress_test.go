package up

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"berth/ingress/ingresstest"
	"berth/integration/harness"
)

// ingressApps are the seeds' web Deployment of 3 (each replica answers its
// pod name) with its Service, an api Deployment with its Service (a named
// port), an IngressClass of another controller, and the Ingresses: web.example
// (no class: the default class, berth's), paths.example (/ to web, /api to
// api), secure.example (TLS from the Secret secure-tls) and other.example
// (the other class).
const ingressApps = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: web
        image: docker.io/berth/busybox:1
        command: ["sh", "-c", "mkdir -p /www && hostname > /www/index.html && exec httpd -f -p 8080 -h /www"]
        ports: [{name: http, containerPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: api
        image: docker.io/berth/busybox:1
        command: ["sh", "-c", "mkdir -p /www/api && echo api > /www/api/index.html && exec httpd -f -p 9090 -h /www"]
        ports: [{name: api, containerPort: 9090}]
---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: default}
spec:
  selector: {app: api}
  ports: [{name: rest, port: 8000, targetPort: api}]
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: other}
spec: {controller: example.com/other-ingress}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: default}
spec:
  rules:
  - host: web.example
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: paths, namespace: default}
spec:
  ingressClassName: berth
  rules:
  - host: paths.example
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {name: http}}}}
      - {path: /api, pathType: Prefix, backend: {service: {name: api, port: {name: rest}}}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: secure, namespace: default}
spec:
  tls:
  - {hosts: [secure.example], secretName: secure-tls}
  rules:
  - host: secure.example
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: elsewhere, namespace: default}
spec:
  ingressClassName: other
  rules:
  - host: other.example
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
`

// TestUpIngress: berth up's ingress controller on ports of the test's
// choosing, on real containerd. From the host: web.example answered by each
// of the web Deployment's 3 replicas; paths.example routed by path to two
// Services; secure.example over TLS with its Secret's certificate (SNI),
// another name with the default certificate; an Ingress of another class
// not served (404, no status). The served Ingresses' status is the node's
// InternalIP (kubectl get ingress ADDRESS). The controller's identity may do
// what it needs and nothing else. After SIGTERM the ports are free.
func TestUpIngress(t *testing.T) {
	requirePrerequisites(t)
	kubectl := harness.RequireKubectl(t)
	bridge, cidr := harness.ClaimSubnet(t, 229, "bing")
	serviceCIDR := strings.Replace(cidr, "10.229.", "10.230.", 1)
	httpPort, httpsPort := harness.FreePort(t), harness.FreePort(t)
	dataDir := shortTempDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	up := startUp(t, ctx, dataDir, upOptions{Listen: "127.0.0.1:" + strconv.Itoa(harness.FreePort(t)),
		Bridge: bridge, PodCIDR: cidr, ServiceCIDR: serviceCIDR, HTTPPort: httpPort, HTTPSPort: httpsPort})
	cmd, exited, stdout := up.cmd, up.exited, &up.stdout
	kubeconfig := up.kubeconfig
	poll(t, ctx, exited, "berth up to be ready", func() bool { return strings.Contains(stdout.String(), "use: kubectl --kubeconfig") })
	if want := fmt.Sprintf("ingress controller (IngressClass berth) on http [::]:%d, https [::]:%d", httpPort, httpsPort); !strings.Contains(stdout.String(), want) {
		t.Errorf("berth up does not print %q:\n%s", want, stdout.String())
	}
	kc := func(stdin string, args ...string) string {
		t.Helper()
		c := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
		c.Stdin = strings.NewReader(stdin)
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
		return string(out)
	}

	// The controller's class, created by berth up as the default.
	if out := kc("", "get", "ingressclass", "berth", "-o", "jsonpath={.spec.controller} {.metadata.annotations.ingressclass\\.kubernetes\\.io/is-default-class}"); out != "berth.dev/ingress true" {
		t.Fatalf("IngressClass berth: %q", out)
	}
	crt, key := ingresstest.SelfSigned(t, "secure.example")
	files := t.TempDir()
	crtFile, keyFile := filepath.Join(files, "tls.crt"), filepath.Join(files, "tls.key")
	if err := os.WriteFile(crtFile, crt, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	kc("", "create", "secret", "tls", "secure-tls", "--cert", crtFile, "--key", keyFile)
	kc(ingressApps, "apply", "-f", "-")
	kc("", "rollout", "status", "deployment/web", "--timeout=180s")
	kc("", "rollout", "status", "deployment/api", "--timeout=180s")
	if out := kc("", "get", "ingress", "web", "-o", "jsonpath={.spec.ingressClassName}"); out != "berth" {
		t.Errorf("ingress web (no class given) has class %q, want the default berth", out)
	}
	pods := map[string]bool{}
	for _, name := range strings.Fields(kc("", "get", "pods", "-l", "app=web", "-o", "jsonpath={.items[*].metadata.name}")) {
		pods[name] = true
	}
	if len(pods) != 3 {
		t.Fatalf("web pods: %v", pods)
	}

	httpBase := "http://127.0.0.1:" + strconv.Itoa(httpPort)
	// web.example: every replica answers, round-robin, once the
	// controller has all three ready endpoints.
	seen := map[string]bool{}
	poll(t, ctx, exited, "web.example to be answered by each of the 3 replicas", func() bool {
		code, body := ingressGet(httpBase+"/", "web.example")
		if code == http.StatusOK {
			seen[strings.TrimSpace(body)] = true
		}
		return len(seen) == 3
	})
	for name := range seen {
		if !pods[name] {
			t.Errorf("web.example answered by %q, not a web pod (%v)", name, pods)
		}
	}
	for _, tc := range []struct {
		host, path string
		code       int
		body       string
	}{
		{"paths.example", "/api/", 200, "api"},
		{"paths.example", "/apis", 404, ""}, // Prefix /api does not match /apis; / sends it to web, whose httpd has no /apis
		{"other.example", "/", 404, "404 page not found"},
		{"nothing.example", "/", 404, "404 page not found"},
	} {
		code, body := ingressGet(httpBase+tc.path, tc.host)
		if code != tc.code || (tc.body != "" && strings.TrimSpace(body) != tc.body) {
			t.Errorf("%s%s: %d %q, want %d %q", tc.host, tc.path, code, body, tc.code, tc.body)
		}
	}
	if code, body := ingressGet(httpBase+"/", "paths.example"); code != 200 || !pods[strings.TrimSpace(body)] {
		t.Errorf("paths.example/: %d %q, want a web pod's name", code, body)
	}

	// TLS by SNI: the Secret's certificate for secure.example (verified),
	// the default one for any other name.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(crt)
	httpsBase := "https://127.0.0.1:" + strconv.Itoa(httpsPort)
	poll(t, ctx, exited, "secure.example over TLS with its certificate", func() bool {
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "secure.example"}}}
		req, _ := http.NewRequest(http.MethodGet, httpsBase+"/", nil)
		req.Host = "secure.example"
		resp, err := client.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == 200 && pods[strings.TrimSpace(string(body))]
	})
	conn, err := tls.Dial("tcp", "127.0.0.1:"+strconv.Itoa(httpsPort), &tls.Config{ServerName: "web.example", InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	if cn := conn.ConnectionState().PeerCertificates[0].Subject.CommonName; cn != "berth ingress default certificate" {
		t.Errorf("certificate for web.example (no TLS entry): %q, want the default", cn)
	}
	conn.Close()

	// Status: the node's InternalIP on the served Ingresses, none on the
	// other class's.
	nodeIP := kc("", "get", "nodes", "-o", `jsonpath={.items[0].status.addresses[?(@.type=="InternalIP")].address}`)
	for _, name := range []string{"web", "paths", "secure"} {
		var got string
		poll(t, ctx, exited, "ingress "+name+"'s status", func() bool {
			got = kc("", "get", "ingress", name, "-o", "jsonpath={.status.loadBalancer.ingress[*].ip}")
			return got == nodeIP
		})
	}
	if out := kc("", "get", "ingress", "elsewhere", "-o", "jsonpath={.status.loadBalancer}"); out != "{}" && out != "" {
		t.Errorf("the other class's ingress got a status: %s", out)
	}
	if out := kc("", "get", "ingress", "web"); !strings.Contains(out, nodeIP) || !strings.Contains(out, "berth") {
		t.Errorf("kubectl get ingress web:\n%s", out)
	}

	checkIngressIdentity(t, ctx, dataDir, kubeconfig)

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-ctx.Done():
		t.Fatal("berth up did not exit after SIGTERM")
	}
	for _, p := range []int{httpPort, httpsPort} {
		l, err := net.Listen("tcp", ":"+strconv.Itoa(p))
		if err != nil {
			t.Errorf("ingress port %d still taken after berth up stopped: %v", p, err)
			continue
		}
		l.Close()
	}
}

// checkIngressIdentity: the controller's client certificate in the data
// dir is user system:berth-ingress-controller, which may list ingresses,
// services, endpointslices and secrets and write ingress status, but not
// read pods or configmaps nor change an Ingress's spec.
func checkIngressIdentity(t *testing.T, ctx context.Context, dataDir, kubeconfig string) {
	t.Helper()
	admin, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	rc := &rest.Config{Host: admin.Host, TLSClientConfig: rest.TLSClientConfig{
		CertFile: filepath.Join(dataDir, "ingress-controller.crt"), KeyFile: filepath.Join(dataDir, "ingress-controller.key"), CAData: admin.CAData}}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.NetworkingV1().Ingresses("").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("the controller's identity cannot list ingresses: %v", err)
	}
	if _, err := cs.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{FieldSelector: "type=kubernetes.io/tls"}); err != nil {
		t.Errorf("the controller's identity cannot list TLS secrets: %v", err)
	}
	if _, err := cs.DiscoveryV1().EndpointSlices("").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("the controller's identity cannot list endpointslices: %v", err)
	}
	if _, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the controller's identity listing pods: %v, want 403", err)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the controller's identity listing configmaps: %v, want 403", err)
	}
	ing, err := cs.NetworkingV1().Ingresses("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ing.Spec.Rules = []networkingv1.IngressRule{{Host: "hijack.example"}}
	ing.Spec.DefaultBackend = &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}
	if _, err := cs.NetworkingV1().Ingresses("default").Update(ctx, ing, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the controller's identity updating an Ingress's spec: %v, want 403", err)
	}
}

// ingressGet GETs url with the Host header host; it returns the status
// and body (0 on a transport error).
func ingressGet(url, host string) (int, string) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error()
	}
	req.Host = host
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
