package bootstrap

import (
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/keyutil"
	clocktesting "k8s.io/utils/clock/testing"

	"berth/controlplane/controller/certificates"
)

func TestRotationDeadlineIsBetween70And84PercentOfTheLifetime(t *testing.T) {
	nb := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	na := nb.Add(100 * time.Hour)
	for _, tc := range []struct {
		jitter float64
		want   time.Duration
	}{
		{0, 70 * time.Hour},
		{0.5, 77 * time.Hour},
		{0.999999, 84 * time.Hour},
	} {
		got := RotationDeadline(nb, na, tc.jitter).Sub(nb)
		if d := got - tc.want; d < -time.Second || d > time.Second {
			t.Errorf("RotationDeadline(jitter %v) = notBefore+%v, want +%v", tc.jitter, got, tc.want)
		}
	}
}

// csrServer is an apiserver over TLS serving the CSR API the way berth's
// does for node certificates: a created CSR is approved and signed at once
// by the cluster CA (controlplane/controller/certificates.Signer, honouring
// spec.expirationSeconds) at the fake clock's time. It records, for each
// CSR, the serial of the client certificate that created it ("" for none)
// and, for every request, the client certificate's serial.
type csrServer struct {
	t      *testing.T
	clock  *clocktesting.FakeClock
	signer certificates.Signer
	srv    *httptest.Server

	mu         sync.Mutex
	csrs       map[string]*certificatesv1.CertificateSigningRequest
	requesters []string // per created CSR
	seen       []string // per request
	failNext   int      // creations to refuse with 500
}

func newCSRServer(t *testing.T, clk *clocktesting.FakeClock) *csrServer {
	t.Helper()
	ca, _, caKeyFile := writeCA(t, t.TempDir())
	keyAny, err := keyutil.PrivateKeyFromFile(caKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	s := &csrServer{t: t, clock: clk, signer: certificates.Signer{CA: ca, Key: keyAny.(crypto.Signer)}, csrs: map[string]*certificatesv1.CertificateSigningRequest{}}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	// Client certificates are checked against the CA at the fake clock's
	// time (the certificates are issued at it).
	s.srv.TLS = &tls.Config{ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: pool, Time: clk.Now}
	s.srv.StartTLS()
	t.Cleanup(s.srv.Close)
	return s
}

// base is the rest.Config of a client trusting the server, with no
// credential, speaking JSON.
func (s *csrServer) base() *rest.Config {
	return &rest.Config{Host: s.srv.URL, ContentConfig: rest.ContentConfig{ContentType: "application/json", AcceptContentTypes: "application/json"}, TLSClientConfig: rest.TLSClientConfig{
		CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.srv.Certificate().Raw})}}
}

func (s *csrServer) caPool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(s.signer.CA)
	return pool
}

func serialOf(r *http.Request) string {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return ""
	}
	return r.TLS.PeerCertificates[0].SerialNumber.Text(16)
}

func (s *csrServer) serve(w http.ResponseWriter, r *http.Request) {
	const path = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
	s.mu.Lock()
	s.seen = append(s.seen, serialOf(r))
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodPost && r.URL.Path == path:
		s.create(w, r)
	case r.Method == http.MethodGet && r.URL.Path == path && r.URL.Query().Get("watch") == "true":
		// A watch-list (sendInitialEvents) gets the matching CSRs and the
		// bookmark ending the initial events; nothing changes after
		// creation, so the watch is then held open.
		w.WriteHeader(http.StatusOK)
		enc := json.NewEncoder(w)
		if r.URL.Query().Get("sendInitialEvents") == "true" {
			for _, c := range s.matching(r) {
				_ = enc.Encode(map[string]any{"type": "ADDED", "object": c})
			}
			_ = enc.Encode(map[string]any{"type": "BOOKMARK", "object": &certificatesv1.CertificateSigningRequest{
				TypeMeta:   metav1.TypeMeta{Kind: "CertificateSigningRequest", APIVersion: "certificates.k8s.io/v1"},
				ObjectMeta: metav1.ObjectMeta{ResourceVersion: "10", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}})
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	case r.Method == http.MethodGet && r.URL.Path == path:
		list := &certificatesv1.CertificateSigningRequestList{TypeMeta: metav1.TypeMeta{Kind: "CertificateSigningRequestList", APIVersion: "certificates.k8s.io/v1"},
			ListMeta: metav1.ListMeta{ResourceVersion: "10"}}
		for _, c := range s.matching(r) {
			list.Items = append(list.Items, *c)
		}
		_ = json.NewEncoder(w).Encode(list)
	default:
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(&metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
			Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound, Message: r.Method + " " + r.URL.Path})
	}
}

