// Package pleg is the pod lifecycle event generator: it relists the runtime
// into the runtime cache (agent/podruntime.Cache) every period (every second
// by default), compares each pod's sandboxes and containers with the previous
// relist, and reports the pods that changed, so their workers sync — reading
// the cache, not the runtime — within a period of a container exiting. Where
// the runtime streams CRI container events (containerd 1.7+; not 1.6), each
// event relists at once and the periodic relist only backs them up.
package pleg

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"berth/agent/metrics"
	"berth/agent/podruntime"
	"berth/agent/podstate"
	"berth/cri"
	"berth/internal/errdefs"
)

// Config configures a PLEG.
type Config struct {
	// Cache relists the runtime and keeps what it saw for the pod
	// workers; required.
	Cache *podruntime.Cache
	// CRI, when set, is asked for container events.
	CRI *cri.Client
	// Period of the relist; default 1 s.
	Period time.Duration
	// Changed is called with each pod whose runtime state changed; required.
	Changed func(uid types.UID)
	// Relisted is called after every relist with every pod the runtime
	// holds (for adoption and orphan clean-up); optional. It must not keep
	// the map.
	Relisted func(pods map[types.UID]*podstate.Pod)
	// Metrics gets the relist duration and interval and the running pods
	// and containers each relist finds; nil: none.
	Metrics *metrics.Metrics
	Logger  *slog.Logger
}

// PLEG detects runtime changes.
type PLEG struct {
	cfg  Config
	last map[types.UID]string
	kick chan struct{} // a container event arrived: relist now
}

// New validates cfg and returns a PLEG; Run starts it.
func New(cfg Config) (*PLEG, error) {
	if cfg.Cache == nil || cfg.Changed == nil {
		return nil, fmt.Errorf("pleg: Config.Cache and Config.Changed are required: %w", errdefs.ErrInvalidArgument)
	}
	if cfg.Period <= 0 {
		cfg.Period = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &PLEG{cfg: cfg, last: map[types.UID]string{}, kick: make(chan struct{}, 1)}, nil
}

// Run relists until ctx ends.
func (p *PLEG) Run(ctx context.Context) error {
	if p.cfg.CRI != nil {
		go p.events(ctx)
	}
	t := time.NewTicker(p.cfg.Period)
	defer t.Stop()
	for {
		if err := p.Relist(ctx); err != nil && ctx.Err() == nil {
			p.cfg.Logger.Warn("relisting the runtime failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-p.kick:
		}
	}
}

// Relist lists the runtime once into the cache and reports what changed
// since the last time.
func (p *PLEG) Relist(ctx context.Context) error {
	start := time.Now()
	pods, err := p.cfg.Cache.Relist(ctx)
	if err != nil {
		return err
	}
	p.record(start, pods)
	now := make(map[types.UID]string, len(pods))
	for uid, pod := range pods {
		now[uid] = fingerprint(pod)
	}
	for uid, fp := range now {
		if p.last[uid] != fp {
			p.cfg.Changed(uid)
		}
	}
	for uid := range p.last {
		if _, ok := now[uid]; !ok {
			p.cfg.Changed(uid)
		}
	}
	p.last = now
	if p.cfg.Relisted != nil {
		p.cfg.Relisted(pods)
	}
	return nil
}

// record gives the relist's timing and what runs to the metrics.
func (p *PLEG) record(start time.Time, pods map[types.UID]*podstate.Pod) {
	if p.cfg.Metrics == nil {
		return
	}
	running := 0
	containers := map[string]int{}
	for _, pod := range pods {
		if slices.ContainsFunc(pod.Sandboxes, func(s podstate.Sandbox) bool { return s.Ready }) {
			running++
		}
		for _, c := range pod.Containers {
			containers[c.State.String()]++
		}
	}
	p.cfg.Metrics.Relisted(start, time.Since(start), running, containers)
}

// fingerprint is a pod's sandboxes and containers with their states; it
// changes whenever one appears, goes or changes state.
func fingerprint(p *podstate.Pod) string {
	parts := make([]string, 0, len(p.Sandboxes)+len(p.Containers))
	for _, s := range p.Sandboxes {
		parts = append(parts, fmt.Sprintf("s:%s:%t:%s", s.ID, s.Ready, strings.Join(s.IPs, ",")))
	}
	for _, c := range p.Containers {
		parts = append(parts, fmt.Sprintf("c:%s:%d", c.ID, c.State))
	}
	slices.Sort(parts)
	return strings.Join(parts, ";")
}

// events relists at once on each container event, when the runtime has
// them: the relist fills the cache and reports the pods that changed.
func (p *PLEG) events(ctx context.Context) {
	ch, err := p.cfg.CRI.GetContainerEvents(ctx)
	if errors.Is(err, errdefs.ErrUnimplemented) {
		p.cfg.Logger.Info("the runtime has no container events; relisting only", "period", p.cfg.Period)
		return
	}
	if err != nil {
		p.cfg.Logger.Warn("container events unavailable; relisting only", "err", err)
		return
	}
	for range ch {
		select {
		case p.kick <- struct{}{}:
		default:
		}
	}
}
