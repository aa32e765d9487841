package storage

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage/value"

	"berth/internal/errdefs"
)

var (
	secretsGR    = schema.GroupResource{Resource: "secrets"}
	configmapsGR = schema.GroupResource{Resource: "configmaps"}
	// key32 and key16 are base64 keys of 32 and 16 bytes.
	key32  = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	key32b = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32))
	key16  = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{5}, 16))
)

// writeConfig writes an EncryptionConfiguration for secrets with the
// given providers (YAML list items, indented under providers:).
func writeConfig(t *testing.T, providers string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "encryption.yaml")
	doc := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n" + providers
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func aesProvider(name string, keys ...[2]string) string {
	s := "  - " + name + ":\n      keys:\n"
	for _, k := range keys {
		s += "      - name: " + k[0] + "\n        secret: " + k[1] + "\n"
	}
	return s
}

const identityProvider = "  - identity: {}\n"

func load(t *testing.T, path string) value.ResourceTransformers {
	t.Helper()
	tr, err := LoadEncryptionConfig(context.Background(), path, "test-server")
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestEncryptionProviders: each provider writes its upstream prefix and
// the name of its first key, and reads back what it wrote; resources the
// file does not list stay in clear.
func TestEncryptionProviders(t *testing.T) {
	ctx := context.Background()
	dataCtx := value.DefaultContext("/registry/secrets/default/s")
	plain := []byte("k8s\x00secret payload")
	for _, tc := range []struct {
		provider, key, prefix string
	}{
		{"aescbc", key32, "k8s:enc:aescbc:v1:key1:"},
		{"aescbc", key16, "k8s:enc:aescbc:v1:key1:"},
		{"aesgcm", key32, "k8s:enc:aesgcm:v1:key1:"},
		{"secretbox", key32, "k8s:enc:secretbox:v1:key1:"},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			tr := load(t, writeConfig(t, aesProvider(tc.provider, [2]string{"key1", tc.key})+identityProvider))
			secrets := tr.TransformerForResource(secretsGR)
			stored, err := secrets.TransformToStorage(ctx, plain, dataCtx)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(stored, []byte(tc.prefix)) || bytes.Contains(stored, []byte("secret payload")) {
				t.Fatalf("stored %q, want ciphertext after %q", stored, tc.prefix)
			}
			back, stale, err := secrets.TransformFromStorage(ctx, stored, dataCtx)
			if err != nil || stale || !bytes.Equal(back, plain) {
				t.Fatalf("read back %q stale=%v err=%v", back, stale, err)
			}
			// identity, listed second, reads data written before encryption.
			back, stale, err = secrets.TransformFromStorage(ctx, plain, dataCtx)
			if err != nil || !stale || !bytes.Equal(back, plain) {
				t.Fatalf("clear data read back %q stale=%v err=%v, want it read and marked stale", back, stale, err)
			}
			cm, err := tr.TransformerForResource(configmapsGR).TransformToStorage(ctx, plain, dataCtx)
			if err != nil || !bytes.Equal(cm, plain) {
				t.Fatalf("configmaps stored %q (%v), want clear", cm, err)
			}
		})
	}
}

// TestEncryptionKeyRotation: with a new key first, values under the old
// key still decrypt (marked stale, so an update rewrites them) and new
// writes use the new key; a file without the old key cannot read them.
func TestEncryptionKeyRotation(t *testing.T) {
	ctx := context.Background()
	dataCtx := value.DefaultContext("/registry/secrets/default/s")
	plain := []byte("k8s\x00payload")
	before := load(t, writeConfig(t, aesProvider("aescbc", [2]string{"key1", key32}))).TransformerForResource(secretsGR)
	old, err := before.TransformToStorage(ctx, plain, dataCtx)
	if err != nil {
		t.Fatal(err)
	}
	after := load(t, writeConfig(t, aesProvider("aescbc", [2]string{"key2", key32b}, [2]string{"key1", key32}))).TransformerForResource(secretsGR)
	back, stale, err := after.TransformFromStorage(ctx, old, dataCtx)
	if err != nil || !stale || !bytes.Equal(back, plain) {
		t.Fatalf("old value after rotation: %q stale=%v err=%v", back, stale, err)
	}
	fresh, err := after.TransformToStorage(ctx, plain, dataCtx)
	if err != nil || !bytes.HasPrefix(fresh, []byte("k8s:enc:aescbc:v1:key2:")) {
		t.Fatalf("new write %q (%v), want it under key2", fresh, err)
	}
	onlyNew := load(t, writeConfig(t, aesProvider("aescbc", [2]string{"key2", key32b}))).TransformerForResource(secretsGR)
	if _, _, err := onlyNew.TransformFromStorage(ctx, old, dataCtx); err == nil {
		t.Fatal("a value under a removed key decrypted")
	}
	// Without any configuration, encrypted values are refused, not served as garbage.
	if _, _, err := (&Factory{}).transformer(secretsGR).TransformFromStorage(ctx, fresh, dataCtx); err == nil {
		t.Fatal("the identity transformer read encrypted data")
	}
}

// TestEncryptionConfigRefused: bad files are refused with the field named.
func TestEncryptionConfigRefused(t *testing.T) {
	for _, tc := range []struct {
		name, providers string
		want            []string
	}{
		{"unknown provider", "  - aesxts:\n      keys:\n      - name: k\n        secret: " + key32 + "\n",
			[]string{`unknown field "resources[0].providers[0].aesxts"`}},
		{"aescbc key of 20 bytes", aesProvider("aescbc", [2]string{"key1", base64.StdEncoding.EncodeToString(make([]byte, 20))}),
			[]string{"resources[0].providers[0].aescbc.keys[0].secret", "got 20, expected one of [16 24 32]"}},
		{"secretbox key of 16 bytes", aesProvider("secretbox", [2]string{"key1", key16}),
			[]string{"resources[0].providers[0].secretbox.keys[0].secret", "got 16, expected one of [32]"}},
		{"key not base64", aesProvider("aesgcm", [2]string{"key1", "not base64!"}),
			[]string{"resources[0].providers[0].aesgcm.keys[0].secret", "secrets must be base64 encoded"}},
		{"key without a name", aesProvider("aescbc", [2]string{"", key32}),
			[]string{"resources[0].providers[0].aescbc.keys[0].name", "Required value"}},
		{"no keys", "  - aescbc:\n      keys: []\n",
			[]string{"resources[0].providers[0].aescbc.keys", "at least one keys is required"}},
		{"no providers", "    []\n", []string{"resources[0].providers"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadEncryptionConfig(context.Background(), writeConfig(t, tc.providers), "test-server")
			if !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Fatalf("error %v, want ErrInvalidArgument", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	for name, content := range map[string]string{
		"empty file": "",
		"wrong kind": "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\n",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "enc.yaml")
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := LoadEncryptionConfig(context.Background(), path, "s"); !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Fatalf("error %v, want ErrInvalidArgument", err)
			}
		})
	}
	if _, err := LoadEncryptionConfig(context.Background(), filepath.Join(t.TempDir(), "missing.yaml"), "s"); !errors.Is(err, errdefs.ErrInvalidArgument) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}
