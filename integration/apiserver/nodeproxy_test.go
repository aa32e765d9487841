package apiserver_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"berth/internal/testpki"

	"golang.org/x/net/websocket"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// fakeAgent is an HTTPS server standing in for a node agent's API, with a
// serving certificate from the cluster CA (as agents will get).
type fakeAgent struct {
	srv      *httptest.Server
	mu       sync.Mutex
	requests []string
	clientCN string
}

func startFakeAgent(t *testing.T, dataDir string) *fakeAgent {
	t.Helper()
	ca := testpki.LoadCA(t, dataDir)
	a := &fakeAgent{}
	a.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.requests = append(a.requests, r.URL.RequestURI())
		if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
			a.clientCN = r.TLS.VerifiedChains[0][0].Subject.CommonName
		}
		a.mu.Unlock()
		if strings.HasPrefix(r.URL.Path, "/containerLogs/") {
			if r.URL.Query().Get("previous") == "true" {
				http.Error(w, "previous terminated container not found", http.StatusBadRequest)
				return
			}
			fmt.Fprintf(w, "log line from %s\n", r.URL.Path)
			return
		}
		if strings.HasPrefix(r.URL.Path, "/exec/") && r.Header.Get("Upgrade") == "test-echo" {
			// A stand-in for SPDY/WebSocket: switch protocols, then echo.
			conn, brw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			defer conn.Close()
			fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: test-echo\r\n\r\n")
			_ = brw.Flush()
			buf := make([]byte, 64)
			n, _ := brw.Read(buf)
			_, _ = conn.Write(buf[:n])
			return
		}
		http.NotFound(w, r)
	}))
	a.srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{ca.Serving(t, "127.0.0.1")},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    ca.Pool(),
	}
	a.srv.StartTLS()
	t.Cleanup(a.srv.Close)
	return a
}

// podOnFakeNode creates a Node whose agent is a fakeAgent, and a pod
// "logger" in a new namespace, bound to it once it has been checked that
// logs of the unbound pod are refused.
func podOnFakeNode(t *testing.T) (*fakeAgent, string) {
	t.Helper()
	ctx := context.Background()
	agent := startFakeAgent(t, shared.Dir)
	_, portStr, _ := net.SplitHostPort(agent.srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)
	cs := shared.Client(t)
	nodeName := fmt.Sprintf("proxy-node-%d", time.Now().UnixNano()%100000)
	node, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), nodeName, metav1.DeleteOptions{}) })
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(port)
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	ns := newNamespace(t, shared)
	pods := cs.CoreV1().Pods(ns)
	if _, err := pods.Create(ctx, testPod("logger"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Not on a node yet: 400.
	if body, err := pods.GetLogs("logger", &corev1.PodLogOptions{}).DoRaw(ctx); !apierrors.IsBadRequest(err) || !strings.Contains(string(body), "does not have a host assigned") {
		t.Fatalf("logs of an unbound pod: %v %s, want 400", err, body)
	}
	if err := pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "logger"}, Target: corev1.ObjectReference{Kind: "Node", Name: nodeName}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return agent, ns
}

