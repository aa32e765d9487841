package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/knftables"

	"berth/internal/errdefs"
)

// DefaultTable is the nftables table the agent's proxy owns.
const DefaultTable = "berth-proxy"

// ChunkChains bounds the services' chains one transaction rewrites (see
// Ruleset.Transactions): a full sync of thousands of services is several
// transactions of moderate size instead of one the kernel takes seconds
// to commit while holding the nftables lock.
const ChunkChains = 2000

// Config configures a Proxier.
type Config struct {
	// Client watches Services and EndpointSlices; required.
	Client kubernetes.Interface
	// Table is the ip-family nftables table the proxier owns (creates,
	// replaces, deletes on stop); default DefaultTable. Agents sharing a
	// host need distinct tables.
	Table string
	// NodeIPs are the addresses NodePorts are served on.
	NodeIPs []netip.Addr
	// PodCIDR is the node's pod subnet (see Params.PodCIDR); optional.
	PodCIDR netip.Prefix
	// NodeName is this node's (see Params.NodeName); without it the Local
	// traffic policies find no local endpoint.
	NodeName string
	// MinSyncInterval coalesces changes: syncs are at least this far apart;
	// zero is 100 ms.
	MinSyncInterval time.Duration
	// SyncPeriod is the full resync period (repairs rules changed behind
	// the proxier's back); zero is one minute.
	SyncPeriod time.Duration
	// Registerer receives kube-proxy's metrics; optional.
	Registerer prometheus.Registerer
	// HealthzBindAddress is where kube-proxy's /healthz and /livez are
	// served (host:port); empty: not served. A failure to listen is
	// logged, as kube-proxy's, and the proxy goes on.
	HealthzBindAddress string
	// KeepTableOnStop leaves the table in the kernel when Run returns (as
	// kube-proxy, which never removes its rules on exit): Services keep
	// working while the agent restarts, and the next Run resyncs the table
	// in place. False: Run deletes the table.
	KeepTableOnStop bool
	// NFT overrides the nftables interface (unit tests pass knftables'
	// fake); nil runs the nft binary on Table.
	NFT knftables.Interface
	// Logger; nil discards.
	Logger *slog.Logger
}

// Proxier programs the node's Service rules into its nftables table.
type Proxier struct {
	cfg      Config
	nft      knftables.Interface
	factory  informers.SharedInformerFactory
	services cache.SharedIndexInformer
	slices   cache.SharedIndexInformer
	changed  chan struct{}
	current  *Ruleset // the table's chains and affinity sets after the last sync; nil: unknown
	builder  Builder
	metrics  *metrics
	health   *health
	checks   *healthChecks

	triggerMu sync.Mutex
	triggers  []time.Time // EndpointSlices' last-change-trigger-times not synced yet
}

// New validates cfg and returns a Proxier; it fails if the nft binary is
// missing or the kernel lacks nf_tables.
func New(cfg Config) (*Proxier, error) {
	if cfg.Client == nil {
		return nil, fmt.Errorf("proxy config: Client is required: %w", errdefs.ErrInvalidArgument)
	}
	if cfg.Table == "" {
		cfg.Table = DefaultTable
	}
	if cfg.MinSyncInterval == 0 {
		cfg.MinSyncInterval = 100 * time.Millisecond
	}
	if cfg.SyncPeriod == 0 {
		cfg.SyncPeriod = time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	nft := cfg.NFT
	if nft == nil {
		var err error
		if nft, err = knftables.New(knftables.IPv4Family, cfg.Table); err != nil {
			return nil, fmt.Errorf("proxy: nftables unusable (the nft binary of Debian's nftables package is needed): %w", err)
		}
	}
	p := &Proxier{cfg: cfg, nft: nft, changed: make(chan struct{}, 1), metrics: newMetrics(),
		// Unhealthy when a change waits longer than two full resync
		// periods, as kube-proxy (2 × --sync-period).
		health: &health{now: time.Now, timeout: 2 * cfg.SyncPeriod}}
	p.checks = &healthChecks{addrs: nodeAddrs(cfg.NodeIPs), log: cfg.Logger, healthy: func() bool {
		ok, _, _ := p.health.healthy()
		return ok
	}}
	if cfg.Registerer != nil {
		if err := p.metrics.register(cfg.Registerer); err != nil {
			return nil, err
		}
	}
	p.factory = informers.NewSharedInformerFactory(cfg.Client, 0)
	p.services = p.factory.Core().V1().Services().Informer()
	p.slices = p.factory.Discovery().V1().EndpointSlices().Informer()
	kick := func(counter prometheus.Counter) cache.ResourceEventHandlerFuncs {
		return cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { p.changedObject(counter, o) },
			UpdateFunc: func(_, o any) { p.changedObject(counter, o) },
			DeleteFunc: func(o any) { p.changedObject(counter, nil) },
		}
	}
	if _, err := p.services.AddEventHandler(kick(p.metrics.serviceChanges)); err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	if _, err := p.slices.AddEventHandler(kick(p.metrics.endpointChanges)); err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	return p, nil
}

