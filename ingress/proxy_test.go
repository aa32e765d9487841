package ingress

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/ingress/ingresstest"
	"berth/ingress/routes"
)

// backend is an HTTP server on 127.0.0.1 answering "<name> <method> <path>"
// and echoing the request headers it got as "X-Got-<Header>".
func backend(t testing.TB, name string) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, h := range []string{"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"} {
			w.Header()["X-Got-"+h[2:]] = r.Header[h]
		}
		w.Header().Set("X-Got-Host", r.Host)
		fmt.Fprintf(w, "%s %s %s", name, r.Method, r.URL.RequestURI())
	}))
	t.Cleanup(s.Close)
	return s
}

// world is a snapshot with the berth class, and a Service per name whose
// one slice lists the given servers' addresses as ready endpoints of its
// port "http" (80).
type world struct{ in routes.Input }

func newWorld() *world {
	return &world{in: routes.Input{Controller: DefaultControllerName, Classes: []*networkingv1.IngressClass{{
		ObjectMeta: metav1.ObjectMeta{Name: "berth"}, Spec: networkingv1.IngressClassSpec{Controller: DefaultControllerName}}}}}
}

func (w *world) service(t testing.TB, name string, servers ...*httptest.Server) {
	t.Helper()
	w.in.Services = append(w.in.Services, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}})
	es := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4}
	var port int32
	for _, s := range servers {
		host, p, err := net.SplitHostPort(s.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(p)
		if port != 0 && int32(n) != port {
			t.Fatal("the servers of one service must share a port; use sharedPort")
		}
		port = int32(n)
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{host}})
	}
	httpName := "http"
	es.Ports = []discoveryv1.EndpointPort{{Name: &httpName, Port: &port}}
	w.in.Slices = append(w.in.Slices, es)
}

func (w *world) ingress(name string, spec networkingv1.IngressSpec) {
	class := "berth"
	spec.IngressClassName = &class
	w.in.Ingresses = append(w.in.Ingresses, &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: spec})
}

func prefixRule(host string, paths map[string]string) networkingv1.IngressRule {
	var ps []networkingv1.HTTPIngressPath
	prefix := networkingv1.PathTypePrefix
	for p, svc := range paths {
		ps = append(ps, networkingv1.HTTPIngressPath{Path: p, PathType: &prefix, Backend: networkingv1.IngressBackend{
			Service: &networkingv1.IngressServiceBackend{Name: svc, Port: networkingv1.ServiceBackendPort{Number: 80}}}})
	}
	return networkingv1.IngressRule{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: ps}}}
}

// serve runs the proxy on 127.0.0.1 over the table in *cur.
func serve(t testing.TB, cur *atomic.Pointer[routes.Table]) string {
	t.Helper()
	s := httptest.NewServer(newProxy(cur.Load, slog.New(slog.DiscardHandler)))
	t.Cleanup(s.Close)
	return s.URL
}

func get(t *testing.T, url, host string, header http.Header) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header
}

func TestProxyRoutesByHostAndPath(t *testing.T) {
	w := newWorld()
	w.service(t, "web", backend(t, "web"))
	w.service(t, "api", backend(t, "api"))
	w.service(t, "empty")
	w.ingress("site", networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{
		prefixRule("web.example", map[string]string{"/": "web", "/api": "api", "/down": "empty", "/gone": "missing"}),
	}})
	var cur atomic.Pointer[routes.Table]
	cur.Store(routes.Build(w.in))
	url := serve(t, &cur)
	for _, tc := range []struct {
		host, path string
		code       int
		body       string
	}{
		{"web.example", "/", 200, "web GET /"},
		{"web.example:8080", "/index.html?q=1", 200, "web GET /index.html?q=1"},
		{"web.example", "/api/v1", 200, "api GET /api/v1"},
		{"web.example", "/apis", 200, "web GET /apis"},
		{"web.example", "/public/../api/x", 200, "api GET /api/x"}, // routed and forwarded as cleaned
		{"other.example", "/", 404, "404 page not found\n"},
		{"web.example", "/down", 503, "Service Unavailable\n"},
		{"web.example", "/gone", 503, "Service Unavailable\n"},
	} {
		code, body, _ := get(t, url+tc.path, tc.host, nil)
		if code != tc.code || body != tc.body {
			t.Errorf("%s%s: %d %q, want %d %q", tc.host, tc.path, code, body, tc.code, tc.body)
		}
	}
}

