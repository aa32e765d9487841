package nodeenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The capability check must agree with what the kernel does: a process
// without CAP_SYS_RESOURCE cannot lower its oom_score_adj below zero.
func TestRestrictOOMScoreAdjDetectionMatchesTheKernel(t *testing.T) {
	need, err := needRestrictOOMScoreAdj()
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		t.Skip("as non-root the write fails for other reasons")
	}
	// A child tries what containerd does for sandboxes; its failure is the truth.
	err = exec.Command("/bin/sh", "-c", "echo -998 > /proc/self/oom_score_adj").Run()
	if kernelRefused := err != nil; kernelRefused != need {
		t.Fatalf("needRestrictOOMScoreAdj = %v, but writing a negative oom_score_adj failed = %v (%v)", need, kernelRefused, err)
	}
}

func TestUnescapeMountinfo(t *testing.T) {
	for in, want := range map[string]string{
		`/tmp/plain`:              "/tmp/plain",
		`/tmp/with\040space`:      "/tmp/with space",
		`/tmp/tab\011and\134back`: "/tmp/tab\tand\\back",
		`/tmp/trailing\04`:        `/tmp/trailing\04`,
	} {
		if got := unescapeMountinfo(in); got != want {
			t.Errorf("unescapeMountinfo(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestContainerdConfigHasTheInstancePaths(t *testing.T) {
	dir := t.TempDir()
	path, err := writeContainerdConfig(containerdConfig{
		Dir: dir, Root: dir + "/root", State: dir + "/state", Socket: dir + "/containerd.sock",
		OptDir: dir + "/opt", CNIConfDir: dir + "/net.d", CNIBinDir: "/usr/lib/cni", CertsDir: dir + "/certs.d",
		SandboxImage: "127.0.0.1:5000/berth/pause:1", RestrictOOMScoreAdj: true, DisabledPlugins: disabledPlugins,
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"version = 2", `root = "` + dir + `/root"`, `state = "` + dir + `/state"`,
		`address = "` + dir + `/containerd.sock"`, `sandbox_image = "127.0.0.1:5000/berth/pause:1"`,
		"restrict_oom_score_adj = true", "SystemdCgroup = false", `snapshotter = "overlayfs"`,
		`conf_dir = "` + dir + `/net.d"`, `config_path = "` + dir + `/certs.d"`,
		`stream_server_address = "127.0.0.1"`, `"io.containerd.snapshotter.v1.btrfs"`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("config.toml lacks %s:\n%s", want, b)
		}
	}
	if err := writeHostsTOML(dir+"/certs.d", "127.0.0.1:5000"); err != nil {
		t.Fatal(err)
	}
	h, err := os.ReadFile(dir + "/certs.d/127.0.0.1:5000/hosts.toml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(h), `[host."http://127.0.0.1:5000"]`) || !strings.Contains(string(h), `capabilities = ["pull", "resolve"]`) {
		t.Errorf("hosts.toml:\n%s", h)
	}
}
