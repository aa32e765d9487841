package eviction

import (
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"berth/agent/node"
)

// DefaultPressureTransitionPeriod is how long a pressure condition stays
// true after its threshold was last met, the kubelet's
// --eviction-pressure-transition-period.
const DefaultPressureTransitionPeriod = 5 * time.Minute

// State is what the eviction manager remembers between two
// synchronizations; the zero State is the start.
type State struct {
	// Met are the thresholds met, grace periods passed, at the last
	// synchronization: they stay met until their minimum reclaim is free.
	Met []Threshold
	// FirstObserved is when each threshold met now (grace periods aside)
	// was first seen met.
	FirstObserved map[Threshold]time.Time
	// ConditionObserved is when each pressure condition was last seen.
	ConditionObserved map[v1.NodeConditionType]time.Time
}

// Decision is what a synchronization concluded.
type Decision struct {
	// Conditions are the node's pressure conditions now: those seen within
	// the transition period, sorted.
	Conditions []v1.NodeConditionType
	// Met are the thresholds met whose grace periods passed, the one to
	// reclaim first.
	Met []Threshold
	// Reclaim is the threshold to act on (Met's first), nil when none is.
	Reclaim *Threshold
	// Resource is what Reclaim reclaims: memory, ephemeral-storage,
	// inodes or pids.
	Resource v1.ResourceName
}

// conditionOf maps each signal to the node condition its pressure sets.
var conditionOf = map[node.Signal]v1.NodeConditionType{
	node.SignalMemoryAvailable:   v1.NodeMemoryPressure,
	node.SignalNodeFsAvailable:   v1.NodeDiskPressure,
	node.SignalNodeFsInodesFree:  v1.NodeDiskPressure,
	node.SignalImageFsAvailable:  v1.NodeDiskPressure,
	node.SignalImageFsInodesFree: v1.NodeDiskPressure,
	node.SignalPIDAvailable:      v1.NodePIDPressure,
}

// ResourcePIDs is what pid.available reclaims; nothing requests it.
const ResourcePIDs v1.ResourceName = "pids"

// resourceOf maps each signal to the resource it reclaims.
var resourceOf = map[node.Signal]v1.ResourceName{
	node.SignalMemoryAvailable:   v1.ResourceMemory,
	node.SignalNodeFsAvailable:   v1.ResourceEphemeralStorage,
	node.SignalNodeFsInodesFree:  resourceInodes,
	node.SignalImageFsAvailable:  v1.ResourceEphemeralStorage,
	node.SignalImageFsInodesFree: resourceInodes,
	node.SignalPIDAvailable:      ResourcePIDs,
}

// Synchronize is one step of the kubelet's eviction manager, pure: from the
// previous state, the configured thresholds and the signals observed now,
// it returns the next state and what to do.
//
//  1. The thresholds met now, and those met before whose minimum reclaim is
//     not yet free, are met.
//  2. Each keeps the time it was first seen met; the pressure conditions
//     they set are seen now, and a condition stays for the transition
//     period after it was last seen (so a node does not flap).
//  3. Those met for at least their grace period (none for a hard one) are
//     the ones to act on: memory first, then in configuration order.
func Synchronize(st State, thresholds []Threshold, observed map[node.Signal]Observation, now time.Time, transition time.Duration) (State, Decision) {
	met := Met(thresholds, observed, false)
	for _, t := range Met(st.Met, observed, true) {
		if !slices.Contains(met, t) {
			met = append(met, t)
		}
	}
	next := State{FirstObserved: map[Threshold]time.Time{}, ConditionObserved: map[v1.NodeConditionType]time.Time{}}
	for _, t := range met {
		at, ok := st.FirstObserved[t]
		if !ok {
			at = now
		}
		next.FirstObserved[t] = at
		next.ConditionObserved[conditionOf[t.Signal]] = now
	}
	var d Decision
	for c, at := range st.ConditionObserved {
		if _, seen := next.ConditionObserved[c]; !seen {
			next.ConditionObserved[c] = at
		}
	}
	for c, at := range next.ConditionObserved {
		if now.Sub(at) < transition {
			d.Conditions = append(d.Conditions, c)
		} else {
			delete(next.ConditionObserved, c) // forgotten once it passed
		}
	}
	slices.Sort(d.Conditions)
	for _, t := range met {
		if now.Sub(next.FirstObserved[t]) >= t.GracePeriod {
			d.Met = append(d.Met, t)
		}
	}
	// Memory first, as upstream's byEvictionPriority; the rest as configured.
	slices.SortStableFunc(d.Met, func(a, b Threshold) int {
		am, bm := a.Signal == node.SignalMemoryAvailable, b.Signal == node.SignalMemoryAvailable
		switch {
		case am && !bm:
			return -1
		case bm && !am:
			return 1
		}
		return 0
	})
	next.Met = d.Met
	if len(d.Met) > 0 {
		d.Reclaim = &d.Met[0]
		d.Resource = resourceOf[d.Reclaim.Signal]
	}
	return next, d
}

// Hard reports a threshold without a grace period: its pods are evicted
// at once.
func (t Threshold) Hard() bool { return t.GracePeriod == 0 }

// ThresholdMetMessage is the part of an eviction message that says which
// threshold was met ("Threshold quantity: 100Mi, available: 80Mi. "), as
// upstream, from the first of met for resource; "" when none is observed.
func ThresholdMetMessage(resource v1.ResourceName, met []Threshold, observed map[node.Signal]Observation) string {
	for _, t := range met {
		if resourceOf[t.Signal] != resource {
			continue
		}
		o, ok := observed[t.Signal]
		if !ok {
			continue
		}
		return fmt.Sprintf("Threshold quantity: %v, available: %v. ", quantity(t.Value.Amount(o.Capacity)), quantity(o.Available))
	}
	return ""
}

// quantity renders bytes (or counts) as upstream's BinarySI quantities do.
func quantity(v uint64) *resource.Quantity {
	return resource.NewQuantity(int64(v), resource.BinarySI)
}
