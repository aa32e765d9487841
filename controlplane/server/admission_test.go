package server

import (
	"errors"
	"slices"
	"testing"

	"berth/internal/errdefs"
)

func TestConfigAdmissionPlugins(t *testing.T) {
	def := Config{DataDir: "/x"}
	if err := def.Validate(); err != nil {
		t.Fatal(err)
	}
	got := def.EnabledAdmissionPlugins()
	want := []string{"NamespaceLifecycle", "LimitRanger", "ServiceAccount", "NodeRestriction", "PodSecurity", "Priority", "DefaultTolerationSeconds", "DefaultStorageClass", "StorageObjectInUseProtection",
		"RuntimeClass", "DefaultIngressClass", "MutatingAdmissionWebhook", "ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook", "ResourceQuota"}
	if !slices.Equal(got, want) {
		t.Fatalf("default plugins %v, want %v", got, want)
	}

	// Enabled plugins run in upstream's order whatever the flag's order.
	c := Config{DataDir: "/x", EnableAdmissionPlugins: []string{"NodeRestriction", "ServiceAccount"}, DisableAdmissionPlugins: []string{"ResourceQuota", "LimitRanger"}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	want = []string{"NamespaceLifecycle", "ServiceAccount", "NodeRestriction", "PodSecurity", "Priority", "DefaultTolerationSeconds", "DefaultStorageClass", "StorageObjectInUseProtection",
		"RuntimeClass", "DefaultIngressClass", "MutatingAdmissionWebhook", "ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook"}
	if got := c.EnabledAdmissionPlugins(); !slices.Equal(got, want) {
		t.Fatalf("plugins %v, want %v", got, want)
	}

	for i, bad := range []Config{
		{DataDir: "/x", EnableAdmissionPlugins: []string{"AlwaysPullImages"}},
		{DataDir: "/x", DisableAdmissionPlugins: []string{"namespacelifecycle"}},
		{DataDir: "/x", EnableAdmissionPlugins: []string{"PodSecurity"}, DisableAdmissionPlugins: []string{"PodSecurity"}},
	} {
		if err := bad.Validate(); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("case %d: %v, want ErrInvalidArgument", i, err)
		}
	}
}
