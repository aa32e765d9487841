package bootstrap

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// apiserver answers discovery for certificates.k8s.io/v1 with resources
// (nil: 404) and counts the other requests.
func apiserver(t *testing.T, resources []metav1.APIResource, others *int) kubernetes.Interface {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/apis/certificates.k8s.io/v1" && resources != nil {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(&metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
				GroupVersion: "certificates.k8s.io/v1", APIResources: resources})
			return
		}
		*others++
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	c, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestServesCSRsFromDiscovery(t *testing.T) {
	var n int
	if ServesCSRs(apiserver(t, nil, &n)) {
		t.Error("ServesCSRs = true for an apiserver without certificates.k8s.io")
	}
	if !ServesCSRs(apiserver(t, []metav1.APIResource{{Name: "certificatesigningrequests", Kind: "CertificateSigningRequest"}}, &n)) {
		t.Error("ServesCSRs = false for an apiserver serving certificatesigningrequests")
	}
}

// A valid pair already in Dir is reused without asking the apiserver.
func TestObtainReusesAValidPair(t *testing.T) {
	dir := t.TempDir()
	_, caCert, caKey := writeCA(t, dir)
	pki := filepath.Join(dir, "pki")
	cert, key, err := IssueServingCert(ServingCert{CACertFile: caCert, CAKeyFile: caKey, NodeName: "node-a", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Dir: pki})
	if err != nil {
		t.Fatal(err)
	}
	// IssueServingCert writes kubelet.{crt,key}; Obtain looks for
	// kubelet-serving.{crt,key}.
	if err := renameAll(cert, filepath.Join(pki, "kubelet-serving.crt"), key, filepath.Join(pki, "kubelet-serving.key")); err != nil {
		t.Fatal(err)
	}
	var others int
	gotCert, _, err := Obtain(context.Background(), Request{Client: apiserver(t, nil, &others), NodeName: "node-a", Serving: true, Dir: pki})
	if err != nil {
		t.Fatal(err)
	}
	if gotCert != filepath.Join(pki, "kubelet-serving.crt") || others != 0 {
		t.Fatalf("Obtain = %s after %d apiserver requests, want the existing pair and none", gotCert, others)
	}
}

func renameAll(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if err := os.Rename(pairs[i], pairs[i+1]); err != nil {
			return err
		}
	}
	return nil
}
