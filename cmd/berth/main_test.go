package main

import (
	"bytes"
	"strings"
	"testing"

	"berth/internal/version"
)

func TestVersionCommandPrintsVersion(t *testing.T) {
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"version"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("berth version: %v", err)
	}
	got := out.String()
	for _, want := range []string{version.Version, version.Kubernetes()} {
		if !strings.Contains(got, want) {
			t.Errorf("berth version printed %q, want it to contain %q", got, want)
		}
	}
}

func TestUnknownSubcommandFails(t *testing.T) {
	cmd := newRootCommand()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"no-such-command"})
	if err := cmd.Execute(); err == nil {
		t.Fatal("berth no-such-command succeeded, want an error")
	}
}
