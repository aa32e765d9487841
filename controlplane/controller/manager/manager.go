// Package manager runs berth's controllers under leader election: one
// coordination.k8s.io Lease names the active controller manager, so several
// `berth server` replicas on one etcd run each controller exactly once.
// While this manager leads, it builds a fresh shared informer factory,
// event recorder and every enabled controller, runs them, and tears them
// all down when leadership is lost (then it campaigns again).
//
// Wiring it into `berth server` (the composition root builds the clients
// from the admin rest.Config and runs the manager beside the apiserver):
//
//	client, dyn, err := manager.ClientsFor(restConfig)
//	if err != nil { return err }
//	mgr, err := manager.New(manager.Config{
//		Client: client, Dynamic: dyn,
//		Identity: hostname + "_" + instanceID, // distinct per server replica
//		NodeIPAM: nodeipam.Options{ClusterCIDR: cfg.ClusterCIDR, NodeCIDRMaskSize: cfg.NodeCIDRMaskSize},
//		NodeLifecycle: nodelifecycle.Options{GracePeriod: cfg.NodeMonitorGracePeriod, MonitorPeriod: cfg.NodeMonitorPeriod},
//		Logger: log,
//	})
//	if err != nil { return err }
//	go func() { errCh <- mgr.Run(ctx) }() // returns nil when ctx ends
//
// Deleting a namespace's content is not one of these controllers: every
// server runs the namespace controller (controller/namespace) itself.
package manager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"berth/controlplane/controller"
	"berth/controlplane/controller/cronjob"
	"berth/controlplane/controller/daemonset"
	"berth/controlplane/controller/deployment"
	"berth/controlplane/controller/disruption"
	"berth/controlplane/controller/endpoints"
	"berth/controlplane/controller/endpointslice"
	"berth/controlplane/controller/endpointslicemirroring"
	"berth/controlplane/controller/garbagecollector"
	"berth/controlplane/controller/job"
	"berth/controlplane/controller/nodeipam"
	"berth/controlplane/controller/nodelifecycle"
	"berth/controlplane/controller/podautoscaler"
	"berth/controlplane/controller/policystatus"
	"berth/controlplane/controller/replicaset"
	"berth/controlplane/controller/rootcacertpublisher"
	"berth/controlplane/controller/serviceaccount"
	"berth/controlplane/controller/servicecidr"
	"berth/controlplane/controller/statefulset"
	"berth/controlplane/controller/storageprotection"
	"berth/controlplane/controller/tokencleaner"
	"berth/controlplane/controller/ttlafterfinished"
	"berth/controlplane/controller/volume"
	"berth/controlplane/controller/volume/ephemeral"
	"berth/controlplane/leaderelect"
	"berth/internal/errdefs"
)

// Defaults for Config.
const (
	DefaultLeaseNamespace = "kube-system"
	DefaultLeaseName      = "berth-controller-manager"
	// EventComponent is the source component of the controllers' Events.
	EventComponent = "berth-controller-manager"
)

// Controllers lists every controller name the manager knows, in start order.
var Controllers = []string{
	replicaset.Name, deployment.Name, garbagecollector.Name,
	serviceaccount.Name, rootcacertpublisher.Name, nodeipam.Name, nodelifecycle.Name,
	volume.Name, ephemeral.Name, storageprotection.PVCName, storageprotection.PVName,
	endpointslice.Name, endpoints.Name,
	replicaset.ReplicationName,
	daemonset.Name,
	job.Name, ttlafterfinished.Name, cronjob.Name,
	endpointslicemirroring.Name,
	disruption.Name,
	tokencleaner.Name,
	policystatus.Name,
	servicecidr.Name,
	statefulset.Name,
	podautoscaler.Name,
}

