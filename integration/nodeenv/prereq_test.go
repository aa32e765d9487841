package nodeenv

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

// TestContainerdConfigHasTheInstancePaths: the instance's containerd
// keeps everything under Dir, reads the instance's CNI conf dir, runs the
// pause image, and reaches both registries over plain HTTP.
func TestContainerdConfigHasTheInstancePaths(t *testing.T) {
	dir := t.TempDir()
	e := &Env{
		Dir: dir, socket: filepath.Join(dir, "containerd.sock"), CNIConfDir: filepath.Join(dir, "net.d"),
		Registry: "127.0.0.1:5000", AuthRegistry: "127.0.0.1:5001", PauseImage: "127.0.0.1:5000/berth/pause:1",
	}
	path, err := e.writeContainerdConfig()
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(dir, "config.toml") {
		t.Errorf("config path %s", path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Root  string `toml:"root"`
		State string `toml:"state"`
		GRPC  struct {
			Address string `toml:"address"`
		} `toml:"grpc"`
		Plugins struct {
			CRI struct {
				SandboxImage string `toml:"sandbox_image"`
				StreamServer string `toml:"stream_server_address"`
				CNI          struct {
					ConfDir string `toml:"conf_dir"`
					BinDir  string `toml:"bin_dir"`
				} `toml:"cni"`
				Registry struct {
					ConfigPath string `toml:"config_path"`
				} `toml:"registry"`
			} `toml:"io.containerd.grpc.v1.cri"`
		} `toml:"plugins"`
	}
	if err := toml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("config.toml: %v\n%s", err, b)
	}
	cri := doc.Plugins.CRI
	for _, c := range []struct{ name, got, want string }{
		{"root", doc.Root, dir + "/root"},
		{"state", doc.State, dir + "/state"},
		{"grpc.address", doc.GRPC.Address, dir + "/containerd.sock"},
		{"sandbox_image", cri.SandboxImage, e.PauseImage},
		{"stream_server_address", cri.StreamServer, "127.0.0.1"},
		{"cni.conf_dir", cri.CNI.ConfDir, dir + "/net.d"},
		{"cni.bin_dir", cri.CNI.BinDir, CNIBinDir},
		{"registry.config_path", cri.Registry.ConfigPath, dir + "/certs.d"},
	} {
		if c.got != c.want {
			t.Errorf("config.toml %s = %q, want %q", c.name, c.got, c.want)
		}
	}
	for _, host := range []string{e.Registry, e.AuthRegistry} {
		h, err := os.ReadFile(filepath.Join(dir, "certs.d", host, "hosts.toml"))
		if err != nil {
			t.Fatal(err)
		}
		var hosts struct {
			Server string `toml:"server"`
		}
		if err := toml.Unmarshal(h, &hosts); err != nil || hosts.Server != "http://"+host {
			t.Errorf("%s/hosts.toml: server %q (%v):\n%s", host, hosts.Server, err, h)
		}
	}
}
