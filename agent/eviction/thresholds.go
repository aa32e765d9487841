// Package eviction is the kubelet's node-pressure eviction. The decisions
// are pure: the eviction thresholds (hard ones and soft ones with grace
// periods, with minimum reclaims), the signals observed in a stats
// Summary, which thresholds are met (Met), one synchronization of the
// eviction manager's state — thresholds met for their grace period, the
// pressure conditions with their transition period (Synchronize) — the
// order in which pods are evicted for each signal (Rank) and the evicted
// pod's message (Message). Manager acts on them: it reports the pressure
// conditions to the node manager, admits pods as the kubelet does under
// pressure, reclaims unused images first for disk, and evicts one pod at a
// time through a narrow Kill function (the pod workers'). Signals and
// threshold values are agent/node's, which computes allocatable from the
// hard thresholds.
package eviction

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"berth/agent/node"
	"berth/internal/errdefs"
)

// Threshold is met when its signal's available amount falls below Value.
type Threshold struct {
	Signal node.Signal
	Value  node.Threshold
	// GracePeriod is how long a soft threshold must be met before pods are
	// evicted; 0 for hard thresholds.
	GracePeriod time.Duration
	// MinReclaim is how much more than Value to reclaim once met.
	MinReclaim *node.Threshold
}

// Thresholds combines the hard and the soft thresholds (--eviction-hard,
// --eviction-soft, as node.ParseThresholds reads them) with the soft ones'
// grace periods and the minimum reclaims. A soft threshold needs a grace
// period, as upstream.
func Thresholds(hard, soft node.Thresholds, gracePeriods map[node.Signal]time.Duration, minReclaims node.Thresholds) ([]Threshold, error) {
	var out []Threshold
	for sig, v := range hard {
		out = append(out, Threshold{Signal: sig, Value: v})
	}
	for sig, v := range soft {
		g, ok := gracePeriods[sig]
		if !ok {
			return nil, fmt.Errorf("grace period must be specified for the soft eviction threshold %v: %w", sig, errdefs.ErrInvalidArgument)
		}
		out = append(out, Threshold{Signal: sig, Value: v, GracePeriod: g})
	}
	for sig, v := range minReclaims {
		for i := range out {
			if out[i].Signal == sig {
				out[i].MinReclaim = &v
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Signal != out[j].Signal {
			return out[i].Signal < out[j].Signal
		}
		return out[i].GracePeriod < out[j].GracePeriod
	})
	return out, nil
}

// ParseGracePeriods reads --eviction-soft-grace-period,
// "memory.available=1m30s,nodefs.available=2m"; errors in upstream's words.
func ParseGracePeriods(s string) (map[node.Signal]time.Duration, error) {
	out := map[node.Signal]time.Duration{}
	err := eachStatement(s, func(sig node.Signal, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("%w: %w", err, errdefs.ErrInvalidArgument)
		}
		if d < 0 {
			return fmt.Errorf("invalid eviction grace period specified: %v, must be a positive value: %w", v, errdefs.ErrInvalidArgument)
		}
		out[sig] = d
		return nil
	})
	return out, err
}

// ParseMinimumReclaims reads --eviction-minimum-reclaim,
// "memory.available=500Mi,nodefs.available=5%"; errors in upstream's words.
func ParseMinimumReclaims(s string) (node.Thresholds, error) {
	out := node.Thresholds{}
	err := eachStatement(s, func(sig node.Signal, v string) error {
		if pct, ok := strings.CutSuffix(v, "%"); ok {
			p, err := strconv.ParseFloat(pct, 64)
			if err != nil || p < 0 || math.IsNaN(p) {
				return fmt.Errorf("eviction percentage minimum reclaim %v must be positive: %s: %w", sig, v, errdefs.ErrInvalidArgument)
			}
			out[sig] = node.Threshold{Percentage: p}
			return nil
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return fmt.Errorf("%w: %w", err, errdefs.ErrInvalidArgument)
		}
		if q.Sign() < 0 {
			return fmt.Errorf("negative eviction minimum reclaim specified for %v: %w", sig, errdefs.ErrInvalidArgument)
		}
		out[sig] = node.Threshold{Quantity: &q}
		return nil
	})
	return out, err
}

// eachStatement calls f for each "signal=value" of a comma-separated list.
func eachStatement(s string, f func(node.Signal, string) error) error {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	for _, item := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			return fmt.Errorf("eviction statement %q: want SIGNAL=VALUE: %w", item, errdefs.ErrInvalidArgument)
		}
		sig := node.Signal(strings.TrimSpace(name))
		if !sig.Valid() {
			return fmt.Errorf("unsupported eviction signal %v: %w", sig, errdefs.ErrInvalidArgument)
		}
		if err := f(sig, strings.TrimSpace(value)); err != nil {
			return err
		}
	}
	return nil
}

// Observation is a signal's available amount and capacity.
type Observation struct {
	Available, Capacity uint64
}

// Met returns the thresholds whose signal's available amount is below
// their value (plus their minimum reclaim when enforceMinReclaim: a
// threshold being reclaimed stays met until that much more is free).
// Signals not observed meet nothing.
func Met(thresholds []Threshold, observed map[node.Signal]Observation, enforceMinReclaim bool) []Threshold {
	var out []Threshold
	for _, t := range thresholds {
		o, ok := observed[t.Signal]
		if !ok {
			continue
		}
		limit := t.Value.Amount(o.Capacity)
		if enforceMinReclaim && t.MinReclaim != nil {
			limit += t.MinReclaim.Amount(o.Capacity)
		}
		if o.Available < limit {
			out = append(out, t)
		}
	}
	return out
}
