// Package eviction holds the decisions of node-pressure eviction, as the
// kubelet's eviction manager makes them: the eviction thresholds
// (--eviction-hard/--eviction-soft statements), the signals observed in a
// stats Summary, which thresholds are met, and the order in which pods are
// evicted for each signal. All of it is pure; acting on it (evicting pods,
// reclaiming node resources first, the pressure conditions and taints) is
// the caller's.
package eviction

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"berth/internal/errdefs"
)

// Signal is an eviction signal.
type Signal string

// The signals berth observes, upstream's names.
const (
	SignalMemoryAvailable   Signal = "memory.available"
	SignalNodeFsAvailable   Signal = "nodefs.available"
	SignalNodeFsInodesFree  Signal = "nodefs.inodesFree"
	SignalImageFsAvailable  Signal = "imagefs.available"
	SignalImageFsInodesFree Signal = "imagefs.inodesFree"
	SignalPIDAvailable      Signal = "pid.available"
)

var signals = map[Signal]bool{
	SignalMemoryAvailable: true, SignalNodeFsAvailable: true, SignalNodeFsInodesFree: true,
	SignalImageFsAvailable: true, SignalImageFsInodesFree: true, SignalPIDAvailable: true,
}

// Value is a threshold's amount: a quantity, or a percentage (0–1) of the
// signal's capacity.
type Value struct {
	Quantity   *resource.Quantity
	Percentage float64
}

// Of is the value as a quantity, given the signal's capacity.
func (v Value) Of(capacity int64) int64 {
	if v.Quantity != nil {
		return v.Quantity.Value()
	}
	return int64(float64(capacity) * v.Percentage)
}

// Threshold is met when its signal's available amount falls below Value.
type Threshold struct {
	Signal Signal
	Value  Value
	// GracePeriod is how long a soft threshold must be met before pods are
	// evicted; 0 for hard thresholds.
	GracePeriod time.Duration
	// MinReclaim is how much more than Value to reclaim once met.
	MinReclaim *Value
}

// DefaultHard are the kubelet's default hard thresholds on Linux.
func DefaultHard() map[string]string {
	return map[string]string{"memory.available": "100Mi", "nodefs.available": "10%", "nodefs.inodesFree": "5%", "imagefs.available": "15%"}
}

// Parse reads threshold statements as the kubelet's flags give them
// (signal → "100Mi" or "10%"): hard ones, soft ones with their grace
// periods, and minimum reclaims; errors in upstream's words. Thresholds of
// 0% and 100% are ignored, as upstream.
func Parse(hard, soft, softGracePeriod, minReclaim map[string]string) ([]Threshold, error) {
	out, err := parseStatements(hard)
	if err != nil {
		return nil, err
	}
	softs, err := parseStatements(soft)
	if err != nil {
		return nil, err
	}
	graces := map[Signal]time.Duration{}
	for s, v := range softGracePeriod {
		if !signals[Signal(s)] {
			return nil, unsupported(s)
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", err, errdefs.ErrInvalidArgument)
		}
		if d < 0 {
			return nil, fmt.Errorf("invalid eviction grace period specified: %v, must be a positive value: %w", v, errdefs.ErrInvalidArgument)
		}
		graces[Signal(s)] = d
	}
	for _, t := range softs {
		g, ok := graces[t.Signal]
		if !ok {
			return nil, fmt.Errorf("grace period must be specified for the soft eviction threshold %v: %w", t.Signal, errdefs.ErrInvalidArgument)
		}
		t.GracePeriod = g
		out = append(out, t)
	}
	for s, v := range minReclaim {
		if !signals[Signal(s)] {
			return nil, unsupported(s)
		}
		val, err := parseMinReclaim(Signal(s), v)
		if err != nil {
			return nil, err
		}
		for i := range out {
			if out[i].Signal == Signal(s) {
				out[i].MinReclaim = &val
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Signal < out[j].Signal })
	return out, nil
}

func unsupported(s string) error {
	return fmt.Errorf("unsupported eviction signal %v: %w", s, errdefs.ErrInvalidArgument)
}

func parseStatements(statements map[string]string) ([]Threshold, error) {
	var out []Threshold
	for s, v := range statements {
		signal := Signal(s)
		if !signals[signal] {
			return nil, unsupported(s)
		}
		if strings.HasSuffix(v, "%") {
			if v == "0%" || v == "100%" {
				continue
			}
			p, err := percentage(v)
			if err != nil {
				return nil, err
			}
			if p < 0 {
				return nil, fmt.Errorf("eviction percentage threshold %v must be >= 0%%: %s: %w", signal, v, errdefs.ErrInvalidArgument)
			}
			if p > 1 {
				return nil, fmt.Errorf("eviction percentage threshold %v must be <= 100%%: %s: %w", signal, v, errdefs.ErrInvalidArgument)
			}
			out = append(out, Threshold{Signal: signal, Value: Value{Percentage: p}})
			continue
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", err, errdefs.ErrInvalidArgument)
		}
		if q.Sign() <= 0 {
			return nil, fmt.Errorf("eviction threshold %v must be positive: %s: %w", signal, &q, errdefs.ErrInvalidArgument)
		}
		out = append(out, Threshold{Signal: signal, Value: Value{Quantity: &q}})
	}
	return out, nil
}

func parseMinReclaim(signal Signal, v string) (Value, error) {
	if strings.HasSuffix(v, "%") {
		p, err := percentage(v)
		if err != nil {
			return Value{}, err
		}
		if p < 0 {
			return Value{}, fmt.Errorf("eviction percentage minimum reclaim %v must be positive: %s: %w", signal, v, errdefs.ErrInvalidArgument)
		}
		return Value{Percentage: p}, nil
	}
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return Value{}, fmt.Errorf("%w: %w", err, errdefs.ErrInvalidArgument)
	}
	if q.Sign() < 0 {
		return Value{}, fmt.Errorf("negative eviction minimum reclaim specified for %v: %w", signal, errdefs.ErrInvalidArgument)
	}
	return Value{Quantity: &q}, nil
}

func percentage(v string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 32)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", err, errdefs.ErrInvalidArgument)
	}
	return f / 100, nil
}

// Observation is a signal's available amount and capacity.
type Observation struct {
	Available, Capacity int64
}

// Met returns the thresholds whose signal's available amount is below
// their value (plus their minimum reclaim when enforceMinReclaim: a
// threshold being reclaimed stays met until that much more is free).
// Signals not observed meet nothing.
func Met(thresholds []Threshold, observed map[Signal]Observation, enforceMinReclaim bool) []Threshold {
	var out []Threshold
	for _, t := range thresholds {
		o, ok := observed[t.Signal]
		if !ok {
			continue
		}
		limit := t.Value.Of(o.Capacity)
		if enforceMinReclaim && t.MinReclaim != nil {
			limit += t.MinReclaim.Of(o.Capacity)
		}
		if o.Available < limit {
			out = append(out, t)
		}
	}
	return out
}
