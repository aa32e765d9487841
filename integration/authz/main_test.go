// Package authz drives `berth server`'s authentication and authorization
// from outside, as a process: client certificates signed by the cluster CA
// in the data dir, static tokens (--token-auth-file), bootstrap tokens,
// node identities under the Node authorizer, RBAC with the default roles,
// the review APIs, and real kubectl (auth can-i, auth whoami).
package authz

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"berth/integration/harness"
	"berth/internal/testpki"
)

// Static tokens of the shared server's --token-auth-file.
const (
	aliceToken = "alice-token-0123456789"
	carolToken = "carol-token-0123456789"
)

// shared is the package's server, started by TestMain.
var shared *server

func TestMain(m *testing.M) {
	os.Exit(harness.RunWithServer(m, "authz", func(dir string) (*harness.Server, error) {
		tokens := filepath.Join(dir, "tokens.csv")
		content := aliceToken + ",alice,uid-alice\n" + carolToken + `,carol,uid-carol,"auditors,system:monitoring"` + "\n"
		if err := os.WriteFile(tokens, []byte(content), 0o600); err != nil {
			return nil, err
		}
		var err error
		if shared, err = launchServer(filepath.Join(dir, "server"), "--token-auth-file", tokens); err != nil {
			return nil, err
		}
		return shared.Server, nil
	}))
}

// server is a running `berth server`.
type server struct {
	*harness.Server
	admin kubernetes.Interface
}

// launchServer runs `berth server --data-dir dir args...` on 127.0.0.1 and
// waits until it serves.
func launchServer(dir string, args ...string) (*server, error) {
	args = append([]string{"--listen", "127.0.0.1:0",
		"--cluster-cidr", "10.251.0.0/16", "--node-cidr-mask-size", "24"}, args...)
	hs, err := harness.LaunchServer(dir, args...)
	if err != nil {
		return nil, err
	}
	s := &server{Server: hs}
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "admin.kubeconfig"))
	if err != nil {
		s.Stop()
		return nil, err
	}
	if s.admin, err = kubernetes.NewForConfig(cfg); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// startServer is launchServer for one test: stopped when it ends.
func startServer(t *testing.T, args ...string) *server {
	t.Helper()
	s, err := launchServer(filepath.Join(t.TempDir(), "server"), args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("--- berth server log ---\n%s", s.Log())
		}
	})
	return s
}

// anonymousConfig is a REST config with no credential, trusting the CA.
func (s *server) anonymousConfig() *rest.Config {
	return &rest.Config{Host: "https://" + s.Addr, TLSClientConfig: rest.TLSClientConfig{CAFile: filepath.Join(s.Dir, "ca.crt")}}
}

// tokenConfig presents a bearer token.
func (s *server) tokenConfig(token string) *rest.Config {
	c := s.anonymousConfig()
	c.BearerToken = token
	return c
}

// certConfig presents a client certificate for user in groups, signed
// here with the cluster CA's key from the data dir.
func (s *server) certConfig(t *testing.T, user string, groups ...string) *rest.Config {
	t.Helper()
	certPEM, keyPEM := s.issueClientCert(t, user, groups...)
	c := s.anonymousConfig()
	c.CertData, c.KeyData = certPEM, keyPEM
	return c
}

// issueClientCert is a client certificate for user in groups, signed with
// the cluster CA's key from the data dir.
func (s *server) issueClientCert(t *testing.T, user string, groups ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	return testpki.LoadCA(t, s.Dir).ClientPEM(t, user, groups...)
}

func clientFor(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// kubectl runs real kubectl against s with the given credential flags
// (--token ..., or --client-certificate/--client-key): stdout, stderr, err.
func (s *server) kubectl(t *testing.T, creds []string, args ...string) (string, string, error) {
	t.Helper()
	base := []string{"--server", "https://" + s.Addr, "--certificate-authority", filepath.Join(s.Dir, "ca.crt")}
	return harness.Kubectl{Bin: harness.RequireKubectl(t), Args: append(base, creds...), Timeout: 60 * time.Second,
		Env: []string{"KUBECACHEDIR=" + t.TempDir(), "KUBECONFIG=" + filepath.Join(t.TempDir(), "none")}}.Run("", args...)
}

// newNamespace creates a namespace for one test (deleted at its end).
func (s *server) newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ns, err := s.admin.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.admin.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

// pod is a minimal pod, bound to node when node is set.
func pod(name, node string, volumes ...corev1.Volume) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none:1"}},
			Volumes:    volumes,
		},
	}
}

// firstLine is s's first line, trimmed.
func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(line)
}
