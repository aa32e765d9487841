package server

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"berth/internal/errdefs"
)

// TestEncryptionProviderConfig: Validate refuses a missing file or a
// directory; a file with bad content is refused by Run before it writes
// anything into the data dir.
func TestEncryptionProviderConfig(t *testing.T) {
	dir := t.TempDir()
	for _, path := range []string{filepath.Join(dir, "missing.yaml"), dir} {
		c := Config{DataDir: filepath.Join(dir, "data"), EncryptionProviderConfig: path}
		if err := c.Validate(); !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), "encryption provider config") {
			t.Errorf("EncryptionProviderConfig %s: %v, want ErrInvalidArgument naming the field", path, err)
		}
	}
	bad := filepath.Join(dir, "enc.yaml")
	content := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - secretbox:\n      keys:\n      - name: k\n        secret: c2hvcnQ=\n"
	if err := os.WriteFile(bad, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	srv, err := New(Config{DataDir: data, Listen: "127.0.0.1:0", EncryptionProviderConfig: bad})
	if err != nil {
		t.Fatal(err)
	}
	err = srv.Run(context.Background())
	if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), "resources[0].providers[0].secretbox.keys[0].secret") {
		t.Fatalf("Run: %v, want ErrInvalidArgument naming the key", err)
	}
	if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("data dir after a refused start: %v, want none", err)
	}
}
