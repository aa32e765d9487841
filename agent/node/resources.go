package node

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"berth/internal/errdefs"
)

// Signal is an eviction signal, as the kubelet names them.
type Signal string

// The signals berth observes. The image filesystem is taken to be the node
// filesystem (the root dir's), so imagefs.* are evaluated on it.
const (
	SignalMemoryAvailable   Signal = "memory.available"
	SignalNodeFsAvailable   Signal = "nodefs.available"
	SignalNodeFsInodesFree  Signal = "nodefs.inodesFree"
	SignalImageFsAvailable  Signal = "imagefs.available"
	SignalImageFsInodesFree Signal = "imagefs.inodesFree"
	SignalPIDAvailable      Signal = "pid.available"
)

// Valid reports whether s is one of the signals berth observes.
func (s Signal) Valid() bool {
	switch s {
	case SignalMemoryAvailable, SignalNodeFsAvailable, SignalNodeFsInodesFree, SignalImageFsAvailable, SignalImageFsInodesFree, SignalPIDAvailable:
		return true
	}
	return false
}

// Threshold is a signal's minimum: an absolute Quantity, or a Percentage
// (0–100) of the resource's capacity.
type Threshold struct {
	Quantity   *resource.Quantity
	Percentage float64
}

// Thresholds are the hard eviction thresholds by signal.
type Thresholds map[Signal]Threshold

// DefaultEvictionHard is the kubelet's default --eviction-hard:
// memory.available<100Mi, nodefs.available<10%, nodefs.inodesFree<5%,
// imagefs.available<15%.
func DefaultEvictionHard() Thresholds {
	q := resource.MustParse("100Mi")
	return Thresholds{
		SignalMemoryAvailable:  {Quantity: &q},
		SignalNodeFsAvailable:  {Percentage: 10},
		SignalNodeFsInodesFree: {Percentage: 5},
		SignalImageFsAvailable: {Percentage: 15},
	}
}

// ParseThresholds parses the kubelet's --eviction-hard syntax,
// "memory.available<100Mi,nodefs.available<10%"; "" is no thresholds.
func ParseThresholds(s string) (Thresholds, error) {
	out := Thresholds{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		name, value, ok := strings.Cut(item, "<")
		if !ok {
			return nil, fmt.Errorf("eviction threshold %q: want SIGNAL<VALUE: %w", item, errdefs.ErrInvalidArgument)
		}
		sig := Signal(strings.TrimSpace(name))
		if !sig.Valid() {
			return nil, fmt.Errorf("eviction threshold %q: unknown signal %q: %w", item, sig, errdefs.ErrInvalidArgument)
		}
		if _, dup := out[sig]; dup {
			return nil, fmt.Errorf("eviction threshold %q: signal %q given twice: %w", item, sig, errdefs.ErrInvalidArgument)
		}
		value = strings.TrimSpace(value)
		if value == "0%" || value == "100%" {
			continue // as upstream: no threshold
		}
		if pct, isPct := strings.CutSuffix(value, "%"); isPct {
			p, err := strconv.ParseFloat(pct, 64)
			if err != nil || p < 0 || p > 100 || math.IsNaN(p) {
				return nil, fmt.Errorf("eviction threshold %q: percentage %q: must be between 0%% and 100%%: %w", item, value, errdefs.ErrInvalidArgument)
			}
			out[sig] = Threshold{Percentage: p}
			continue
		}
		q, err := resource.ParseQuantity(value)
		if err != nil || q.Sign() < 0 {
			return nil, fmt.Errorf("eviction threshold %q: quantity %q: must be a non-negative quantity: %w", item, value, errdefs.ErrInvalidArgument)
		}
		out[sig] = Threshold{Quantity: &q}
	}
	return out, nil
}

// String renders thresholds in --eviction-hard syntax, signals sorted.
func (t Thresholds) String() string {
	var parts []string
	for _, sig := range slices.Sorted(maps.Keys(t)) {
		th := t[sig]
		if th.Quantity != nil {
			parts = append(parts, fmt.Sprintf("%s<%s", sig, th.Quantity.String()))
		} else {
			parts = append(parts, fmt.Sprintf("%s<%s%%", sig, strconv.FormatFloat(th.Percentage, 'f', -1, 64)))
		}
	}
	return strings.Join(parts, ",")
}

