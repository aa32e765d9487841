package prereq

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestKubectlPathPicksTheNewestExecutablePatch(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("BERTH_KUBECTL_DIR", dir)
	write := func(version string, mode os.FileMode) string {
		p := filepath.Join(dir, version, "kubectl")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("v1.27.3", 0o755)
	want := write("v1.27.16", 0o755)
	write("v1.27.20", 0o644) // not executable: a build that never finished
	write("v1.270.1", 0o755) // another minor
	write("v1.27.x", 0o755)  // not a patch release
	write("v1.28.1", 0o755)  // another minor
	if got, err := KubectlPath("1.27"); err != nil || got != want {
		t.Errorf("KubectlPath(1.27) = %q, %v; want %q", got, err, want)
	}
	_, err := KubectlPath("1.29")
	if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "make kubectls") {
		t.Errorf("KubectlPath(1.29) error = %v; want one naming %s and make kubectls", err, dir)
	}
}

func TestKubectlDirDefault(t *testing.T) {
	t.Setenv("BERTH_KUBECTL_DIR", "")
	if got := KubectlDir(); got != DefaultKubectlDir {
		t.Errorf("KubectlDir() = %q, want %q", got, DefaultKubectlDir)
	}
}

// TestBuiltKubectlsReportTheirRelease runs `kubectl version --client` of
// every release hack/kubectl builds: each must be the release its module
// pins (k8s.io/kubectl v0.XX.Y is v1.XX.Y), stamped as upstream stamps it.
func TestBuiltKubectlsReportTheirRelease(t *testing.T) {
	mods, err := filepath.Glob("../../hack/kubectl/1.*/go.mod")
	if err != nil || len(mods) == 0 {
		t.Fatalf("no modules under hack/kubectl (%v)", err)
	}
	for _, mod := range mods {
		minor := filepath.Base(filepath.Dir(mod))
		t.Run(minor, func(t *testing.T) {
			want := pinnedRelease(t, mod)
			bin := Kubectl(t, minor)
			var out, errOut bytes.Buffer
			cmd := exec.Command(bin, "version", "--client", "-o", "json")
			cmd.Env = []string{"HOME=" + t.TempDir()}
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if err := cmd.Run(); err != nil {
				t.Fatalf("%s version --client: %v\n%s", bin, err, errOut.String())
			}
			var v struct {
				ClientVersion struct{ Major, Minor, GitVersion string }
			}
			if err := json.Unmarshal(out.Bytes(), &v); err != nil {
				t.Fatalf("%s version --client -o json: %v\n%s", bin, err, out.String())
			}
			c := v.ClientVersion
			if c.Major+"."+c.Minor != minor || c.GitVersion != want {
				t.Errorf("%s reports major %q minor %q gitVersion %q; want %s, %s (make kubectls rebuilds a stale one)",
					bin, c.Major, c.Minor, c.GitVersion, minor, want)
			}
		})
	}
}

// pinnedRelease is the Kubernetes release of the k8s.io/kubectl a
// hack/kubectl module requires.
func pinnedRelease(t *testing.T, gomod string) string {
	t.Helper()
	data, err := os.ReadFile(gomod)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "k8s.io/kubectl" && strings.HasPrefix(f[1], "v0.") {
			return "v1." + strings.TrimPrefix(f[1], "v0.")
		}
	}
	t.Fatalf("%s requires no k8s.io/kubectl v0.X.Y", gomod)
	return ""
}
