package up

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/internal/errdefs"
)

// nodeAPI serves GET /api/v1/nodes/NAME over HTTP as the apiserver does:
// the node when known, a 404 Status otherwise. It returns a kubeconfig
// pointing at it.
func nodeAPI(t *testing.T, nodes ...*corev1.Node) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		name := strings.TrimPrefix(r.URL.Path, "/api/v1/nodes/")
		for _, n := range nodes {
			if r.Method == http.MethodGet && n.Name == name {
				n.APIVersion, n.Kind = "v1", "Node"
				_ = json.NewEncoder(w).Encode(n)
				return
			}
		}
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
			Status: metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound,
			Message: fmt.Sprintf("nodes %q not found", name), Details: &metav1.StatusDetails{Name: name, Kind: "nodes"}})
	}))
	t.Cleanup(srv.Close)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	content := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, srv.URL)
	if err := os.WriteFile(kubeconfig, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}

func TestCheckNodePodCIDR(t *testing.T) {
	node := func(name, cidr string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{PodCIDR: cidr}}
	}
	kubeconfig := nodeAPI(t, node("same", "10.42.0.0/24"), node("fresh", ""), node("other", "10.43.0.0/24"))
	ctx := context.Background()
	for _, name := range []string{"absent", "same", "fresh"} {
		if err := checkNodePodCIDR(ctx, kubeconfig, name, "10.42.0.0/24"); err != nil {
			t.Errorf("node %s: %v, want nil", name, err)
		}
	}
	err := checkNodePodCIDR(ctx, kubeconfig, "other", "10.42.0.0/24")
	if !errors.Is(err, errdefs.ErrConflict) {
		t.Fatalf("node with another pod CIDR: %v, want ErrConflict", err)
	}
	for _, want := range []string{"--pod-cidr", "10.43.0.0/24", "kubectl delete node other"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}
