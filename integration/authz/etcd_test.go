package authz

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// etcdEndpoint is the embedded etcd's client URL, from the server's log.
func etcdEndpoint(t *testing.T, s *server) string {
	t.Helper()
	m := regexp.MustCompile(`msg="embedded etcd ready" endpoint=(https://\S+)`).FindStringSubmatch(s.Log())
	if m == nil {
		t.Fatalf("no embedded etcd endpoint in the server's log:\n%s", s.LogTail())
	}
	return m[1]
}

// etcdGet reads key from etcd presenting the pair certPEM/keyPEM, trusting
// etcd's own CA: the number of keys found.
func etcdGet(t *testing.T, s *server, endpoint string, certPEM, keyPEM []byte, key string) (int64, error) {
	t.Helper()
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(mustRead(t, filepath.Join(s.Dir, "etcd-ca.crt"))) {
		t.Fatal("etcd-ca.crt holds no certificate")
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second,
		TLS: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}})
	if err != nil {
		return 0, err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, key, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, err
	}
	return resp.Count, nil
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// The embedded etcd trusts its own CA only: the apiserver's etcd client
// certificate reads it; the admin's and a node's certificates (cluster CA)
// are refused, so they cannot bypass RBAC and the Node authorizer.
func TestEtcdAcceptsOnlyTheAPIServer(t *testing.T) {
	endpoint := etcdEndpoint(t, shared)
	n, err := etcdGet(t, shared, endpoint, mustRead(t, filepath.Join(shared.Dir, "apiserver-etcd-client.crt")),
		mustRead(t, filepath.Join(shared.Dir, "apiserver-etcd-client.key")), "/registry/namespaces/")
	if err != nil || n == 0 {
		t.Fatalf("the apiserver's etcd client certificate: %d namespaces, %v", n, err)
	}
	nodeCert, nodeKey := shared.issueClientCert(t, "system:node:n1", "system:nodes")
	for name, pair := range map[string][2][]byte{
		"admin (system:masters)": {mustRead(t, filepath.Join(shared.Dir, "admin.crt")), mustRead(t, filepath.Join(shared.Dir, "admin.key"))},
		"a node":                 {nodeCert, nodeKey},
	} {
		if n, err := etcdGet(t, shared, endpoint, pair[0], pair[1], "/registry/secrets/"); err == nil {
			t.Errorf("%s's certificate from the cluster CA read etcd (%d secrets)", name, n)
		}
	}
}

// A data dir of an earlier berth, whose etcd identity came from the cluster
// CA, is migrated: the server starts on it with etcd's own CA and the
// objects stored before are still there.
func TestEtcdCAMigration(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "server")
	s, err := launchServer(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before-upgrade", Namespace: "default"}, Data: map[string]string{"k": "v"}}
	if _, err := s.admin.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	// The earlier layout: etcd.crt/etcd.key from the cluster CA, no etcd CA.
	for _, f := range []string{"etcd-ca.crt", "etcd-ca.key", "etcd-server.crt", "etcd-server.key", "apiserver-etcd-client.crt", "apiserver-etcd-client.key"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range [][2]string{{"admin.crt", "etcd.crt"}, {"admin.key", "etcd.key"}} {
		if err := os.WriteFile(filepath.Join(dir, f[1]), mustRead(t, filepath.Join(dir, f[0])), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s, err = launchServer(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	got, err := s.admin.CoreV1().ConfigMaps("default").Get(ctx, "before-upgrade", metav1.GetOptions{})
	if err != nil || got.Data["k"] != "v" {
		t.Fatalf("the ConfigMap stored before the upgrade: %+v %v", got, err)
	}
	for _, f := range []string{"etcd.crt", "etcd.key"} {
		if _, err := os.Stat(filepath.Join(dir, f)); !os.IsNotExist(err) {
			t.Errorf("the earlier etcd identity %s is still there: %v", f, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "etcd-ca.crt")); err != nil {
		t.Fatalf("no etcd CA after the upgrade: %v", err)
	}
}
