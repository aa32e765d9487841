// Package containerd runs the node's own containerd: a validated Config is
// rendered into containerd's config.toml (version 2) and hosts.toml files,
// and Containerd.Run supervises containerd as a child process — started,
// waited for until its CRI socket answers, stopped with SIGTERM (SIGKILL
// after a deadline) when the context ends. Run removes nothing: pods and
// images stay in Root for the next start.
package containerd

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"berth/internal/errdefs"
)

// Defaults for Config.
const (
	DefaultStreamServerAddress = "127.0.0.1"
	DefaultReadyTimeout        = time.Minute
	DefaultStopTimeout         = 15 * time.Second
	DefaultLogLevel            = "info"
)

// Config is one containerd instance. Several instances can run on a
// machine when Root, State, Socket and CNIConfDir differ (and the CNI
// configs name different bridges and subnets).
type Config struct {
	// Binary is the containerd executable; "" finds "containerd" on PATH
	// (and the sbin directories).
	Binary string
	// Dir holds config.toml, the hosts directory (certs.d), the "opt"
	// plugin dir and containerd.log; required, absolute.
	Dir string
	// Root is containerd's persistent state (images, snapshots); default Dir/root.
	Root string
	// State is containerd's runtime state; default Dir/state.
	State string
	// Socket is the gRPC (CRI) socket path; default Dir/containerd.sock.
	// Unix socket paths hold at most 107 bytes.
	Socket string
	// CNIConfDir is where containerd's CRI plugin reads the CNI config; required.
	CNIConfDir string
	// CNIBinDir is where the CNI plugins are; required.
	CNIBinDir string
	// SandboxImage is the pause image every pod sandbox runs; required.
	SandboxImage string
	// RuntimeHandlers are extra CRI runtime handlers, each runc v2 as the
	// default "runc" one, under other names: what a RuntimeClass's handler
	// names (upstream's e2e suite expects "test-handler"). DNS labels.
	RuntimeHandlers []string
	// Registries become the hosts.toml files (mirrors, TLS).
	Registries Registries
	// RestrictOOMScoreAdj makes containerd clamp oom_score_adj to its own;
	// nil detects it: true when this process lacks CAP_SYS_RESOURCE (as on
	// some VMs), where a negative oom_score_adj cannot be set.
	RestrictOOMScoreAdj *bool
	// StreamServerAddress is where exec/attach/port-forward streams are
	// served; default 127.0.0.1 (a free port is picked).
	StreamServerAddress string
	// LogLevel is containerd's log level; default "info".
	LogLevel string
	// ReadyTimeout bounds the wait for the CRI socket; default 1 min.
	ReadyTimeout time.Duration
	// StopTimeout is how long containerd gets after SIGTERM before SIGKILL;
	// default 15 s.
	StopTimeout time.Duration
	// Logger receives the supervisor's log; nil discards.
	Logger *slog.Logger
}

// maxSocketPath is sun_path's capacity less the terminating NUL.
const maxSocketPath = 107

// Validate fills the defaults and checks every field, naming the bad one;
// errors wrap errdefs.ErrInvalidArgument.
func (c *Config) Validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("containerd config: %s: %s: %w", field, fmt.Sprintf(format, args...), errdefs.ErrInvalidArgument)
	}
	if c.Dir == "" {
		return bad("Dir", "required")
	}
	for _, f := range []struct {
		name string
		val  *string
		def  string
	}{
		{"Root", &c.Root, filepath.Join(c.Dir, "root")},
		{"State", &c.State, filepath.Join(c.Dir, "state")},
		{"Socket", &c.Socket, filepath.Join(c.Dir, "containerd.sock")},
	} {
		if *f.val == "" {
			*f.val = f.def
		}
	}
	for _, f := range []struct{ name, val string }{
		{"Dir", c.Dir}, {"Root", c.Root}, {"State", c.State}, {"Socket", c.Socket},
		{"CNIConfDir", c.CNIConfDir}, {"CNIBinDir", c.CNIBinDir},
	} {
		if f.val == "" {
			return bad(f.name, "required")
		}
		if !filepath.IsAbs(f.val) {
			return bad(f.name, "%q is not an absolute path", f.val)
		}
	}
	if len(c.Socket) > maxSocketPath {
		return bad("Socket", "%q is %d bytes; a unix socket path holds at most %d", c.Socket, len(c.Socket), maxSocketPath)
	}
	if c.SandboxImage == "" {
		return bad("SandboxImage", "required")
	}
	seen := map[string]bool{DefaultRuntimeHandler: true}
	for i, h := range c.RuntimeHandlers {
		if msgs := validation.IsDNS1123Label(h); len(msgs) > 0 {
			return bad(fmt.Sprintf("RuntimeHandlers[%d]", i), "%q: %s", h, strings.Join(msgs, "; "))
		}
		if seen[h] {
			return bad(fmt.Sprintf("RuntimeHandlers[%d]", i), "%q is already a runtime handler", h)
		}
		seen[h] = true
	}
	if err := c.Registries.Validate(); err != nil {
		return fmt.Errorf("containerd config: Registries: %w", err)
	}
	if c.StreamServerAddress == "" {
		c.StreamServerAddress = DefaultStreamServerAddress
	}
	if c.LogLevel == "" {
		c.LogLevel = DefaultLogLevel
	}
	switch c.LogLevel {
	case "trace", "debug", "info", "warn", "error", "fatal", "panic":
	default:
		return bad("LogLevel", "%q is not one of trace, debug, info, warn, error, fatal, panic", c.LogLevel)
	}
	if c.ReadyTimeout == 0 {
		c.ReadyTimeout = DefaultReadyTimeout
	}
	if c.StopTimeout == 0 {
		c.StopTimeout = DefaultStopTimeout
	}
	if c.ReadyTimeout < 0 {
		return bad("ReadyTimeout", "%s is negative", c.ReadyTimeout)
	}
	if c.StopTimeout < 0 {
		return bad("StopTimeout", "%s is negative", c.StopTimeout)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Endpoint is the CRI endpoint of the instance, "unix://" + Socket.
func (c Config) Endpoint() string { return "unix://" + c.Socket }

// HostsDir is containerd's registry config_path: Dir/certs.d.
func (c Config) HostsDir() string { return filepath.Join(c.Dir, "certs.d") }

// ConfigPath is where config.toml is written: Dir/config.toml.
func (c Config) ConfigPath() string { return filepath.Join(c.Dir, "config.toml") }