// nodeAddrs are the non-loopback IPv4 addresses of ips.
func nodeAddrs(ips []netip.Addr) []netip.Addr {
	var out []netip.Addr
	for _, ip := range ips {
		if ip.Is4() && !ip.IsLoopback() {
			out = append(out, ip)
		}
	}
	return out
}

// changedObject counts a change, notes an EndpointSlice's change trigger
// time (for the network programming latency) and queues a sync.
func (p *Proxier) changedObject(counter prometheus.Counter, o any) {
	counter.Inc()
	if s, ok := o.(*discoveryv1.EndpointSlice); ok {
		if t, err := time.Parse(time.RFC3339Nano, s.Annotations[v1.EndpointsLastChangeTriggerTime]); err == nil {
			p.triggerMu.Lock()
			p.triggers = append(p.triggers, t)
			p.triggerMu.Unlock()
		}
	}
	p.kick()
}

func (p *Proxier) kick() {
	p.health.queued()
	p.metrics.lastQueued.WithLabelValues(ipFamily).SetToCurrentTime()
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

// Run watches Services and EndpointSlices and keeps the table current until
// ctx ends, then deletes the table (unless cfg.KeepTableOnStop). The first sync replaces whatever the
// table held (a previous run's rules), atomically: established connections
// keep their conntrack entries across agent restarts.
func (p *Proxier) Run(ctx context.Context) error {
	log := p.cfg.Logger
	if p.cfg.HealthzBindAddress != "" {
		stop := p.serveHealthz(log)
		defer stop()
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.checks.close(ctx)
	}()
	p.factory.Start(ctx.Done())
	defer p.factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), p.services.HasSynced, p.slices.HasSynced) {
		p.cleanup(log)
		return nil
	}
	resync := time.NewTicker(p.cfg.SyncPeriod)
	defer resync.Stop()
	var retry <-chan time.Time
	p.kick()
	for {
		select {
		case <-ctx.Done():
			p.cleanup(log)
			return nil
		case <-p.changed:
		case <-resync.C:
			// A full rewrite repairs whatever changed behind our back.
			if p.current != nil {
				p.current.Rules = nil
			}
		case <-retry:
		}
		retry = nil
		if err := p.Sync(ctx); err != nil {
			if ctx.Err() != nil {
				continue
			}
			log.Error("syncing the service proxy rules failed; retrying", "table", p.cfg.Table, "err", err)
			retry = time.After(time.Second)
		}
		// Coalesce the changes arriving meanwhile into the next sync.
		select {
		case <-ctx.Done():
		case <-time.After(p.cfg.MinSyncInterval):
		}
	}
}

// serveHealthz serves HealthHandler on cfg.HealthzBindAddress until the
// returned stop is called; a failure to listen is logged.
func (p *Proxier) serveHealthz(log *slog.Logger) (stop func()) {
	l, err := net.Listen("tcp", p.cfg.HealthzBindAddress)
	if err != nil {
		log.Error("serving the service proxy's healthz failed", "addr", p.cfg.HealthzBindAddress, "err", err)
		return func() {}
	}
	srv := &http.Server{Handler: p.HealthHandler(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("the service proxy's healthz stopped", "err", err)
		}
	}()
	return func() { _ = srv.Close() }
}