// Config configures the manager.
type Config struct {
	// Client talks to the apiserver; required.
	Client kubernetes.Interface
	// Dynamic is the client the garbage collector watches every resource
	// with; required when the garbage collector is enabled.
	Dynamic dynamic.Interface
	// Identity names this manager in the Lease; default leaderelect.NewIdentity().
	Identity string
	// LeaseNamespace and LeaseName locate the Lease; defaults
	// DefaultLeaseNamespace, DefaultLeaseName.
	LeaseNamespace, LeaseName string
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go's leader
	// election timings (see leaderelect.Timing).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Controllers are the names (of Controllers) to run; empty runs all.
	Controllers []string
	// Workers overrides every controller's default worker count when > 0.
	Workers int
	// ResyncPeriod is the informers' resync period; 0 disables resyncs.
	ResyncPeriod time.Duration
	// NodeIPAM configures the nodeipam controller (cluster CIDR, mask size).
	NodeIPAM nodeipam.Options
	// NodeLifecycle configures the nodelifecycle controller (grace period,
	// monitor period).
	NodeLifecycle nodelifecycle.Options
	// RootCA is the cluster CA bundle the root-ca-cert-publisher puts in
	// every namespace's kube-root-ca.crt ConfigMap; without it that
	// controller is left out of the default set (and refused if named).
	RootCA []byte
	// GarbageCollector configures the garbage collector.
	GarbageCollector garbagecollector.Options
	// Logger; nil discards.
	Logger *slog.Logger
	// Clock drives the controllers (not the leader election); nil is real time.
	Clock clock.WithTicker
}

// Validate fills defaults and checks every field, naming the bad one.
func (c *Config) Validate() error {
	if c.Client == nil {
		return fmt.Errorf("controller manager config: Client is required: %w", errdefs.ErrInvalidArgument)
	}
	if c.Identity == "" {
		c.Identity = leaderelect.NewIdentity()
	}
	if c.LeaseNamespace == "" {
		c.LeaseNamespace = DefaultLeaseNamespace
	}
	if c.LeaseName == "" {
		c.LeaseName = DefaultLeaseName
	}
	timing := leaderelect.Timing{LeaseDuration: c.LeaseDuration, RenewDeadline: c.RenewDeadline, RetryPeriod: c.RetryPeriod}
	if err := timing.Validate(); err != nil {
		return fmt.Errorf("controller manager config: %w", err)
	}
	c.LeaseDuration, c.RenewDeadline, c.RetryPeriod = timing.LeaseDuration, timing.RenewDeadline, timing.RetryPeriod
	if len(c.Controllers) == 0 {
		c.Controllers = slices.Clone(Controllers)
		if len(c.RootCA) == 0 {
			c.Controllers = slices.DeleteFunc(c.Controllers, func(n string) bool { return n == rootcacertpublisher.Name })
		}
	}
	if slices.Contains(c.Controllers, rootcacertpublisher.Name) && len(c.RootCA) == 0 {
		return fmt.Errorf("controller manager config: RootCA is required by the %s controller: %w", rootcacertpublisher.Name, errdefs.ErrInvalidArgument)
	}
	for _, n := range c.Controllers {
		if !slices.Contains(Controllers, n) {
			return fmt.Errorf("controller manager config: unknown controller %q (known: %v): %w", n, Controllers, errdefs.ErrInvalidArgument)
		}
	}
	if slices.Contains(c.Controllers, garbagecollector.Name) && c.Dynamic == nil {
		return fmt.Errorf("controller manager config: Dynamic client is required by the garbage collector: %w", errdefs.ErrInvalidArgument)
	}
	if c.Workers < 0 || c.ResyncPeriod < 0 {
		return fmt.Errorf("controller manager config: Workers and ResyncPeriod must not be negative: %w", errdefs.ErrInvalidArgument)
	}
	if err := c.NodeIPAM.Validate(); err != nil {
		return fmt.Errorf("controller manager config: %w", err)
	}
	if err := c.NodeLifecycle.Validate(); err != nil {
		return fmt.Errorf("controller manager config: %w", err)
	}
	if err := c.GarbageCollector.Validate(); err != nil {
		return fmt.Errorf("controller manager config: %w", err)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	return nil
}

// Manager runs the enabled controllers while it holds the Lease.
type Manager struct {
	cfg     Config
	log     *slog.Logger
	elector *leaderelect.Elector
}

// New validates cfg.
func New(cfg Config) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger.With("component", "controller-manager")
	elector, err := leaderelect.New(leaderelect.Config{
		Client: cfg.Client, Namespace: cfg.LeaseNamespace, Name: cfg.LeaseName, Identity: cfg.Identity,
		Timing: leaderelect.Timing{LeaseDuration: cfg.LeaseDuration, RenewDeadline: cfg.RenewDeadline, RetryPeriod: cfg.RetryPeriod},
		Logger: log,
	})
	if err != nil {
		return nil, fmt.Errorf("controller manager config: %w", err)
	}
	return &Manager{cfg: cfg, log: log.With("identity", cfg.Identity), elector: elector}, nil
}

// Leading reports whether this manager currently runs the controllers.
func (m *Manager) Leading() bool { return m.elector.Leading() }