// matching are the CSRs the request's field selector (metadata.name=…)
// selects.
func (s *csrServer) matching(r *http.Request) []*certificatesv1.CertificateSigningRequest {
	name := strings.TrimPrefix(r.URL.Query().Get("fieldSelector"), "metadata.name=")
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*certificatesv1.CertificateSigningRequest
	for n, c := range s.csrs {
		if name == "" || n == name {
			out = append(out, c)
		}
	}
	return out
}

func (s *csrServer) create(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failNext > 0 {
		s.failNext--
		w.WriteHeader(http.StatusInternalServerError)
		_ = json.NewEncoder(w).Encode(&metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
			Code: http.StatusInternalServerError, Reason: metav1.StatusReasonInternalError, Message: "etcd is down"})
		return
	}
	var c certificatesv1.CertificateSigningRequest
	if err := json.NewDecoder(r.Body).Decode(&c); err != nil {
		s.t.Errorf("CSR body: %v", err)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	block, _ := pem.Decode(c.Spec.Request)
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		s.t.Errorf("CSR request: %v", err)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	certPEM, err := s.signer.Sign(req, c.Spec.Usages, c.Spec.ExpirationSeconds, s.clock.Now())
	if err != nil {
		s.t.Errorf("sign: %v", err)
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	c.TypeMeta = metav1.TypeMeta{Kind: "CertificateSigningRequest", APIVersion: "certificates.k8s.io/v1"}
	c.Name = fmt.Sprintf("csr-%d", len(s.csrs)+1)
	c.UID = types.UID(c.Name + "-uid")
	c.ResourceVersion = "10"
	c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: "True", Reason: "AutoApproved"}}
	c.Status.Certificate = certPEM
	s.csrs[c.Name] = &c
	s.requesters = append(s.requesters, serialOf(r))
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(&c)
}

func (s *csrServer) snapshot() (requesters, seen []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requesters...), append([]string(nil), s.seen...)
}

// poll waits for cond, failing after 10 s.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func serial(c *tls.Certificate) string { return c.Leaf.SerialNumber.Text(16) }