// Amount is the threshold's value for a resource of the given capacity.
func (th Threshold) Amount(capacity uint64) uint64 {
	if th.Quantity != nil {
		return uint64(th.Quantity.Value())
	}
	return uint64(math.Round(float64(capacity) * th.Percentage / 100))
}

// breached reports whether available is below the signal's threshold.
func (t Thresholds) breached(sig Signal, available, capacity uint64) bool {
	th, ok := t[sig]
	return ok && available < th.Amount(capacity)
}

// Capacity is the node's capacity on machine m.
func Capacity(m Machine, maxPods int64) v1.ResourceList {
	return v1.ResourceList{
		v1.ResourceCPU:              *resource.NewQuantity(int64(m.NumCPU), resource.DecimalSI),
		v1.ResourceMemory:           *resource.NewQuantity(int64(m.MemoryTotal), resource.BinarySI),
		v1.ResourceEphemeralStorage: *resource.NewQuantity(int64(m.FsCapacity), resource.BinarySI),
		v1.ResourcePods:             *resource.NewQuantity(maxPods, resource.DecimalSI),
	}
}

// Allocatable is capacity less system-reserved, kube-reserved and the hard
// eviction thresholds of memory (memory.available) and ephemeral storage
// (nodefs.available), never below zero, as the kubelet computes it.
func Allocatable(capacity, systemReserved, kubeReserved v1.ResourceList, evictionHard Thresholds) v1.ResourceList {
	out := v1.ResourceList{}
	for name, c := range capacity {
		alloc := c.DeepCopy()
		for _, reserved := range []v1.ResourceList{systemReserved, kubeReserved} {
			if r, ok := reserved[name]; ok {
				alloc.Sub(r)
			}
		}
		var sig Signal
		switch name {
		case v1.ResourceMemory:
			sig = SignalMemoryAvailable
		case v1.ResourceEphemeralStorage:
			sig = SignalNodeFsAvailable
		}
		if th, ok := evictionHard[sig]; ok && sig != "" {
			alloc.Sub(*resource.NewQuantity(int64(th.Amount(uint64(c.Value()))), c.Format))
		}
		if alloc.Sign() < 0 {
			alloc = *resource.NewQuantity(0, c.Format)
		}
		out[name] = alloc
	}
	return out
}

// MachineAllocatable is the allocatable the Node of an agent with rootDir and
// the default settings (DefaultMaxPods, no reservations,
// DefaultEvictionHard) reports on this machine now: what unset CPU, memory
// and ephemeral-storage limits read as through the downward API.
func MachineAllocatable(rootDir string) (v1.ResourceList, error) {
	m, err := ReadMachine(rootDir)
	if err != nil {
		return nil, err
	}
	return Allocatable(Capacity(m, DefaultMaxPods), nil, nil, DefaultEvictionHard()), nil
}

// KeepExtended adds to capacity the extended resources (names outside the
// kubernetes.io namespace with a domain, such as example.com/dongle) that
// reported advertises and capacity lacks: someone other than the agent put
// them in the node's status, and the kubelet keeps them (and makes them
// allocatable).
func KeepExtended(capacity, reported v1.ResourceList) v1.ResourceList {
	for name, q := range reported {
		if _, own := capacity[name]; own || !isExtendedResourceName(name) {
			continue
		}
		capacity[name] = q.DeepCopy()
	}
	return capacity
}

// isExtendedResourceName is upstream's rule: a qualified name with a
// domain outside kubernetes.io, not a requests.* quota name.
func isExtendedResourceName(name v1.ResourceName) bool {
	s := string(name)
	if !strings.Contains(s, "/") || strings.Contains(s, "kubernetes.io/") || strings.HasPrefix(s, v1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(v1.DefaultResourceRequestsPrefix+s)) == 0
}