// Sync writes the ruleset of the informers' current objects to the table
// in one transaction.
func (p *Proxier) Sync(ctx context.Context) error {
	start := time.Now()
	full := p.current == nil || p.current.Rules == nil
	p.triggerMu.Lock()
	triggers := p.triggers
	p.triggers = nil
	p.triggerMu.Unlock()
	defer func() {
		took := time.Since(start).Seconds()
		p.metrics.syncDuration.WithLabelValues(ipFamily).Observe(took)
		if full {
			p.metrics.fullSyncDuration.WithLabelValues(ipFamily).Observe(took)
		} else {
			p.metrics.partialSyncDuration.WithLabelValues(ipFamily).Observe(took)
		}
	}()
	if p.current == nil {
		// What a previous run (or a failed transaction) left.
		// Names only: the first transaction rewrites everything.
		p.current = &Ruleset{Chains: map[string]bool{}, AffinitySets: map[string]bool{}, EndpointMaps: map[string]bool{}}
		chains, err := p.nft.List(ctx, "chains")
		if err != nil && !knftables.IsNotFound(err) {
			return fmt.Errorf("listing the chains of table %s: %w", p.cfg.Table, err)
		}
		for _, c := range chains {
			p.current.Chains[c] = true
		}
		sets, err := p.nft.List(ctx, "sets")
		if err != nil && !knftables.IsNotFound(err) {
			return fmt.Errorf("listing the sets of table %s: %w", p.cfg.Table, err)
		}
		for _, s := range sets {
			if strings.HasPrefix(s, affinityPrefix) {
				p.current.AffinitySets[s] = true
			}
		}
		maps, err := p.nft.List(ctx, "maps")
		if err != nil && !knftables.IsNotFound(err) {
			return fmt.Errorf("listing the maps of table %s: %w", p.cfg.Table, err)
		}
		for _, m := range maps {
			if strings.HasPrefix(m, endpointsPrefix) {
				p.current.EndpointMaps[m] = true
			}
		}
	}
	var services []*v1.Service
	for _, o := range p.services.GetStore().List() {
		services = append(services, o.(*v1.Service))
	}
	var slices []*discoveryv1.EndpointSlice
	for _, o := range p.slices.GetStore().List() {
		if s := o.(*discoveryv1.EndpointSlice); labels.Set(s.Labels).Has(discoveryv1.LabelServiceName) {
			slices = append(slices, s)
		}
	}
	rs := p.builder.Build(services, slices, Params{NodeIPs: p.cfg.NodeIPs, PodCIDR: p.cfg.PodCIDR, NodeName: p.cfg.NodeName})
	txs := rs.Transactions(p.nft.NewTransaction, p.current, "service rules of the berth agent", ChunkChains)
	for i, tx := range txs {
		if err := p.nft.Run(ctx, tx); err != nil {
			p.current = nil // re-read: the table is as before, or unknown
			p.metrics.syncFailures.WithLabelValues(ipFamily).Inc()
			p.triggerMu.Lock()
			p.triggers = append(triggers, p.triggers...)
			p.triggerMu.Unlock()
			return fmt.Errorf("applying %d operations (transaction %d of %d) to table %s: %w", tx.NumOperations(), i+1, len(txs), p.cfg.Table, err)
		}
	}
	previous := p.current
	p.current = rs
	if p.cfg.NFT == nil && (previous == nil || !previous.UDP.equal(rs.UDP)) {
		p.cleanConntrack(rs)
	}
	p.health.updated(start)
	p.metrics.lastSync.WithLabelValues(ipFamily).SetToCurrentTime()
	for _, t := range triggers {
		p.metrics.programming.WithLabelValues(ipFamily).Observe(time.Since(t).Seconds())
	}
	p.metrics.noLocalEndpoints.WithLabelValues("internal", ipFamily).Set(float64(rs.NoLocalInternal))
	p.metrics.noLocalEndpoints.WithLabelValues("external", ipFamily).Set(float64(rs.NoLocalExternal))
	p.checks.sync(rs.HealthChecks)
	p.cfg.Logger.Debug("synced the service proxy rules", "table", p.cfg.Table, "services", len(services), "took", time.Since(start))
	return nil
}

// cleanConntrack deletes the conntrack entries of UDP flows to endpoints
// the services no longer have (only with the real nftables: the proxier
// then owns the kernel's service traffic).
func (p *Proxier) cleanConntrack(rs *Ruleset) {
	if len(rs.UDP) == 0 {
		return
	}
	f := staleUDPFilter{targets: rs.UDP, nodeIPs: map[netip.Addr]bool{}}
	for _, ip := range p.cfg.NodeIPs {
		f.nodeIPs[ip.Unmap()] = true
	}
	n, err := deleteStaleUDPFlows(f)
	if err != nil {
		p.cfg.Logger.Error("deleting stale UDP conntrack entries failed", "err", err)
		return
	}
	if n > 0 {
		p.cfg.Logger.Debug("deleted stale UDP conntrack entries", "entries", n)
	}
}

// cleanup deletes the proxier's table, unless cfg.KeepTableOnStop.
func (p *Proxier) cleanup(log *slog.Logger) {
	if p.cfg.KeepTableOnStop {
		log.Info("leaving the service proxy table for the next run", "table", p.cfg.Table)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := DeleteTable(ctx, p.nft); err != nil {
		log.Error("deleting the service proxy table failed", "table", p.cfg.Table, "err", err)
	}
}

// DeleteTable deletes nft's table if it exists.
func DeleteTable(ctx context.Context, nft knftables.Interface) error {
	tx := nft.NewTransaction()
	tx.Delete(&knftables.Table{})
	if err := nft.Run(ctx, tx); err != nil && !knftables.IsNotFound(err) {
		return err
	}
	return nil
}