func TestProxyForwardedHeaders(t *testing.T) {
	w := newWorld()
	w.service(t, "web", backend(t, "web"))
	w.ingress("site", networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{prefixRule("web.example", map[string]string{"/": "web"})}})
	var cur atomic.Pointer[routes.Table]
	cur.Store(routes.Build(w.in))
	url := serve(t, &cur)
	// Headers a client sends itself are replaced, not trusted.
	_, _, h := get(t, url+"/", "web.example:8080", http.Header{"X-Forwarded-For": {"6.6.6.6"}, "X-Forwarded-Proto": {"https"}, "X-Forwarded-Host": {"evil"}})
	if got := h.Get("X-Got-Forwarded-For"); got != "127.0.0.1" {
		t.Errorf("X-Forwarded-For = %q, want the client's address only", got)
	}
	if got := h.Get("X-Got-Forwarded-Proto"); got != "http" {
		t.Errorf("X-Forwarded-Proto = %q", got)
	}
	if got := h.Get("X-Got-Forwarded-Host"); got != "web.example:8080" {
		t.Errorf("X-Forwarded-Host = %q", got)
	}
	if got := h.Get("X-Got-Host"); got != "web.example:8080" {
		t.Errorf("Host at the backend = %q, want the client's", got)
	}
}

// sharedPort starts n backends on one port, each on its own loopback
// address (127.0.0.2, .3, ...), as a Service's pods share a target port.
func sharedPort(t *testing.T, n int) []*httptest.Server {
	t.Helper()
	first, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(first.Addr().String())
	var out []*httptest.Server
	for i := range n {
		ln := first
		if i > 0 {
			if ln, err = net.Listen("tcp", fmt.Sprintf("127.0.0.%d:%s", i+2, port)); err != nil {
				t.Fatal(err)
			}
		}
		s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "replica-%d", i)
		}))
		s.Listener.Close()
		s.Listener = ln
		s.Start()
		t.Cleanup(s.Close)
		out = append(out, s)
	}
	return out
}

func TestProxyRoundRobin(t *testing.T) {
	w := newWorld()
	w.service(t, "web", sharedPort(t, 3)...)
	w.ingress("site", networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{prefixRule("", map[string]string{"/": "web"})}})
	var cur atomic.Pointer[routes.Table]
	cur.Store(routes.Build(w.in))
	url := serve(t, &cur)
	counts := map[string]int{}
	for range 9 {
		_, body, _ := get(t, url+"/", "any.example", nil)
		counts[body]++
	}
	if len(counts) != 3 || counts["replica-0"] != 3 || counts["replica-1"] != 3 || counts["replica-2"] != 3 {
		t.Fatalf("answers %v, want each of 3 replicas 3 times", counts)
	}
}

func TestProxyBadGateway(t *testing.T) {
	dead := backend(t, "dead")
	w := newWorld()
	w.service(t, "web", dead)
	dead.Close()
	w.ingress("site", networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{prefixRule("", map[string]string{"/": "web"})}})
	var cur atomic.Pointer[routes.Table]
	cur.Store(routes.Build(w.in))
	if code, _, _ := get(t, serve(t, &cur)+"/", "x", nil); code != http.StatusBadGateway {
		t.Fatalf("an endpoint that refuses: %d, want 502", code)
	}
}

// upgradeBackend answers an "Upgrade: echo" request with 101 and then
// echoes lines back, prefixed with its name.
func upgradeBackend(t *testing.T, name string) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "echo" {
			http.Error(w, "upgrade required", http.StatusUpgradeRequired)
			return
		}
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprint(rw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		rw.Flush()
		for {
			line, err := rw.ReadString('\n')
			if err != nil {
				return
			}
			fmt.Fprintf(rw, "%s: %s", name, line)
			rw.Flush()
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// upgrade opens an upgraded connection through the proxy at addr.
func upgrade(t *testing.T, addr, host string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "GET /chat HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n", host)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %s", resp.Status)
	}
	return conn, br
}