// Run campaigns for the Lease until ctx ends; each time it leads it runs
// the controllers until leadership is lost. On ctx's end the Lease is
// released so another manager takes over at once.
func (m *Manager) Run(ctx context.Context) error {
	return m.elector.Run(ctx, func(ctx context.Context) error {
		m.log.Info("leading: starting controllers", "controllers", m.cfg.Controllers)
		return m.runControllers(ctx, m.log)
	})
}

// runControllers builds and runs every enabled controller until ctx ends
// (leadership lost or shutdown). A controller that fails to build is a
// configuration error and ends the manager.
func (m *Manager) runControllers(ctx context.Context, log *slog.Logger) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	factory := informers.NewSharedInformerFactory(m.cfg.Client, m.cfg.ResyncPeriod)
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: m.cfg.Client.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	base := controller.Config{
		Client:    m.cfg.Client,
		Informers: factory,
		Recorder:  broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: EventComponent}),
		Logger:    log,
		Clock:     m.cfg.Clock,
		Workers:   m.cfg.Workers,
	}
	var runners []interface{ Run(context.Context) error }
	for _, name := range m.cfg.Controllers {
		r, err := m.build(name, base)
		if err != nil {
			return fmt.Errorf("controller manager: build %s: %w", name, err)
		}
		runners = append(runners, r)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	var wg sync.WaitGroup
	errs := make([]error, len(runners))
	for i, r := range runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.Run(ctx); err != nil {
				errs[i] = fmt.Errorf("%s: %w", m.cfg.Controllers[i], err)
				log.Error("controller failed", "controller", m.cfg.Controllers[i], "err", err)
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return errors.Join(errs...)
}

func (m *Manager) build(name string, base controller.Config) (interface{ Run(context.Context) error }, error) {
	switch name {
	case replicaset.Name:
		return replicaset.New(replicaset.Config{Config: base})
	case deployment.Name:
		return deployment.New(deployment.Config{Config: base})
	case replicaset.ReplicationName:
		return replicaset.NewReplicationManager(replicaset.Config{Config: base})
	case daemonset.Name:
		return daemonset.New(daemonset.Config{Config: base})
	case serviceaccount.Name:
		return serviceaccount.New(serviceaccount.Config{Config: base})
	case rootcacertpublisher.Name:
		return rootcacertpublisher.New(rootcacertpublisher.Config{Config: base, RootCA: m.cfg.RootCA})
	case volume.Name:
		return volume.New(volume.Config{Config: base})
	case ephemeral.Name:
		return ephemeral.New(ephemeral.Config{Config: base})
	case storageprotection.PVCName:
		return storageprotection.NewPVC(storageprotection.PVCConfig{Config: base})
	case storageprotection.PVName:
		return storageprotection.NewPV(storageprotection.PVConfig{Config: base})
	case endpoints.Name:
		return endpoints.New(endpoints.Config{Config: base})
	case endpointslice.Name:
		return endpointslice.New(endpointslice.Config{Config: base})
	case endpointslicemirroring.Name:
		return endpointslicemirroring.New(endpointslicemirroring.Config{Config: base})
	case nodeipam.Name:
		return nodeipam.New(nodeipam.Config{Config: base, Options: m.cfg.NodeIPAM})
	case nodelifecycle.Name:
		return nodelifecycle.New(nodelifecycle.Config{Config: base, Options: m.cfg.NodeLifecycle})
	case job.Name:
		return job.New(job.Config{Config: base})
	case ttlafterfinished.Name:
		return ttlafterfinished.New(ttlafterfinished.Config{Config: base})
	case cronjob.Name:
		return cronjob.New(cronjob.Config{Config: base})
	case disruption.Name:
		return disruption.New(disruption.Config{Config: base})
	case tokencleaner.Name:
		return tokencleaner.New(tokencleaner.Config{Config: base})
	case policystatus.Name:
		return policystatus.New(policystatus.Config{Config: base})
	case garbagecollector.Name:
		return garbagecollector.New(garbagecollector.Config{Config: base, Dynamic: m.cfg.Dynamic, Options: m.cfg.GarbageCollector})
	case servicecidr.Name:
		return servicecidr.New(servicecidr.Config{Config: base})
	case statefulset.Name:
		return statefulset.New(statefulset.Config{Config: base})
	case podautoscaler.Name:
		return podautoscaler.New(podautoscaler.Config{Config: base})
	}
	return nil, fmt.Errorf("unknown controller %q: %w", name, errdefs.ErrInvalidArgument)
}
