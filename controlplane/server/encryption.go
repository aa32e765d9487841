package server

import (
	"context"
	"fmt"
	"os"

	"k8s.io/apiserver/pkg/storage/value"

	"berth/controlplane/storage"
	"berth/internal/errdefs"
)

// validateEncryption checks Config.EncryptionProviderConfig names a
// readable file; its content is checked when Run loads it.
func (c *Config) validateEncryption() error {
	if c.EncryptionProviderConfig == "" {
		return nil
	}
	st, err := os.Stat(c.EncryptionProviderConfig)
	if err != nil {
		return fmt.Errorf("server config: encryption provider config: %w: %w", err, errdefs.ErrInvalidArgument)
	}
	if st.IsDir() {
		return fmt.Errorf("server config: encryption provider config %s is a directory, want an EncryptionConfiguration file: %w", c.EncryptionProviderConfig, errdefs.ErrInvalidArgument)
	}
	return nil
}

// encryptionTransformers loads Config.EncryptionProviderConfig, when
// set, into the storage layer's value transformers (nil: values in clear).
// A bad file stops the server before it touches etcd.
func (s *Server) encryptionTransformers(ctx context.Context, serverID string) (value.ResourceTransformers, error) {
	if s.cfg.EncryptionProviderConfig == "" {
		return nil, nil
	}
	tr, err := storage.LoadEncryptionConfig(ctx, s.cfg.EncryptionProviderConfig, serverID)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s.cfg.Logger.Info("encrypting resources at rest", "encryption-provider-config", s.cfg.EncryptionProviderConfig)
	return tr, nil
}