func echo(t *testing.T, conn net.Conn, br *bufio.Reader, msg string) string {
	t.Helper()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(conn, msg)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("echo %q: %v", msg, err)
	}
	return strings.TrimSpace(line)
}

// TestReloadKeepsConnections: swapping the table (here: the route moved to
// another Service) leaves an upgraded connection open to its old backend,
// new requests take the new route, and requests sent while tables are
// swapped continuously all succeed.
func TestReloadKeepsConnections(t *testing.T) {
	w := newWorld()
	w.service(t, "old", upgradeBackend(t, "old"))
	w.service(t, "new", upgradeBackend(t, "new"))
	w.ingress("chat", networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{prefixRule("chat.example", map[string]string{"/": "old"})}})
	before := routes.Build(w.in)
	w.in.Ingresses[0].Spec.Rules = []networkingv1.IngressRule{prefixRule("chat.example", map[string]string{"/": "new"})}
	after := routes.Build(w.in)

	var cur atomic.Pointer[routes.Table]
	cur.Store(before)
	addr := strings.TrimPrefix(serve(t, &cur), "http://")
	conn, br := upgrade(t, addr, "chat.example")
	if got := echo(t, conn, br, "hello"); got != "old: hello" {
		t.Fatalf("before the swap: %q", got)
	}
	cur.Store(after)
	if got := echo(t, conn, br, "still there"); got != "old: still there" {
		t.Fatalf("the open connection after the swap: %q", got)
	}
	conn2, br2 := upgrade(t, addr, "chat.example")
	if got := echo(t, conn2, br2, "hi"); got != "new: hi" {
		t.Fatalf("a new connection after the swap: %q", got)
	}

	// Requests while the table flips between the two, on kept-alive
	// connections: none fails.
	stop := make(chan struct{})
	var flips sync.WaitGroup
	flips.Add(1)
	go func() {
		defer flips.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i%2 == 0 {
				cur.Store(before)
			} else {
				cur.Store(after)
			}
		}
	}()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	for i := range 200 {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
		req.Host = "chat.example"
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("request %d during reloads: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUpgradeRequired { // the backends' answer to a plain GET
			t.Fatalf("request %d during reloads: %s", i, resp.Status)
		}
	}
	close(stop)
	flips.Wait()
}

// TestTLSBySNI: the certificate of the Ingress's TLS Secret for its host,
// the default certificate for other names; X-Forwarded-Proto https.
func TestTLSBySNI(t *testing.T) {
	crt, key := ingresstest.SelfSigned(t, "secure.example")
	w := newWorld()
	w.service(t, "web", backend(t, "web"))
	w.ingress("secure", networkingv1.IngressSpec{
		Rules: []networkingv1.IngressRule{prefixRule("secure.example", map[string]string{"/": "web"})},
		TLS:   []networkingv1.IngressTLS{{Hosts: []string{"secure.example"}, SecretName: "secure-tls"}},
	})
	w.in.Secrets = []*corev1.Secret{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "secure-tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: crt, corev1.TLSPrivateKeyKey: key}}}
	def, err := newDefaultCertificate(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	c := &Controller{defaultCert: def}
	c.table.Store(routes.Build(w.in))
	s := httptest.NewUnstartedServer(newProxy(c.Table, slog.New(slog.DiscardHandler)))
	s.TLS = &tls.Config{GetCertificate: c.certificate}
	s.StartTLS()
	t.Cleanup(s.Close)

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(crt)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "secure.example"}}}
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/x", nil)
	req.Host = "secure.example"
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("verified TLS to secure.example: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "web GET /x" || resp.Header.Get("X-Got-Forwarded-Proto") != "https" {
		t.Fatalf("over TLS: %q, X-Forwarded-Proto %q", body, resp.Header.Get("X-Got-Forwarded-Proto"))
	}

	conn, err := tls.Dial("tcp", s.Listener.Addr().String(), &tls.Config{ServerName: "other.example", InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if cn := conn.ConnectionState().PeerCertificates[0].Subject.CommonName; cn != DefaultCertificateName {
		t.Fatalf("certificate for another name: %q, want the default", cn)
	}
}
