package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"berth/integration/harness"
	"berth/integration/nodeenv"
)

// TestProxySubresources reaches a busybox httpd in a pod through the
// apiserver's pods/proxy and services/proxy (GET and POST to a CGI script
// that echoes method, query and body; ports by number and by name), the
// agent through nodes/proxy (/healthz, /pods, /logs/), and checks the
// refusals: unreachable ports (503), Services without endpoints (503),
// ExternalName Services (404), users without RBAC and node identities (403).
//
// The apiserver proxies to nodes only at global unicast addresses (as
// kube-apiserver), so the node's address here is its bridge's gateway
// address (on this machine, in the pod network the package's environment
// owns), not 127.0.0.1.
func TestProxySubresources(t *testing.T) {
	env := nodeenv.Current()
	gw := bridgeGateway(t, env)
	c := harness.StartCluster(t, harness.ClusterOptions{AgentArgs: []string{"--node-ip", gw, "--kubelet-address", gw}})
	ctx := context.Background()
	waitNodeReady(t, c, v1.ConditionTrue)

	const objects = `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: proxied-web}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %[1]s
    imagePullPolicy: IfNotPresent
    ports:
    - {name: http, containerPort: 8080}
    command:
    - sh
    - -c
    - |
      mkdir -p /www/cgi-bin
      echo hello-from-web > /www/index.html
      printf '#!/bin/sh\necho "Content-Type: text/plain"\necho\nbody=$(head -c "${CONTENT_LENGTH:-0}")\necho "$REQUEST_METHOD $QUERY_STRING $body"\n' > /www/cgi-bin/echo
      chmod +x /www/cgi-bin/echo
      exec httpd -f -p 8080 -h /www
  - name: upgrader
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command:
    - sh
    - -c
    - |
      printf '#!/bin/sh\nwhile read -r l; do [ "${#l}" -le 1 ] && break; done\nprintf "HTTP/1.1 101 Switching Protocols\\r\\nConnection: Upgrade\\r\\nUpgrade: echo\\r\\n\\r\\n"\nread -r msg\necho "echo $msg"\n' > /upgrade.sh
      chmod +x /upgrade.sh
      exec nc -ll -p 9000 -e /upgrade.sh
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: proxied-web}
  ports:
  - {port: 80, targetPort: http}
---
apiVersion: v1
kind: Service
metadata:
  name: web-named
spec:
  selector: {app: proxied-web}
  ports:
  - {name: web, port: 8080, targetPort: http}
---
apiVersion: v1
kind: Service
metadata:
  name: nobody
spec:
  selector: {app: nobody}
  ports:
  - {name: web, port: 80}
---
apiVersion: v1
kind: Service
metadata:
  name: external
spec:
  type: ExternalName
  externalName: example.com
`
	c.MustKubectl(t, fmt.Sprintf(objects, env.BusyboxImage), "apply", "-f", "-")
	t.Cleanup(func() {
		c.Kubectl(t, "", "delete", "pod/web", "service/web", "service/web-named", "service/nobody", "service/external", "--wait=true", "--timeout=60s")
	})
	waitPodRunning(t, c, "web")

	admin := c.Client
	pods := "/api/v1/namespaces/default/pods/"
	services := "/api/v1/namespaces/default/services/"
	nodes := "/api/v1/nodes/"

	t.Run("pods/proxy", func(t *testing.T) {
		// The pod's first declared port, a port number, a port name.
		for _, p := range []string{"web/proxy/", "web:8080/proxy/index.html", "http:web:http/proxy/"} {
			harness.WaitFor(t, 30*time.Second, "GET "+p, func() (bool, string) {
				code, body, _ := proxyDo(admin, "GET", pods+p, "")
				return code == 200 && body == "hello-from-web\n", fmt.Sprintf("%d %q", code, body)
			})
		}
		code, body, _ := proxyDo(admin, "POST", pods+"web:8080/proxy/cgi-bin/echo?a=1&b=2", "ping")
		if code != 200 || body != "POST a=1&b=2 ping\n" {
			t.Errorf("POST through pods/proxy: %d %q, want 200 %q", code, body, "POST a=1&b=2 ping\n")
		}
		// The root without a slash redirects to it (client-go follows).
		code, body, _ = proxyDo(admin, "GET", pods+"web/proxy", "")
		if code != 200 || body != "hello-from-web\n" {
			t.Errorf("GET pods/web/proxy (redirected): %d %q", code, body)
		}
		// Nothing listens on port 9: 503.
		code, _, err := proxyDo(admin, "GET", pods+"web:9/proxy/", "")
		if code != 503 || !strings.Contains(fmt.Sprint(err), "error trying to reach service") {
			t.Errorf("GET pods/web:9/proxy/: %d %v, want 503 error trying to reach service", code, err)
		}
		code, _, err = proxyDo(admin, "GET", pods+"web:nope/proxy/", "")
		if code != 503 || !strings.Contains(fmt.Sprint(err), `no such port "nope"`) {
			t.Errorf("GET pods/web:nope/proxy/: %d %v, want 503 no such port", code, err)
		}
		code, _, err = proxyDo(admin, "GET", pods+"missing/proxy/", "")
		if code != 404 || !apierrors.IsNotFound(err) {
			t.Errorf("GET pods/missing/proxy/: %d %v, want 404", code, err)
		}
	})

	t.Run("upgrade through pods/proxy", func(t *testing.T) {
		tlsCfg, err := rest.TLSConfigFor(c.Config)
		if err != nil {
			t.Fatal(err)
		}
		harness.WaitFor(t, 30*time.Second, "an upgraded stream through pods/web:9000/proxy", func() (bool, string) {
			conn, err := tls.Dial("tcp", c.Addr, tlsCfg)
			if err != nil {
				return false, err.Error()
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			fmt.Fprintf(conn, "GET %sweb:9000/proxy/stream HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n", pods, c.Addr)
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				return false, err.Error()
			}
			if resp.StatusCode != http.StatusSwitchingProtocols {
				return false, resp.Status
			}
			fmt.Fprint(conn, "hello\n")
			line, err := br.ReadString('\n')
			return line == "echo hello\n", fmt.Sprintf("read %q %v", line, err)
		})
	})

	t.Run("services/proxy", func(t *testing.T) {
		// The port by number (the unnamed port), by name, by number of a
		// named port.
		for _, p := range []string{"web/proxy/", "web:80/proxy/index.html", "http:web-named:web/proxy/", "web-named:8080/proxy/"} {
			harness.WaitFor(t, 60*time.Second, "GET "+p, func() (bool, string) {
				code, body, err := proxyDo(admin, "GET", services+p, "")
				return code == 200 && body == "hello-from-web\n", fmt.Sprintf("%d %q %v", code, body, err)
			})
		}
		// As upstream, no port means the unnamed one.
		code, _, err := proxyDo(admin, "GET", services+"web-named/proxy/", "")
		if code != 503 || !strings.Contains(fmt.Sprint(err), `no endpoints available for service "web-named"`) {
			t.Errorf("services/web-named/proxy/: %d %v", code, err)
		}
		code, body, _ := proxyDo(admin, "POST", services+"web-named:web/proxy/cgi-bin/echo?q=x", "pong")
		if code != 200 || body != "POST q=x pong\n" {
			t.Errorf("POST through services/proxy: %d %q", code, body)
		}
		code, _, err = proxyDo(admin, "GET", services+"web:81/proxy/", "")
		if code != 503 || !strings.Contains(fmt.Sprint(err), `no service port 81 found for service "web"`) {
			t.Errorf("services/web:81/proxy/: %d %v", code, err)
		}
		harness.WaitFor(t, 30*time.Second, "services/nobody/proxy/ 503", func() (bool, string) {
			code, _, err := proxyDo(admin, "GET", services+"nobody/proxy/", "")
			return code == 503 && strings.Contains(fmt.Sprint(err), `no endpoints available for service "nobody"`), fmt.Sprintf("%d %v", code, err)
		})
		code, _, err = proxyDo(admin, "GET", services+"external/proxy/", "")
		if code != 404 || !apierrors.IsNotFound(err) {
			t.Errorf("services/external/proxy/ (ExternalName): %d %v, want 404", code, err)
		}
	})

	t.Run("nodes/proxy", func(t *testing.T) {
		port := strconv.Itoa(c.KubeletPort)
		code, body, err := proxyDo(admin, "GET", nodes+c.Node+"/proxy/healthz", "")
		if code != 200 || body != "ok" {
			t.Errorf("nodes/proxy/healthz: %d %q %v", code, body, err)
		}
		code, body, err = proxyDo(admin, "GET", nodes+c.Node+":"+port+"/proxy/pods", "")
		if code != 200 || !strings.Contains(body, `"name":"web"`) {
			t.Errorf("nodes/NODE:PORT/proxy/pods: %d %.200q %v", code, body, err)
		}
		code, body, err = proxyDo(admin, "GET", nodes+c.Node+"/proxy/logs/", "")
		if code != 200 || !strings.Contains(body, "<pre>") {
			t.Errorf("nodes/proxy/logs/: %d %.200q %v", code, body, err)
		}
	})

	t.Run("authorization", func(t *testing.T) {
		alice := impersonating(t, c.Config, "alice")
		code, _, err := proxyDo(alice, "GET", pods+"web/proxy/", "")
		want := `pods "web" is forbidden: User "alice" cannot get resource "pods/proxy" in API group "" in the namespace "default"`
		if code != 403 || err == nil || err.Error() != want {
			t.Errorf("alice pods/proxy: %d %v, want 403 %q", code, err, want)
		}
		if code, _, _ := proxyDo(alice, "GET", services+"web/proxy/", ""); code != 403 {
			t.Errorf("alice services/proxy: %d, want 403", code)
		}
		if code, _, _ := proxyDo(alice, "GET", nodes+c.Node+"/proxy/healthz", ""); code != 403 {
			t.Errorf("alice nodes/proxy: %d, want 403", code)
		}
		node := impersonating(t, c.Config, "system:node:"+c.Node, "system:nodes")
		for _, p := range []string{pods + "web/proxy/", nodes + c.Node + "/proxy/healthz"} {
			if code, _, _ := proxyDo(node, "GET", p, ""); code != 403 {
				t.Errorf("node identity %s: %d, want 403", p, code)
			}
		}
		// A Role granting pods/proxy (create: POST) lets alice through.
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "proxy-pods"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods/proxy"}, Verbs: []string{"create"}}}}
		binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "proxy-pods"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "proxy-pods"},
			Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "alice"}}}
		if _, err := admin.RbacV1().Roles("default").Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.RbacV1().RoleBindings("default").Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		harness.WaitFor(t, 30*time.Second, "alice may POST pods/proxy", func() (bool, string) {
			code, body, err := proxyDo(alice, "POST", pods+"web:8080/proxy/cgi-bin/echo", "from-alice")
			return code == 200 && body == "POST  from-alice\n", fmt.Sprintf("%d %q %v", code, body, err)
		})
		if code, _, _ := proxyDo(alice, "GET", pods+"web/proxy/", ""); code != 403 {
			t.Errorf("alice GET pods/proxy with only create: %d, want 403", code)
		}
	})
}