// The node's client certificate is renewed at its deadline by the node
// itself (the renewal authenticates with the old certificate), the old one
// stays in use while the renewal fails, and once renewed the client
// presents the new certificate on its next request without a restart.
func TestClientCertificateIsRenewedBeforeExpiry(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	srv := newCSRServer(t, clk)
	dir := t.TempDir()
	anonymous, err := kubernetes.NewForConfig(srv.base())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Bootstrap: the join-token identity (here: no client certificate)
	// gets the first certificate, asking for 10 minutes.
	if _, _, err := Obtain(ctx, Request{Client: anonymous, NodeName: "node-a", Dir: dir, Expiration: 10 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	rot, nodeCfg, err := NewClientRotator(srv.base(), RotatorConfig{
		Request: Request{NodeName: "node-a", Dir: dir, Expiration: 10 * time.Minute},
		Clock:   clk, Jitter: func() float64 { return 0 },
	})
	if err != nil {
		t.Fatal(err)
	}
	first := rot.Current()
	// (Certificates carry whole seconds.)
	if life := first.Leaf.NotAfter.Sub(clk.Now()); life <= 10*time.Minute-time.Second || life > 10*time.Minute {
		t.Fatalf("first certificate valid for %v more, want the 10 minutes asked for", life)
	}
	node, err := kubernetes.NewForConfig(nodeCfg)
	if err != nil {
		t.Fatal(err)
	}
	list := func() {
		t.Helper()
		if _, err := node.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	list()
	if _, seen := srv.snapshot(); seen[len(seen)-1] != serial(first) {
		t.Fatalf("the node client presented %q, want its certificate %s", seen[len(seen)-1], serial(first))
	}
	done := make(chan error, 1)
	go func() { done <- rot.Run(ctx) }()

	// Lifetime: notBefore (issued −5 min backdated) to +10 min = 15 min;
	// jitter 0 renews at 70 %: 10.5 min after notBefore, 5.5 min from now.
	want := RotationDeadline(first.Leaf.NotBefore, first.Leaf.NotAfter, 0)
	if d := want.Sub(clk.Now()); d <= 5*time.Minute+29*time.Second || d > 5*time.Minute+30*time.Second {
		t.Fatalf("deadline in %v, want 5m30s", d)
	}
	srv.mu.Lock()
	srv.failNext = 1
	srv.mu.Unlock()
	poll(t, "the rotator waiting for its deadline", clk.HasWaiters)
	clk.Step(5 * time.Minute)
	if rot.Current() != first {
		t.Fatal("renewed before the deadline")
	}
	poll(t, "the rotator waiting again", clk.HasWaiters)
	changed := rot.Changed()
	clk.Step(30 * time.Second)
	// The first renewal fails (500): the old certificate stays, and the
	// renewal is retried 2 s later.
	poll(t, "the failed renewal and its retry timer", func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return srv.failNext == 0 && clk.HasWaiters()
	})
	if rot.Current() != first {
		t.Fatal("the certificate changed although its renewal failed")
	}
	clk.Step(2 * time.Second)
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no rotation after the retry")
	}
	second := rot.Current()
	if serial(second) == serial(first) || second.Leaf.Subject.CommonName != "system:node:node-a" || !second.Leaf.NotAfter.After(first.Leaf.NotAfter) {
		t.Fatalf("renewed certificate %s (CN %s, until %v), want a new one for system:node:node-a outliving %v",
			serial(second), second.Leaf.Subject.CommonName, second.Leaf.NotAfter, first.Leaf.NotAfter)
	}
	requesters, _ := srv.snapshot()
	if len(requesters) != 2 || requesters[0] != "" || requesters[1] != serial(first) {
		t.Fatalf("CSR requesters %q, want the bootstrap identity, then the node with its old certificate %s", requesters, serial(first))
	}
	// The same client now presents the new certificate.
	list()
	if _, seen := srv.snapshot(); seen[len(seen)-1] != serial(second) {
		t.Fatalf("after rotation the node client presented %q, want %s", seen[len(seen)-1], serial(second))
	}
	// The renewed pair is on disk for the next start.
	certFile, keyFile := Request{NodeName: "node-a", Dir: dir}.Files()
	onDisk, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if leaf, _ := x509.ParseCertificate(onDisk.Certificate[0]); leaf.SerialNumber.Text(16) != serial(second) {
		t.Errorf("the files hold %s, want the renewed %s", leaf.SerialNumber.Text(16), serial(second))
	}
	if _, err := os.Stat(certFile + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("a temporary file is left behind: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// The agent API's serving certificate is renewed the same way, and a TLS
// server taking it from GetCertificate serves the new one on the next
// handshake.
func TestServingCertificateIsRenewedAndServedWithoutRestart(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	srv := newCSRServer(t, clk)
	dir := t.TempDir()
	client, err := kubernetes.NewForConfig(srv.base())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := Request{Client: client, NodeName: "node-a", Serving: true, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Dir: dir, Expiration: 20 * time.Minute}
	if _, _, err := Obtain(ctx, req); err != nil {
		t.Fatal(err)
	}
	rot, err := NewRotator(RotatorConfig{Request: req, Clock: clk, Jitter: func() float64 { return 0.5 }})
	if err != nil {
		t.Fatal(err)
	}
	agentAPI := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	agentAPI.TLS = &tls.Config{GetCertificate: rot.GetCertificate}
	agentAPI.StartTLS()
	defer agentAPI.Close()
	served := func() string {
		t.Helper()
		conn, err := tls.Dial("tcp", agentAPI.Listener.Addr().String(), &tls.Config{RootCAs: srv.caPool(), ServerName: "node-a", Time: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.Text(16)
	}
	first := rot.Current()
	if got := served(); got != serial(first) {
		t.Fatalf("served %s, want %s", got, serial(first))
	}
	go func() { _ = rot.Run(ctx) }()
	poll(t, "the rotator waiting for its deadline", clk.HasWaiters)
	changed := rot.Changed()
	// Lifetime 25 min (5 backdated); jitter 0.5: 77 % = 19.25 min after
	// notBefore, 14.25 min from now.
	clk.Step(14*time.Minute + 15*time.Second)
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no rotation at the deadline")
	}
	second := rot.Current()
	if serial(second) == serial(first) || len(second.Leaf.IPAddresses) != 1 || second.Leaf.DNSNames[0] != "node-a" {
		t.Fatalf("renewed serving certificate %s (IPs %v, DNS %v)", serial(second), second.Leaf.IPAddresses, second.Leaf.DNSNames)
	}
	if got := served(); got != serial(second) {
		t.Fatalf("after rotation served %s, want %s", got, serial(second))
	}
}

func TestRotatorConfigErrors(t *testing.T) {
	if _, err := NewRotator(RotatorConfig{Request: Request{NodeName: "n", Dir: t.TempDir()}}); err == nil || !strings.Contains(err.Error(), "Client") {
		t.Errorf("NewRotator without Client = %v, want an error naming Client", err)
	}
	if _, _, err := NewClientRotator(&rest.Config{}, RotatorConfig{Request: Request{NodeName: "n", Dir: t.TempDir()}}); err == nil {
		t.Error("NewClientRotator without a certificate on disk succeeded")
	}
	if _, _, err := NewClientRotator(&rest.Config{}, RotatorConfig{Request: Request{NodeName: "n", Dir: t.TempDir(), Serving: true}}); err == nil {
		t.Error("NewClientRotator for a serving certificate succeeded")
	}
}
