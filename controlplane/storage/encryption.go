package storage

import (
	"bytes"
	"context"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	apiserverconfig "k8s.io/apiserver/pkg/apis/apiserver/install"
	"k8s.io/apiserver/pkg/server/options/encryptionconfig"
	"k8s.io/apiserver/pkg/storage/value"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"

	"berth/internal/errdefs"
)

// LoadEncryptionConfig reads an EncryptionConfiguration file
// (apiserver.config.k8s.io/v1, kube-apiserver's
// --encryption-provider-config) and returns the value transformers it
// describes, for Config.Transformers. For each listed resource the first
// provider (aescbc, aesgcm, secretbox, kms or identity) encrypts what is
// written and every provider can decrypt what is read; resources not
// listed are stored in clear. k8s.io/apiserver's own loader parses,
// validates and builds the providers, so files and ciphertext
// (k8s:enc:PROVIDER:v1:KEYNAME:...) are interchangeable with
// kube-apiserver's. serverID identifies this server to KMS v2 plugins.
//
// A bad file is refused with an error naming the offending field (an
// unknown field, a provider without keys, a key of the wrong size, ...),
// classified errdefs.ErrInvalidArgument. Goroutines a KMS provider starts
// live until ctx ends.
func LoadEncryptionConfig(ctx context.Context, path, serverID string) (value.ResourceTransformers, error) {
	if path == "" {
		return nil, fmt.Errorf("encryption provider config: a file is required: %w", errdefs.ErrInvalidArgument)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("encryption provider config %s: %w: %w", path, err, errdefs.ErrInvalidArgument)
	}
	// Unknown fields (a misspelled provider above all) are refused by name;
	// the loader below would only say the provider names none it knows.
	if err := decodeStrict(data); err != nil {
		return nil, fmt.Errorf("encryption provider config %s: %w: %w", path, err, errdefs.ErrInvalidArgument)
	}
	cfg, err := encryptionconfig.LoadEncryptionConfig(ctx, path, false, serverID)
	if err != nil {
		return nil, fmt.Errorf("encryption provider config %s: %w: %w", path, err, errdefs.ErrInvalidArgument)
	}
	return encryptionconfig.StaticTransformers(cfg.Transformers), nil
}

// decodeStrict decodes an EncryptionConfiguration with unknown and
// duplicate fields as errors (their paths named).
func decodeStrict(data []byte) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return fmt.Errorf("the file is empty")
	}
	sch := runtime.NewScheme()
	apiserverconfig.Install(sch)
	codecs := serializer.NewCodecFactory(sch, serializer.EnableStrict)
	_, gvk, err := codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return err
	}
	if gvk == nil || gvk.Kind != "EncryptionConfiguration" {
		return fmt.Errorf("kind %v: want EncryptionConfiguration", gvk)
	}
	return nil
}

// transformer is the value transformer of one resource: the configured
// one, or identity (which refuses to read encrypted data) when none is.
func (f *Factory) transformer(resource schema.GroupResource) value.Transformer {
	if f.cfg.Transformers == nil {
		return identity.NewEncryptCheckTransformer()
	}
	return f.cfg.Transformers.TransformerForResource(resource)
}
