package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"berth/internal/prereq"
)

func TestIdentifier(t *testing.T) {
	for name, want := range map[string]bool{
		"PATH": true, "_x1": true, "data_1": true,
		"": false, "1x": false, "data-1": false, "p.q": false, "a b": false, "é": false,
	} {
		if got := identifier(name); got != want {
			t.Errorf("identifier(%q) = %v, want %v", name, got, want)
		}
	}
}

// The built wrapper, on this host's /bin/busybox and /bin/bash: ash's error
// messages when the environment is plain, every variable passed on when a
// name is not an identifier.
func TestWrapper(t *testing.T) {
	for _, p := range []string{busybox, bash} {
		if _, err := os.Stat(p); err != nil {
			prereq.Missing(t, "%s is missing (busybox-static, bash)", p)
		}
	}
	sh := filepath.Join(t.TempDir(), "sh")
	if out, err := exec.Command("go", "build", "-o", sh, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(sh, "-c", "echo test > /nonexistent-dir/file")
	cmd.Args[0] = "/bin/sh"
	cmd.Env = []string{"PATH=/bin"}
	out, _ := cmd.CombinedOutput()
	if got, want := string(out), "/bin/sh: can't create /nonexistent-dir/file: nonexistent directory\n"; got != want {
		t.Errorf("plain environment: output %q, want busybox ash's %q", got, want)
	}
	cmd = exec.Command(sh, "-c", "env")
	cmd.Env = []string{"PATH=/bin:/usr/bin", "data-1=value-1", "p.q=2"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sh -c env: %v\n%s", err, out)
	}
	for _, want := range []string{"data-1=value-1\n", "p.q=2\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("sh -c env lacks %q:\n%s", want, out)
		}
	}
}
