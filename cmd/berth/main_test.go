package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"

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

// As kube-apiserver's --profiling: /debug/pprof is served (to authorized
// callers) unless turned off.
func TestProfilingIsOnByDefault(t *testing.T) {
	for name, c := range map[string]*cobra.Command{"server": newServerCommand(), "up": newUpCommand()} {
		f := c.Flags().Lookup("profiling")
		if f == nil || f.DefValue != "true" {
			t.Errorf("berth %s --profiling: %+v, want a flag defaulting to true", name, f)
		}
	}
}