// proxyDo sends method path (with body) through cs's REST client: the
// status code, the body and the error of a failed request (the Status the
// server answered, when it did).
func proxyDo(cs kubernetes.Interface, method, path, body string) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var code int
	path, query, _ := strings.Cut(path, "?")
	req := cs.CoreV1().RESTClient().Verb(method).AbsPath(path)
	for _, kv := range strings.Split(query, "&") {
		if k, v, _ := strings.Cut(kv, "="); k != "" {
			req = req.Param(k, v)
		}
	}
	if body != "" {
		req = req.Body([]byte(body))
	}
	raw, err := req.Do(ctx).StatusCode(&code).Raw()
	var st metav1.Status
	if err != nil && json.Unmarshal(raw, &st) == nil && st.Kind == "Status" {
		err = &apierrors.StatusError{ErrStatus: st}
	}
	return code, string(raw), err
}

// impersonating is a clientset acting as user in groups.
func impersonating(t *testing.T, cfg *rest.Config, user string, groups ...string) kubernetes.Interface {
	t.Helper()
	cc := rest.CopyConfig(cfg)
	cc.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	cs, err := kubernetes.NewForConfig(cc)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// bridgeGateway gives env's bridge its gateway address (the first address
// of the pod CIDR, as the bridge plugin would on the first pod), creating
// the bridge when no pod has yet; nodeenv removes the bridge at the end.
func bridgeGateway(t *testing.T, env *nodeenv.Env) string {
	t.Helper()
	prefix := netip.MustParsePrefix(env.PodCIDR).Masked()
	gw := prefix.Addr().Next()
	link, err := netlink.LinkByName(env.BridgeName)
	var notFound netlink.LinkNotFoundError
	if errors.As(err, &notFound) {
		if err := netlink.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: env.BridgeName}}); err != nil {
			t.Fatalf("create bridge %s: %v", env.BridgeName, err)
		}
		link, err = netlink.LinkByName(env.BridgeName)
	}
	if err != nil {
		t.Fatalf("bridge %s: %v", env.BridgeName, err)
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: gw.AsSlice(), Mask: net.CIDRMask(prefix.Bits(), 32)}}
	if err := netlink.AddrReplace(link, addr); err != nil {
		t.Fatalf("address %s on %s: %v", addr, env.BridgeName, err)
	}
	if err := netlink.LinkSetUp(link); err != nil {
		t.Fatalf("bridge %s up: %v", env.BridgeName, err)
	}
	return gw.String()
}
