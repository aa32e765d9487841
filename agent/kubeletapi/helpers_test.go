package kubeletapi_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"berth/agent/kubeletapi"
	"berth/cri"
	"berth/cri/critest"
	"berth/internal/testpki"
)

// harness is a running Server with a critest runtime behind it.
type harness struct {
	t         *testing.T
	ca        *testpki.CA
	rt        *critest.Server
	client    *cri.Client
	url       string
	rootDir   string
	logDir    string
	serverCAs *x509.CertPool

	mu   sync.Mutex
	pods []v1.Pod
}

type harnessOption func(*kubeletapi.Config)

func newHarness(t *testing.T, opts ...harnessOption) *harness {
	t.Helper()
	h := &harness{t: t, ca: testpki.NewCA(t, "cluster-ca"), rt: critest.NewServer(t), rootDir: t.TempDir(), logDir: t.TempDir()}
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, h.ca.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	client, err := cri.New(ctx, cri.Config{Endpoint: h.rt.Endpoint()})
	if err != nil {
		t.Fatal(err)
	}
	h.client = client
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := kubeletapi.Config{
		Listener:     ln,
		RootDir:      h.rootDir,
		NodeName:     "node-a",
		Addresses:    []net.IP{net.IPv4(127, 0, 0, 1)},
		ClientCAFile: caFile,
		Pods: func() []v1.Pod {
			h.mu.Lock()
			defer h.mu.Unlock()
			return append([]v1.Pod(nil), h.pods...)
		},
		Authorizer:      authorizer.AuthorizerFunc(allowAll),
		Locator:         kubeletapi.CRILocator{Runtime: client},
		Runtime:         client,
		PodLogDir:       h.logDir,
		LogPollInterval: 10 * time.Millisecond,
	}
	for _, o := range opts {
		o(&cfg)
	}
	h.rootDir = cfg.RootDir
	srv, err := kubeletapi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		client.Close()
	})
	h.url = "https://" + ln.Addr().String()
	crt, err := os.ReadFile(filepath.Join(h.rootDir, "pki", "kubelet.crt"))
	if err != nil {
		t.Fatalf("generated serving certificate: %v", err)
	}
	h.serverCAs = x509.NewCertPool()
	if !h.serverCAs.AppendCertsFromPEM(crt) {
		t.Fatal("kubelet.crt holds no certificate")
	}
	return h
}

// httpClient is an HTTPS client presenting certs (none: anonymous).
func (h *harness) httpClient(certs ...tls.Certificate) *http.Client {
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: h.serverCAs, Certificates: certs, ServerName: "node-a",
	}}}
}

// get fetches path as an admin and returns status and body.
func (h *harness) get(path string) (int, string) {
	h.t.Helper()
	return h.getAs(h.httpClient(h.ca.Client(h.t, "admin", "system:masters")), path)
}

func (h *harness) getAs(c *http.Client, path string) (int, string) {
	h.t.Helper()
	resp, err := c.Get(h.url + path)
	if err != nil {
		h.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("GET %s: read body: %v", path, err)
	}
	return resp.StatusCode, string(b)
}

func (h *harness) setPods(pods ...v1.Pod) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pods = pods
}

// newHarnessRuntime is a CRI client on a fresh fake runtime.
func newHarnessRuntime(t *testing.T) *cri.Client {
	t.Helper()
	rt := critest.NewServer(t)
	c, err := cri.New(context.Background(), cri.Config{Endpoint: rt.Endpoint()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// allowAll is the harness's default authorizer.
func allowAll(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionAllow, "", nil
}

// getWithToken fetches path with a bearer token.
func (h *harness) getWithToken(c *http.Client, path, token string) (int, string) {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodGet, h.url+path, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		h.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("GET %s: read body: %v", path, err)
	}
	return resp.StatusCode, string(b)
}

// pemOf is a DER certificate in PEM.
func pemOf(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
