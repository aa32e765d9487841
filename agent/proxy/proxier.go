package proxy

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
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
	// Registerer receives kube-proxy's sync metrics; optional.
	Registerer prometheus.Registerer
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
	duration prometheus.Histogram
	lastSync prometheus.Gauge
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
	p := &Proxier{
		cfg: cfg, nft: nft, changed: make(chan struct{}, 1),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: "kubeproxy", Name: "sync_proxy_rules_duration_seconds",
			Help:    "SyncProxyRules latency in seconds",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}),
		lastSync: prometheus.NewGauge(prometheus.GaugeOpts{
			Subsystem: "kubeproxy", Name: "sync_proxy_rules_last_timestamp_seconds",
			Help: "The last time proxy rules were successfully synced",
		}),
	}
	if cfg.Registerer != nil {
		for _, c := range []prometheus.Collector{p.duration, p.lastSync} {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("proxy: %w", err)
			}
		}
	}
	p.factory = informers.NewSharedInformerFactory(cfg.Client, 0)
	p.services = p.factory.Core().V1().Services().Informer()
	p.slices = p.factory.Discovery().V1().EndpointSlices().Informer()
	kick := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { p.kick() },
		UpdateFunc: func(any, any) { p.kick() },
		DeleteFunc: func(any) { p.kick() },
	}
	for _, inf := range []cache.SharedIndexInformer{p.services, p.slices} {
		if _, err := inf.AddEventHandler(kick); err != nil {
			return nil, fmt.Errorf("proxy: %w", err)
		}
	}
	return p, nil
}

func (p *Proxier) kick() {
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

// Run watches Services and EndpointSlices and keeps the table current until
// ctx ends, then deletes the table. The first sync replaces whatever the
// table held (a previous run's rules), atomically: established connections
// keep their conntrack entries across agent restarts.
func (p *Proxier) Run(ctx context.Context) error {
	log := p.cfg.Logger
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

// Sync writes the ruleset of the informers' current objects to the table
// in one transaction.
func (p *Proxier) Sync(ctx context.Context) error {
	start := time.Now()
	defer func() { p.duration.Observe(time.Since(start).Seconds()) }()
	if p.current == nil {
		// What a previous run (or a failed transaction) left.
		// Names only: the first transaction rewrites everything.
		p.current = &Ruleset{Chains: map[string]bool{}, AffinitySets: map[string]bool{}}
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
	rs := Build(services, slices, Params{NodeIPs: p.cfg.NodeIPs, PodCIDR: p.cfg.PodCIDR, NodeName: p.cfg.NodeName})
	tx := p.nft.NewTransaction()
	rs.Transaction(tx, p.current, "service rules of the berth agent")
	if err := p.nft.Run(ctx, tx); err != nil {
		p.current = nil // re-read: the table is as before, or unknown
		return fmt.Errorf("applying %d operations to table %s: %w", tx.NumOperations(), p.cfg.Table, err)
	}
	p.current = rs
	p.lastSync.SetToCurrentTime()
	p.cfg.Logger.Debug("synced the service proxy rules", "table", p.cfg.Table, "services", len(services), "took", time.Since(start))
	return nil
}

// cleanup deletes the proxier's table.
func (p *Proxier) cleanup(log *slog.Logger) {
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
