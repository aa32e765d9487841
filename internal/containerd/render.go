package containerd

import (
	"fmt"
	"os"

	"github.com/pelletier/go-toml/v2"
)

// DisabledPlugins are the plugins berth's containerd does without: the
// snapshotters that cannot work on a plain node or are not used, and
// tracing. containerd starts faster and logs less without them.
var DisabledPlugins = []string{
	"io.containerd.snapshotter.v1.aufs",
	"io.containerd.snapshotter.v1.btrfs",
	"io.containerd.snapshotter.v1.zfs",
	"io.containerd.snapshotter.v1.devmapper",
	"io.containerd.tracing.processor.v1.otlp",
	"io.containerd.internal.v1.tracing",
}

// DefaultRuntimeHandler is the runtime handler of pods naming no
// RuntimeClass (CRI's empty handler).
const DefaultRuntimeHandler = "runc"

// CRIPlugin is the CRI plugin's ID in containerd 1.6's version-2 config.
const CRIPlugin = "io.containerd.grpc.v1.cri"

// Render returns containerd's config.toml (version 2) for c, which must be
// validated; restrictOOMScoreAdj is the resolved RestrictOOMScoreAdj.
// cgroupfs (SystemdCgroup = false), runc v2 (as DefaultRuntimeHandler and
// each of RuntimeHandlers) and overlayfs, the CRI stream
// server on StreamServerAddress with a free port, one CNI conflist from
// CNIConfDir, registry hosts from HostsDir. Pure.
func Render(c Config, restrictOOMScoreAdj bool) ([]byte, error) {
	runc := map[string]any{
		"runtime_type": "io.containerd.runc.v2",
		"options":      map[string]any{"SystemdCgroup": false},
	}
	runtimes := map[string]any{DefaultRuntimeHandler: runc}
	for _, h := range c.RuntimeHandlers {
		runtimes[h] = runc
	}
	cri := map[string]any{
		"sandbox_image":               c.SandboxImage,
		"stream_server_address":       c.StreamServerAddress,
		"stream_server_port":          "0",
		"enable_selinux":              false,
		"restrict_oom_score_adj":      restrictOOMScoreAdj,
		"max_container_log_line_size": 16384,
		"containerd": map[string]any{
			"snapshotter":          "overlayfs",
			"default_runtime_name": DefaultRuntimeHandler,
			"runtimes":             runtimes,
		},
		"cni": map[string]any{
			"bin_dir":      c.CNIBinDir,
			"conf_dir":     c.CNIConfDir,
			"max_conf_num": 1,
		},
		"registry": map[string]any{
			"config_path": c.HostsDir(),
		},
	}
	doc := map[string]any{
		"version":          2,
		"root":             c.Root,
		"state":            c.State,
		"disabled_plugins": DisabledPlugins,
		"grpc":             map[string]any{"address": c.Socket},
		"ttrpc":            map[string]any{"address": c.Socket + ".ttrpc"},
		"debug":            map[string]any{"level": c.LogLevel},
		"plugins": map[string]any{
			"io.containerd.internal.v1.opt": map[string]any{"path": c.Dir + "/opt"},
			CRIPlugin:                       cri,
		},
	}
	out, err := toml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("containerd config: render: %w", err)
	}
	return append([]byte("# Written by berth; rewritten at every start.\n"), out...), nil
}

// WriteFiles writes what containerd reads at start into c.Dir: the hosts
// directory (HostsDir, replaced by Registries' hosts files) and config.toml
// (ConfigPath, Render's output). c must be validated; restrictOOMScoreAdj
// is the resolved RestrictOOMScoreAdj. Run calls it at every start; a
// caller supervising containerd itself calls it before launching
// "containerd --config ConfigPath".
func WriteFiles(c Config, restrictOOMScoreAdj bool) error {
	hosts, err := HostsFiles(c.Registries)
	if err != nil {
		return fmt.Errorf("containerd: %w", err)
	}
	if err := WriteHostsDir(c.HostsDir(), hosts); err != nil {
		return err
	}
	data, err := Render(c, restrictOOMScoreAdj)
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.ConfigPath(), data, 0o644); err != nil {
		return fmt.Errorf("containerd: %w", err)
	}
	return nil
}
