// Package driver is berth csi-local: a CSI driver (identity, controller and
// node services) whose volumes live under a root directory on this node. A
// volume is a directory, or — when a mount capability asks for fsType ext4
// and the request has a capacity — a sparse file formatted ext4 and
// loop-mounted, so the capacity is enforced. Volume metadata is persisted as
// JSON in the root directory, so a restarted driver keeps its volumes. The
// driver can also register itself with a kubelet-compatible agent through the
// plugin-registration protocol (see berth/csi/registrar).
package driver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"

	"berth/csi/registrar"
	"berth/internal/errdefs"
	"berth/internal/unixsock"
	"berth/internal/version"
)

// DefaultDriverName is the CSI driver name csi-local reports unless told otherwise.
const DefaultDriverName = "csi-local.berth.dev"

// SupportedVersions are the CSI spec versions the driver speaks, as it
// reports them in plugin registration.
var SupportedVersions = []string{"1.0.0"}

// driverNameRE is the CSI spec's rule for a plugin name (as csi-sanity checks it).
var driverNameRE = regexp.MustCompile(`^[a-zA-Z][A-Za-z0-9-._]{0,61}[a-zA-Z]$`)

// Config configures the driver. Build one, then call New.
type Config struct {
	// Endpoint is the CSI socket, "unix:///path/csi.sock" or a bare absolute path. Required.
	Endpoint string
	// RootDir holds the volumes and their metadata. Required.
	RootDir string
	// NodeID is this node's identity, reported by NodeGetInfo and used as the
	// topology value. Required.
	NodeID string
	// DriverName defaults to DefaultDriverName.
	DriverName string
	// RegistrationDir, when set, is the agent's plugin-registration directory
	// (<agent-root>/plugins_registry): the driver serves the registration
	// service on <RegistrationDir>/<DriverName>-reg.sock.
	RegistrationDir string
	// MaxVolumesPerNode is reported by NodeGetInfo; 0 means no limit.
	MaxVolumesPerNode int64
	// Logger defaults to a logger that discards.
	Logger *slog.Logger
}

// Validate checks the config and fills in defaults.
func (c *Config) Validate() error {
	if c.DriverName == "" {
		c.DriverName = DefaultDriverName
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	var errs []error
	path, err := SocketPath(c.Endpoint)
	if err != nil {
		errs = append(errs, fmt.Errorf("endpoint: %w", err))
	} else {
		c.Endpoint = path
	}
	if c.RootDir == "" {
		errs = append(errs, fmt.Errorf("root dir: is required: %w", errdefs.ErrInvalidArgument))
	} else if !filepath.IsAbs(c.RootDir) {
		errs = append(errs, fmt.Errorf("root dir %q: must be an absolute path: %w", c.RootDir, errdefs.ErrInvalidArgument))
	}
	if c.NodeID == "" {
		errs = append(errs, fmt.Errorf("node id: is required: %w", errdefs.ErrInvalidArgument))
	} else if len(c.NodeID) > 63 || strings.ContainsAny(c.NodeID, "/ \t\n") {
		errs = append(errs, fmt.Errorf("node id %q: must be at most 63 characters with no '/' or spaces (it is a topology label value): %w", c.NodeID, errdefs.ErrInvalidArgument))
	}
	if !driverNameRE.MatchString(c.DriverName) {
		errs = append(errs, fmt.Errorf("driver name %q: must be at most 63 characters, start and end with a letter, and contain only letters, digits, '-', '.', '_': %w", c.DriverName, errdefs.ErrInvalidArgument))
	}
	if c.RegistrationDir != "" {
		if !filepath.IsAbs(c.RegistrationDir) {
			errs = append(errs, fmt.Errorf("registration dir %q: must be an absolute path: %w", c.RegistrationDir, errdefs.ErrInvalidArgument))
		} else if _, err := SocketPath(c.registrationSocket()); err != nil {
			errs = append(errs, fmt.Errorf("registration dir: socket %w", err))
		}
	}
	if c.MaxVolumesPerNode < 0 {
		errs = append(errs, fmt.Errorf("max volumes per node %d: must not be negative: %w", c.MaxVolumesPerNode, errdefs.ErrInvalidArgument))
	}
	return errors.Join(errs...)
}

// MaxSocketPath is the longest path a unix socket can have on Linux
// (sun_path is 108 bytes with its terminating NUL).
const MaxSocketPath = 107

// registrationSocket is where the driver serves the registration service,
// named as node-driver-registrar names it.
func (c *Config) registrationSocket() string {
	return filepath.Join(c.RegistrationDir, c.DriverName+"-reg.sock")
}

// SocketPath turns "unix:///path" or "/path" into the socket's path.
func SocketPath(endpoint string) (string, error) {
	if endpoint == "" {
		return "", fmt.Errorf("is required: %w", errdefs.ErrInvalidArgument)
	}
	path := endpoint
	if strings.Contains(endpoint, "://") {
		scheme, rest, _ := strings.Cut(endpoint, "://")
		if scheme != "unix" {
			return "", fmt.Errorf("%q: only unix:// endpoints are supported: %w", endpoint, errdefs.ErrInvalidArgument)
		}
		path = rest
	}
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("%q: the socket path must be absolute: %w", endpoint, errdefs.ErrInvalidArgument)
	}
	path = filepath.Clean(path)
	if len(path) > MaxSocketPath {
		return "", fmt.Errorf("%q: a unix socket path can be at most %d bytes, this one has %d: %w", endpoint, MaxSocketPath, len(path), errdefs.ErrInvalidArgument)
	}
	return path, nil
}

