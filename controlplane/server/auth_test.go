package server

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"berth/controlplane/authentication"
)

// A new join token's secret is created with its expiry (repaired or
// replaced when someone changed it); an earlier token's secret is left
// alone — once expired or deleted, it is not brought back.
func TestAgentTokenSecret(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	const tok = "abcdef.0123456789abcdef"
	expires := time.Now().Add(DefaultAgentTokenTTL).Truncate(time.Second)
	a := &serverAuth{client: client, agentToken: tok, agentTokenExpires: &expires, log: slog.New(slog.DiscardHandler)}
	if err := a.ensureAgentTokenSecret(); err != nil {
		t.Fatal(err)
	}
	secrets := client.CoreV1().Secrets("kube-system")
	s, err := secrets.Get(ctx, "bootstrap-token-abcdef", metav1.GetOptions{})
	if err != nil || s.Type != authentication.BootstrapTokenSecretType || string(s.Data["token-secret"]) != "0123456789abcdef" ||
		string(s.Data["usage-bootstrap-authentication"]) != "true" || string(s.Data["expiration"]) != expires.UTC().Format(time.RFC3339) {
		t.Fatalf("secret %+v %v, want one expiring at %s", s, err, expires)
	}
	s.Data["token-secret"] = []byte("ffffffffffffffff")
	if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := a.ensureAgentTokenSecret(); err != nil {
		t.Fatal(err)
	}
	s, _ = secrets.Get(ctx, "bootstrap-token-abcdef", metav1.GetOptions{})
	if string(s.Data["token-secret"]) != "0123456789abcdef" {
		t.Fatalf("tampered secret not repaired: %v", s.Data)
	}
	// A secret of another type under the name is replaced.
	if err := secrets.Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: "kube-system"}, Type: corev1.SecretTypeOpaque}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := a.ensureAgentTokenSecret(); err != nil {
		t.Fatal(err)
	}
	s, _ = secrets.Get(ctx, "bootstrap-token-abcdef", metav1.GetOptions{})
	if s.Type != authentication.BootstrapTokenSecretType {
		t.Fatalf("secret type %q, want the bootstrap token type", s.Type)
	}

	// A later start: the token is not new. Deleted, it stays deleted.
	later := &serverAuth{client: client, agentToken: tok, log: slog.New(slog.DiscardHandler)}
	if err := secrets.Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := later.ensureAgentTokenSecret(); err != nil {
		t.Fatal(err)
	}
	if _, err := secrets.Get(ctx, s.Name, metav1.GetOptions{}); err == nil {
		t.Fatal("a deleted join token's secret was brought back on a later start")
	}
}

func TestValidateAuth(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("tok,alice\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := Config{DataDir: dir, TokenAuthFile: bad}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "--token-auth-file") || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("bad token file: %v, want an error naming the flag and the line", err)
	}
	good := filepath.Join(dir, "good.csv")
	if err := os.WriteFile(good, []byte("tok,alice,uid\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg = Config{DataDir: dir, TokenAuthFile: good}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.AgentTokenTTL != 24*time.Hour {
		t.Fatalf("AgentTokenTTL defaults to %s, want 24h", cfg.AgentTokenTTL)
	}
	cfg = Config{DataDir: dir, AgentTokenTTL: -time.Hour}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "--token-ttl") {
		t.Fatalf("negative token TTL: %v, want an error naming --token-ttl", err)
	}
}

func TestSlimPodKeepsWhatTheGraphReads(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u", ResourceVersion: "7",
			Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}},
		Spec:   corev1.PodSpec{NodeName: "n1", ServiceAccountName: "sa", Volumes: []corev1.Volume{{Name: "v"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	out, err := slimPod(pod)
	if err != nil {
		t.Fatal(err)
	}
	slim := out.(*corev1.Pod)
	if slim.Name != "p" || slim.Namespace != "ns" || slim.UID != "u" || slim.ResourceVersion != "7" ||
		slim.Spec.NodeName != "n1" || slim.Spec.ServiceAccountName != "sa" || len(slim.Spec.Volumes) != 1 {
		t.Fatalf("slim pod lost what the graph needs: %+v", slim)
	}
	if slim.Labels != nil || slim.Annotations != nil || slim.ManagedFields != nil || slim.Status.Phase != "" {
		t.Fatalf("slim pod kept more than needed: %+v", slim)
	}
	if pod.Labels == nil || pod.Status.Phase != corev1.PodRunning {
		t.Fatal("slimPod modified its input")
	}
	// Tombstones and other objects pass through.
	if o, _ := slimPod("x"); o != "x" {
		t.Fatalf("non-pod changed: %v", o)
	}
}