// TestPodLogsProxiedToNode: pods/log goes to the agent of the pod's node
// (address and port from the Node object), over TLS verified against the
// cluster CA, with the apiserver's client certificate.
func TestPodLogsProxiedToNode(t *testing.T) {
	ctx := context.Background()
	agent, ns := podOnFakeNode(t)
	pods := shared.Client(t).CoreV1().Pods(ns)
	out := shared.mustKubectl(t, "1.32", "", "-n", ns, "logs", "logger", "--tail=5")
	want := fmt.Sprintf("log line from /containerLogs/%s/logger/c", ns)
	if !strings.Contains(out, want) {
		t.Fatalf("kubectl logs: %q, want %q", out, want)
	}
	agent.mu.Lock()
	if len(agent.requests) != 1 || !strings.Contains(agent.requests[0], "tailLines=5") {
		t.Fatalf("agent got %v, want one request with tailLines=5", agent.requests)
	}
	if agent.clientCN != "kube-apiserver-kubelet-client" {
		t.Fatalf("apiserver's client certificate CN %q", agent.clientCN)
	}
	agent.mu.Unlock()
	// exec: the upgraded connection passes through the apiserver both ways.
	cfg := shared.RESTConfig(t)
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg.NextProtos = []string{"http/1.1"}
	conn, err := tls.Dial("tcp", shared.Addr, tlsCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /api/v1/namespaces/%s/pods/logger/exec?command=sh&stdin=true HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: test-echo\r\n\r\n", ns, shared.Addr)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("exec upgrade: %s", resp.Status)
	}
	if _, err := conn.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	echo := make([]byte, 4)
	if _, err := io.ReadFull(br, echo); err != nil || string(echo) != "ping" {
		t.Fatalf("echo through the upgraded connection: %q %v", echo, err)
	}
	agent.mu.Lock()
	last := agent.requests[len(agent.requests)-1]
	agent.mu.Unlock()
	if !strings.HasPrefix(last, "/exec/"+ns+"/logger/c?") || !strings.Contains(last, "command=sh") {
		t.Fatalf("agent got exec request %q", last)
	}

	// An unknown container is refused before reaching the node.
	if _, err := pods.GetLogs("logger", &corev1.PodLogOptions{Container: "nope"}).DoRaw(ctx); !apierrors.IsBadRequest(err) {
		t.Fatalf("logs of an unknown container: %v, want 400", err)
	}
}

// TestPodLogsOverWebSocket: pods/log asked over a WebSocket (upstream's e2e
// "should support retrieving logs from the container over websockets") is
// streamed by the apiserver in the binary.k8s.io and base64.binary.k8s.io
// protocols, the socket closed at the end of the log; an agent refusal
// comes back before the upgrade.
func TestPodLogsOverWebSocket(t *testing.T) {
	_, ns := podOnFakeNode(t)
	cfg := shared.RESTConfig(t)
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("log line from /containerLogs/%s/logger/c\n", ns)
	for _, tc := range []struct {
		protocol string
		decode   func([]byte) ([]byte, error)
	}{
		{"binary.k8s.io", func(b []byte) ([]byte, error) { return b, nil }},
		{"base64.binary.k8s.io", func(b []byte) ([]byte, error) { return base64.StdEncoding.DecodeString(string(b)) }},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			u := "wss://" + shared.Addr + "/api/v1/namespaces/" + ns + "/pods/logger/log?container=c"
			wsCfg, err := websocket.NewConfig(u, "http://localhost")
			if err != nil {
				t.Fatal(err)
			}
			wsCfg.TlsConfig = tlsCfg
			wsCfg.Protocol = []string{tc.protocol}
			if cfg.BearerToken != "" {
				wsCfg.Header = http.Header{"Authorization": {"Bearer " + cfg.BearerToken}}
			}
			ws, err := websocket.DialConfig(wsCfg)
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			if ws.Config().Protocol[0] != tc.protocol {
				t.Errorf("negotiated protocol %v", ws.Config().Protocol)
			}
			var got []byte
			for {
				var msg []byte
				err := websocket.Message.Receive(ws, &msg)
				if err == io.EOF {
					break
				} else if err != nil {
					t.Fatalf("receive: %v", err)
				}
				data, err := tc.decode(msg)
				if err != nil {
					t.Fatalf("message %q: %v", msg, err)
				}
				got = append(got, data...)
			}
			if string(got) != want {
				t.Fatalf("log over websocket %q, want %q", got, want)
			}
		})
	}

	// Refusals come before any upgrade: the agent's (no previous
	// container), and a subprotocol the apiserver does not speak.
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ query, protocol, want string }{
		{"previous=true", "binary.k8s.io", "previous terminated container"},
		{"", "v4.channel.k8s.io", "are not supported"},
	} {
		req, _ := http.NewRequest(http.MethodGet, cfg.Host+"/api/v1/namespaces/"+ns+"/pods/logger/log?container=c&"+tc.query, nil)
		req.Header = http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}, "Sec-Websocket-Version": {"13"},
			"Sec-Websocket-Key": {"dGhlIHNhbXBsZSBub25jZQ=="}, "Sec-Websocket-Protocol": {tc.protocol}}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), tc.want) {
			t.Fatalf("%s over websocket (%s): %s %s", tc.query, tc.protocol, resp.Status, body)
		}
	}
}
