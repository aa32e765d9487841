package apiserver_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"berth/integration/testbed"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// startEtcdMember starts a single etcd member on loopback inside the test
// process (stopped at cleanup) and returns a client reading it raw.
func startEtcdMember(t *testing.T) (string, *clientv3.Client) {
	t.Helper()
	members, _, urls, err := testbed.StartEtcd(t.TempDir(), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(members[0].Close)
	c, err := clientv3.New(clientv3.Config{Endpoints: urls, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return urls[0], c
}

// rawValue is what etcd holds under a key, as `etcdctl get` shows it.
func rawValue(t *testing.T, c *clientv3.Client, key string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, key)
	if err != nil {
		t.Fatalf("etcd get %s: %v", key, err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("etcd get %s: %d values", key, len(resp.Kvs))
	}
	return resp.Kvs[0].Value
}

// newKey is a random base64 key of n bytes.
func newKey(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// encryptionKey is one named key of a provider.
type encryptionKey struct{ name, secret string }

// writeEncryptionConfig writes an EncryptionConfiguration encrypting
// secrets with one provider and its keys (the first key encrypts), with
// identity after it so data written in clear stays readable.
func writeEncryptionConfig(t *testing.T, provider string, keys ...encryptionKey) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources:\n  - secrets\n  providers:\n")
	fmt.Fprintf(&b, "  - %s:\n      keys:\n", provider)
	for _, k := range keys {
		fmt.Fprintf(&b, "      - name: %s\n        secret: %s\n", k.name, k.secret)
	}
	b.WriteString("  - identity: {}\n")
	path := filepath.Join(t.TempDir(), "encryption-config.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const secretPayload = "top-secret-payload-3141"

// createSecret creates default/NAME holding secretPayload.
func createSecret(t *testing.T, srv *serverProc, name string) {
	t.Helper()
	_, err := srv.Client(t).CoreV1().Secrets("default").Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Data:       map[string][]byte{"password": []byte(secretPayload)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create secret %s: %v", name, err)
	}
}

// wantSecretInClear checks the API serves default/NAME decrypted.
func wantSecretInClear(t *testing.T, srv *serverProc, name string) {
	t.Helper()
	s, err := srv.Client(t).CoreV1().Secrets("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get secret %s through the API: %v", name, err)
	}
	if got := string(s.Data["password"]); got != secretPayload {
		t.Fatalf("secret %s through the API: password %q, want %q", name, got, secretPayload)
	}
}

// wantCiphertext checks etcd holds default/NAME encrypted under prefix.
func wantCiphertext(t *testing.T, c *clientv3.Client, name, prefix string) {
	t.Helper()
	raw := rawValue(t, c, "/registry/secrets/default/"+name)
	if !bytes.HasPrefix(raw, []byte(prefix)) {
		t.Fatalf("etcd value of secret %s starts %q, want %q", name, raw[:min(len(raw), 40)], prefix)
	}
	if bytes.Contains(raw, []byte(secretPayload)) || bytes.Contains(raw, []byte(name)) {
		t.Fatalf("etcd value of secret %s holds clear text: %q", name, raw)
	}
}

// TestEncryptionAtRestRotation follows upstream's key rotation procedure
// on aescbc: secrets are ciphertext under key1 in etcd and clear through
// the API; with key2 added first and the server restarted, old secrets are
// still readable, new and rewritten ones (kubectl replace) are under key2;
// with key1 removed after the rewrite, every secret still reads.
func TestEncryptionAtRestRotation(t *testing.T) {
	endpoint, etcd := startEtcdMember(t)
	dir := filepath.Join(t.TempDir(), "server")
	key1 := encryptionKey{"key1", newKey(t, 32)}
	key2 := encryptionKey{"key2", newKey(t, 32)}
	start := func(config string) *serverProc {
		t.Helper()
		srv, err := startServer(dir, "127.0.0.1:0", append([]string{"--etcd-servers", endpoint, "--encryption-provider-config", config}, apiOnly...)...)
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}

	srv := start(writeEncryptionConfig(t, "aescbc", key1))
	createSecret(t, srv, "first")
	wantCiphertext(t, etcd, "first", "k8s:enc:aescbc:v1:key1:")
	wantSecretInClear(t, srv, "first")
	// Resources the file does not list stay in clear.
	if _, err := srv.Client(t).CoreV1().ConfigMaps("default").Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Data: map[string]string{"k": secretPayload}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if raw := rawValue(t, etcd, "/registry/configmaps/default/plain"); !bytes.HasPrefix(raw, []byte("k8s\x00")) || !bytes.Contains(raw, []byte(secretPayload)) {
		t.Fatalf("configmap in etcd: %q, want clear protobuf", raw)
	}
	srv.stop()

	// Step 1: key2 first, key1 still known.
	srv = start(writeEncryptionConfig(t, "aescbc", key2, key1))
	wantSecretInClear(t, srv, "first")
	wantCiphertext(t, etcd, "first", "k8s:enc:aescbc:v1:key1:")
	createSecret(t, srv, "second")
	wantCiphertext(t, etcd, "second", "k8s:enc:aescbc:v1:key2:")
	// Step 2: rewrite every secret (the server's own in kube-system too),
	// as upstream documents.
	list := srv.mustKubectl(t, "1.32", "", "get", "secrets", "--all-namespaces", "-o", "json")
	srv.mustKubectl(t, "1.32", list, "replace", "-f", "-")
	wantCiphertext(t, etcd, "first", "k8s:enc:aescbc:v1:key2:")
	wantSecretInClear(t, srv, "first")
	srv.stop()

	// Step 3: key1 gone; everything was rewritten, so everything reads
	// (the server itself reads its secrets while starting).
	srv = start(writeEncryptionConfig(t, "aescbc", key2))
	defer srv.stop()
	wantSecretInClear(t, srv, "first")
	wantSecretInClear(t, srv, "second")
	out := srv.mustKubectl(t, "1.32", "", "get", "secret", "first", "-n", "default", "-o", "jsonpath={.data.password}")
	if got, err := base64.StdEncoding.DecodeString(out); err != nil || string(got) != secretPayload {
		t.Fatalf("kubectl get secret: %q (%v)", out, err)
	}
}

// TestEncryptionAtRestProviders: aesgcm and secretbox store secrets as
// their upstream ciphertext; a secret written in clear before encryption
// was turned on stays readable (identity listed last).
func TestEncryptionAtRestProviders(t *testing.T) {
	for _, provider := range []string{"aesgcm", "secretbox"} {
		t.Run(provider, func(t *testing.T) {
			endpoint, etcd := startEtcdMember(t)
			dir := filepath.Join(t.TempDir(), "server")
			srv, err := startServer(dir, "127.0.0.1:0", append([]string{"--etcd-servers", endpoint}, apiOnly...)...)
			if err != nil {
				t.Fatal(err)
			}
			createSecret(t, srv, "clear")
			if raw := rawValue(t, etcd, "/registry/secrets/default/clear"); !bytes.Contains(raw, []byte(secretPayload)) {
				t.Fatalf("without encryption, etcd holds %q", raw)
			}
			srv.stop()

			srv, err = startServer(dir, "127.0.0.1:0", append([]string{"--etcd-servers", endpoint,
				"--encryption-provider-config", writeEncryptionConfig(t, provider, encryptionKey{"k1", newKey(t, 32)})}, apiOnly...)...)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.stop()
			createSecret(t, srv, "sealed")
			wantCiphertext(t, etcd, "sealed", "k8s:enc:"+provider+":v1:k1:")
			wantSecretInClear(t, srv, "sealed")
			wantSecretInClear(t, srv, "clear")
		})
	}
}

// TestEncryptionConfigRefusedAtStart: a bad file stops the server before
// it serves, with the offending field named.
func TestEncryptionConfigRefusedAtStart(t *testing.T) {
	short := base64.StdEncoding.EncodeToString([]byte("twenty-bytes-long!!!"))
	cases := []struct {
		name, config, want string
	}{
		{"unknown provider", "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - aesxts:\n      keys:\n      - name: k\n        secret: " + newKey(t, 32) + "\n",
			`unknown field "resources[0].providers[0].aesxts"`},
		{"wrong key size", "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - aescbc:\n      keys:\n      - name: k\n        secret: " + short + "\n",
			"resources[0].providers[0].aescbc.keys[0].secret: Invalid value: \"REDACTED\": secret is not of the expected length, got 20"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "enc.yaml")
			if err := os.WriteFile(path, []byte(tc.config), 0o600); err != nil {
				t.Fatal(err)
			}
			srv, err := startServer(filepath.Join(t.TempDir(), "server"), "127.0.0.1:0", append([]string{"--encryption-provider-config", path}, apiOnly...)...)
			if err == nil {
				srv.stop()
				t.Fatal("the server started with a bad encryption provider config")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("server error %q, want it to name %q", err, tc.want)
			}
		})
	}
}
