package metricsapi

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"

	"berth/internal/errdefs"
)

// DefaultResolution is how often nodes are scraped, metrics-server's
// --metric-resolution.
const DefaultResolution = 15 * time.Second

// maxScrapeBytes bounds one node's answer.
const maxScrapeBytes = 16 << 20

// Config configures a Scraper. Nodes, Address and Transport are required.
type Config struct {
	// Nodes lists the nodes to scrape.
	Nodes func(ctx context.Context) ([]corev1.Node, error)
	// Address is host:port of a node's agent API ("" when it has none).
	Address func(*corev1.Node) string
	// Transport carries the requests with the apiserver's client identity
	// towards node agents.
	Transport http.RoundTripper
	// Resolution is the scrape interval; default DefaultResolution.
	Resolution time.Duration
	// Logger; default discards.
	Logger *slog.Logger
}

// Scraper scrapes the nodes and serves what it learnt.
type Scraper struct {
	cfg    Config
	client *http.Client
	store  *store
}

// NewScraper validates cfg and returns a scraper; Run scrapes.
func NewScraper(cfg Config) (*Scraper, error) {
	switch {
	case cfg.Nodes == nil:
		return nil, fmt.Errorf("metricsapi: Config.Nodes is required: %w", errdefs.ErrInvalidArgument)
	case cfg.Address == nil:
		return nil, fmt.Errorf("metricsapi: Config.Address is required: %w", errdefs.ErrInvalidArgument)
	case cfg.Transport == nil:
		return nil, fmt.Errorf("metricsapi: Config.Transport is required: %w", errdefs.ErrInvalidArgument)
	case cfg.Resolution < 0:
		return nil, fmt.Errorf("metricsapi: Config.Resolution %s: must not be negative: %w", cfg.Resolution, errdefs.ErrInvalidArgument)
	}
	if cfg.Resolution == 0 {
		cfg.Resolution = DefaultResolution
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	// A scrape that takes longer than the interval is abandoned.
	return &Scraper{cfg: cfg, client: &http.Client{Transport: cfg.Transport, Timeout: cfg.Resolution}, store: newStore()}, nil
}

// Run scrapes every node at once and then every Resolution until ctx ends.
func (s *Scraper) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.Resolution)
	defer t.Stop()
	for {
		s.ScrapeAll(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// ScrapeAll scrapes every node once, in parallel.
func (s *Scraper) ScrapeAll(ctx context.Context) {
	nodes, err := s.cfg.Nodes(ctx)
	if err != nil {
		s.cfg.Logger.Warn("listing nodes to scrape failed", "err", err)
		return
	}
	names := map[string]bool{}
	var wg sync.WaitGroup
	for i := range nodes {
		node := &nodes[i]
		names[node.Name] = true
		wg.Go(func() {
			b, err := s.scrape(ctx, node)
			if err != nil {
				s.cfg.Logger.Debug("scraping a node's resource metrics failed", "node", node.Name, "err", err)
				return
			}
			s.store.record(node.Name, b)
		})
	}
	wg.Wait()
	s.store.retain(names)
}

// scrape fetches and parses a node's /metrics/resource.
func (s *Scraper) scrape(ctx context.Context, node *corev1.Node) (batch, error) {
	addr := s.cfg.Address(node)
	if addr == "" {
		return batch{}, fmt.Errorf("node %s has no address", node.Name)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics/resource", nil)
	if err != nil {
		return batch{}, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := s.client.Do(req)
	if err != nil {
		return batch{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return batch{}, fmt.Errorf("GET /metrics/resource on %s: %s", addr, resp.Status)
	}
	return parseResource(io.LimitReader(resp.Body, maxScrapeBytes), time.Now())
}

// parseResource reads the kubelet's resource metrics; series without a
// timestamp are taken as of now.
func parseResource(r io.Reader, now time.Time) (batch, error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return batch{}, fmt.Errorf("parsing resource metrics: %w", err)
	}
	b := batch{containers: map[containerKey]point{}, started: map[containerKey]time.Time{}}
	at := func(m *dto.Metric) time.Time {
		if m.TimestampMs != nil {
			return time.UnixMilli(m.GetTimestampMs())
		}
		return now
	}
	for _, m := range fams["node_cpu_usage_seconds_total"].GetMetric() {
		b.node.at, b.node.cpu, b.node.hasCPU = at(m), m.GetCounter().GetValue(), true
	}
	for _, m := range fams["node_memory_working_set_bytes"].GetMetric() {
		b.node.memory, b.node.hasMemory = m.GetGauge().GetValue(), true
		if b.node.at.IsZero() {
			b.node.at = at(m)
		}
	}
	key := func(m *dto.Metric) containerKey {
		var k containerKey
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "namespace":
				k.namespace = l.GetValue()
			case "pod":
				k.pod = l.GetValue()
			case "container":
				k.container = l.GetValue()
			}
		}
		return k
	}
	for _, m := range fams["container_cpu_usage_seconds_total"].GetMetric() {
		k := key(m)
		p := b.containers[k]
		p.at, p.cpu, p.hasCPU = at(m), m.GetCounter().GetValue(), true
		b.containers[k] = p
	}
	for _, m := range fams["container_memory_working_set_bytes"].GetMetric() {
		k := key(m)
		p := b.containers[k]
		p.memory, p.hasMemory = m.GetGauge().GetValue(), true
		if p.at.IsZero() {
			p.at = at(m)
		}
		b.containers[k] = p
	}
	for _, m := range fams["container_start_time_seconds"].GetMetric() {
		v := m.GetGauge().GetValue()
		b.started[key(m)] = time.Unix(0, int64(v*1e9))
	}
	return b, nil
}