// Driver is a running csi-local instance. It serves the CSI identity,
// controller and node services.
type Driver struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedControllerServer
	csi.UnimplementedNodeServer

	cfg   Config
	log   *slog.Logger
	store *store
	// mu serialises every operation that reads or changes volumes and mounts.
	mu sync.Mutex

	reg *registrar.Server
}

// New validates cfg, creates the root directory and loads the volumes persisted there.
func New(cfg Config) (*Driver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("csi-local config: %w", err)
	}
	st, err := openStore(cfg.RootDir)
	if err != nil {
		return nil, err
	}
	d := &Driver{cfg: cfg, log: cfg.Logger, store: st}
	if cfg.RegistrationDir != "" {
		d.reg, err = registrar.New(registrar.Config{
			SocketPath: cfg.registrationSocket(),
			DriverName: cfg.DriverName,
			Endpoint:   cfg.Endpoint,
			Versions:   SupportedVersions,
			Logger:     cfg.Logger,
		})
		if err != nil {
			return nil, err
		}
	}
	return d, nil
}

// Name is the driver's CSI name.
func (d *Driver) Name() string { return d.cfg.DriverName }

// Endpoint is the path of the driver's CSI socket.
func (d *Driver) Endpoint() string { return d.cfg.Endpoint }

// NodeID is the node the driver serves (its CSI node ID).
func (d *Driver) NodeID() string { return d.cfg.NodeID }

// TopologyKey is the topology segment key whose value is the node ID.
func (d *Driver) TopologyKey() string { return TopologyKey(d.cfg.DriverName) }

// TopologyKey is the topology key a csi-local driver of that name uses.
func TopologyKey(driverName string) string { return "topology." + driverName + "/node" }

// Registration is the registration server's view of what the agent told it,
// or nil when the driver runs without a registration dir.
func (d *Driver) Registration() *registrar.Server { return d.reg }

// Run serves the CSI services (and the registration service, if
// configured) until ctx ends. The sockets are removed on return.
func (d *Driver) Run(ctx context.Context) error {
	lis, err := unixsock.Listen(d.cfg.Endpoint)
	if err != nil {
		return fmt.Errorf("csi-local: %w", err)
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(d.logCalls))
	csi.RegisterIdentityServer(srv, d)
	csi.RegisterControllerServer(srv, d)
	csi.RegisterNodeServer(srv, d)

	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(lis) }()
	d.log.Info("csi-local serving", "driver", d.cfg.DriverName, "endpoint", d.cfg.Endpoint, "node", d.cfg.NodeID, "version", version.String())

	regCtx, stopReg := context.WithCancel(ctx)
	defer stopReg()
	regDone := make(chan struct{})
	if d.reg != nil {
		go func() {
			defer close(regDone)
			if err := d.reg.Run(regCtx); err != nil {
				errc <- err
			}
		}()
	} else {
		close(regDone)
	}

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
	}
	// Deregister first (the registration socket goes), then stop serving CSI.
	stopReg()
	<-regDone
	srv.GracefulStop()
	_ = os.Remove(d.cfg.Endpoint)
	return runErr
}

// logCalls logs each CSI call and its outcome at debug level (failures at info).
func (d *Driver) logCalls(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if err != nil {
		d.log.Info("csi call failed", "method", info.FullMethod, "err", err)
	} else {
		d.log.Debug("csi call", "method", info.FullMethod)
	}
	return resp, err
}
