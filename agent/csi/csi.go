// Package csi is the agent's side of CSI: it finds the node's CSI drivers
// through the kubelet plugin-registration protocol (berth/csi/registration
// watching <root-dir>/plugins_registry), hands their node clients to the
// volume manager (it implements volumes.CSIDrivers), records them on the
// node's CSINode object and the Node's topology labels when joined to an API
// server (csinode.go), and exports the published volumes' NodeGetVolumeStats
// as the kubelet_volume_stats_* metrics (stats.go).
//
// The agent uses it like this:
//
//	m, _ := csi.New(csi.Config{RootDir, NodeName, Client, Registerer, Logger})
//	volumes.Config{CSI: m, …}
//	go m.Run(ctx)
package csi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"

	"berth/agent/volumes"
	"berth/csi/nodeclient"
	"berth/csi/registration"
	"berth/internal/errdefs"
)

// DefaultStatsCacheTTL is how long a volume's NodeGetVolumeStats answer is
// served before the driver is asked again (the kubelet computes volume
// stats once a minute too).
const DefaultStatsCacheTTL = time.Minute

// Config configures a Manager.
type Config struct {
	// RootDir is the agent's root directory; drivers register through
	// sockets in <RootDir>/plugins_registry. Required, absolute.
	RootDir string
	// NodeName is the node's name: the CSINode object's and the Node's.
	// Required.
	NodeName string
	// Client is the API client; nil on a standalone node (no CSINode).
	Client kubernetes.Interface
	// Registerer gets the kubelet_volume_stats_* metrics of the CSI
	// volumes published under RootDir; nil: no metrics.
	Registerer prometheus.Registerer
	// StatsCacheTTL: see DefaultStatsCacheTTL (the default).
	StatsCacheTTL time.Duration
	// RegistrationResync is how often plugins_registry is rescanned
	// without a filesystem event (registration's default when zero).
	RegistrationResync time.Duration
	// Logger; default discards.
	Logger *slog.Logger
}

func (c *Config) validate() error {
	var errs []error
	if c.RootDir == "" || !filepath.IsAbs(c.RootDir) {
		errs = append(errs, fmt.Errorf("agent csi: Config.RootDir %q: must be an absolute path: %w", c.RootDir, errdefs.ErrInvalidArgument))
	}
	if c.NodeName == "" {
		errs = append(errs, fmt.Errorf("agent csi: Config.NodeName: is required: %w", errdefs.ErrInvalidArgument))
	}
	if c.StatsCacheTTL < 0 {
		errs = append(errs, fmt.Errorf("agent csi: Config.StatsCacheTTL %s: must not be negative: %w", c.StatsCacheTTL, errdefs.ErrInvalidArgument))
	}
	if c.StatsCacheTTL == 0 {
		c.StatsCacheTTL = DefaultStatsCacheTTL
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return errors.Join(errs...)
}

// Manager runs the plugin registration watcher and keeps the CSINode
// object in step with it.
type Manager struct {
	cfg      Config
	registry *registration.Registry
	stats    *statsCollector
}

var _ volumes.CSIDrivers = (*Manager)(nil)

// New validates cfg, registers the volume stats metrics with
// cfg.Registerer and returns a Manager; Run starts it.
func New(cfg Config) (*Manager, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	reg, err := registration.New(registration.Config{
		Dir:          filepath.Join(cfg.RootDir, registration.DirName),
		ResyncPeriod: cfg.RegistrationResync,
		Logger:       cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("agent csi: %w", err)
	}
	m := &Manager{cfg: cfg, registry: reg}
	if cfg.Registerer != nil {
		m.stats = newStatsCollector(cfg.RootDir, m, cfg.StatsCacheTTL, cfg.Logger)
		if err := cfg.Registerer.Register(m.stats); err != nil {
			return nil, fmt.Errorf("agent csi: register volume stats metrics: %w", err)
		}
	}
	return m, nil
}

// CSIClient returns the node client of the registered driver name; it
// implements volumes.CSIDrivers.
func (m *Manager) CSIClient(driver string) (*nodeclient.Client, bool) {
	return m.registry.CSIClient(driver)
}

// Drivers returns the registered drivers, sorted by name.
func (m *Manager) Drivers() []registration.Driver { return m.registry.Drivers() }

// Run watches plugins_registry and, joined, keeps the CSINode object and
// the Node's CSI annotation and topology labels up to date, until ctx ends.
func (m *Manager) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	synced := make(chan struct{})
	if m.cfg.Client != nil {
		go func() {
			defer close(synced)
			m.syncCSINodeLoop(ctx)
		}()
	} else {
		close(synced)
	}
	err := m.registry.Run(ctx)
	cancel()
	<-synced
	return err
}
