// Package registrar is the plugin side of the kubelet plugin-registration
// protocol (k8s.io/kubelet pluginregistration v1), as node-driver-registrar
// does it for a CSI driver: it serves the Registration service on a socket in
// the agent's plugins_registry directory, answers GetInfo with the driver's
// name, CSI endpoint and versions, and records what the agent reports through
// NotifyRegistrationStatus.
package registrar

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"berth/internal/errdefs"
	"berth/internal/unixsock"
)

// Config configures a registration server.
type Config struct {
	// SocketPath is where to serve, conventionally <plugins_registry>/<driver>-reg.sock. Required.
	SocketPath string
	// DriverName is the CSI driver's name. Required.
	DriverName string
	// Endpoint is the absolute path of the driver's CSI socket. Required.
	Endpoint string
	// Versions are the CSI versions the driver supports, e.g. ["1.0.0"]. Required.
	Versions []string
	// Logger defaults to a logger that discards.
	Logger *slog.Logger
}

// Validate checks the config and fills in defaults.
func (c *Config) Validate() error {
	var errs []error
	if c.SocketPath == "" || !filepath.IsAbs(c.SocketPath) {
		errs = append(errs, fmt.Errorf("registration socket path %q: must be an absolute path: %w", c.SocketPath, errdefs.ErrInvalidArgument))
	}
	if c.DriverName == "" {
		errs = append(errs, fmt.Errorf("driver name: is required: %w", errdefs.ErrInvalidArgument))
	}
	if c.Endpoint == "" || !filepath.IsAbs(c.Endpoint) {
		errs = append(errs, fmt.Errorf("endpoint %q: must be the absolute path of the CSI socket: %w", c.Endpoint, errdefs.ErrInvalidArgument))
	}
	if len(c.Versions) == 0 {
		errs = append(errs, fmt.Errorf("versions: at least one is required: %w", errdefs.ErrInvalidArgument))
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return errors.Join(errs...)
}

// Status is the last registration status the agent reported.
type Status struct {
	// Reported is false until the agent has called NotifyRegistrationStatus.
	Reported bool
	// Registered is the agent's verdict.
	Registered bool
	// Error is the agent's reason when Registered is false.
	Error string
}

// Server serves the Registration service.
type Server struct {
	registerapi.UnimplementedRegistrationServer

	cfg Config

	mu      sync.Mutex
	status  Status
	changed chan struct{} // closed and replaced on every status report
}

// New validates cfg and returns a server; Run serves it.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("registrar config: %w", err)
	}
	return &Server{cfg: cfg, changed: make(chan struct{})}, nil
}

// SocketPath is where the server listens.
func (s *Server) SocketPath() string { return s.cfg.SocketPath }

// Run serves until ctx ends, then removes the socket (which tells the agent
// the plugin is gone).
func (s *Server) Run(ctx context.Context) error {
	lis, err := unixsock.Listen(s.cfg.SocketPath)
	if err != nil {
		return fmt.Errorf("registrar: %w", err)
	}
	srv := grpc.NewServer()
	registerapi.RegisterRegistrationServer(srv, s)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(lis) }()
	s.cfg.Logger.Info("registration socket serving", "socket", s.cfg.SocketPath, "driver", s.cfg.DriverName)
	select {
	case <-ctx.Done():
		// Remove the socket first, so the agent sees the plugin go even
		// while a call is still draining.
		_ = os.Remove(s.cfg.SocketPath)
		srv.GracefulStop()
		return nil
	case err := <-errc:
		_ = os.Remove(s.cfg.SocketPath)
		return fmt.Errorf("registrar: serve: %w", err)
	}
}

// GetInfo tells the agent what kind of plugin this is and where its CSI endpoint is.
func (s *Server) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{
		Type:              registerapi.CSIPlugin,
		Name:              s.cfg.DriverName,
		Endpoint:          s.cfg.Endpoint,
		SupportedVersions: s.cfg.Versions,
	}, nil
}

// NotifyRegistrationStatus records the agent's verdict.
func (s *Server) NotifyRegistrationStatus(_ context.Context, st *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if st.GetPluginRegistered() {
		s.cfg.Logger.Info("registered with the agent", "driver", s.cfg.DriverName)
	} else {
		s.cfg.Logger.Error("the agent refused the registration", "driver", s.cfg.DriverName, "err", st.GetError())
	}
	s.mu.Lock()
	s.status = Status{Reported: true, Registered: st.GetPluginRegistered(), Error: st.GetError()}
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	return &registerapi.RegistrationStatusResponse{}, nil
}

// Status returns the last reported status and a channel closed at the next report.
func (s *Server) Status() (Status, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status, s.changed
}
