package nodeenv

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"text/template"
)

// containerdConfig is what the instance's config.toml is rendered from.
type containerdConfig struct {
	Dir, Root, State, Socket string
	OptDir, CNIConfDir       string
	CNIBinDir, CertsDir      string
	SandboxImage             string
	RestrictOOMScoreAdj      bool
	DisabledPlugins          []string
}

// disabledPlugins are the snapshotters that cannot work here or are not
// used, and tracing; containerd starts faster and logs less without them.
var disabledPlugins = []string{
	"io.containerd.snapshotter.v1.aufs",
	"io.containerd.snapshotter.v1.btrfs",
	"io.containerd.snapshotter.v1.zfs",
	"io.containerd.snapshotter.v1.devmapper",
	"io.containerd.tracing.processor.v1.otlp",
	"io.containerd.internal.v1.tracing",
}

// toml quotes a string as a TOML basic string (Go's %q escapes are a subset).
func toml(s string) string { return fmt.Sprintf("%q", s) }

var configTemplate = template.Must(template.New("config.toml").Funcs(template.FuncMap{"toml": toml}).Parse(`# containerd of a berth nodeenv instance; everything lives under {{toml .Dir}}.
version = 2
root = {{toml .Root}}
state = {{toml .State}}
disabled_plugins = [{{range $i, $p := .DisabledPlugins}}{{if $i}}, {{end}}{{toml $p}}{{end}}]

[grpc]
  address = {{toml .Socket}}

[ttrpc]
  address = {{toml (printf "%s.ttrpc" .Socket)}}

[debug]
  level = "info"

[plugins."io.containerd.internal.v1.opt"]
  path = {{toml .OptDir}}

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = {{toml .SandboxImage}}
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  restrict_oom_score_adj = {{.RestrictOOMScoreAdj}}
  max_container_log_line_size = 16384

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = {{toml .CNIBinDir}}
    conf_dir = {{toml .CNIConfDir}}
    max_conf_num = 1

  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = {{toml .CertsDir}}
`))

// writeContainerdConfig renders config.toml into cfg.Dir and returns its path.
func writeContainerdConfig(cfg containerdConfig) (string, error) {
	var buf bytes.Buffer
	if err := configTemplate.Execute(&buf, cfg); err != nil {
		return "", fmt.Errorf("render containerd config: %w", err)
	}
	path := filepath.Join(cfg.Dir, "config.toml")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return "", fmt.Errorf("write containerd config: %w", err)
	}
	return path, nil
}

// writeHostsTOML tells containerd to reach registry host ("127.0.0.1:PORT")
// over plain HTTP: certs.d/<host>/hosts.toml.
func writeHostsTOML(certsDir, host string) error {
	dir := filepath.Join(certsDir, host)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	content := fmt.Sprintf(`server = %s

[host.%s]
  capabilities = ["pull", "resolve"]
  skip_verify = true
`, toml("http://"+host), toml("http://"+host))
	return os.WriteFile(filepath.Join(dir, "hosts.toml"), []byte(content), 0o644)
}
