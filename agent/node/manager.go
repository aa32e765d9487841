package node

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Registration retry back-off, as the kubelet's.
const (
	initialBackoff = 100 * time.Millisecond
	maxBackoff     = 7 * time.Second
	// statusUpdateRetries bounds the attempts of one status write.
	statusUpdateRetries = 5
)

// Manager registers and keeps the agent's Node and Lease.
type Manager struct {
	cfg        Config
	sys        SystemInfo
	internalIP net.IP
	trigger    chan struct{}
	registered chan struct{}
	// lease is the Lease as the last renewal returned it (leaseLoop only).
	lease *coordinationv1.Lease

	mu         sync.Mutex
	rt         RuntimeState
	nodeInfo   v1.NodeSystemInfo
	images     []v1.ContainerImage
	nodeUID    types.UID
	podCIDRs   []string
	lastReport time.Time
}

// New validates cfg, detects the InternalIP when none is given and reads
// the host's system info; Run registers and keeps the node.
func New(cfg Config) (*Manager, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m := &Manager{cfg: cfg, internalIP: cfg.InternalIP, sys: ReadSystemInfo(),
		trigger: make(chan struct{}, 1), registered: make(chan struct{})}
	if m.internalIP == nil {
		ip, err := DetectInternalIP()
		if err != nil {
			return nil, err
		}
		m.internalIP = ip
	}
	m.nodeInfo = NodeInfo(m.sys, nil)
	return m, nil
}

// Registered is closed once the Node exists in the apiserver.
func (m *Manager) Registered() <-chan struct{} { return m.registered }

// PodCIDRs are the Node's spec.podCIDRs as last seen (nil until set).
func (m *Manager) PodCIDRs() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.podCIDRs)
}

// Trigger asks for a status update now (e.g. when the agent learns the
// runtime's state changed); it never blocks.
func (m *Manager) Trigger() {
	select {
	case m.trigger <- struct{}{}:
	default:
	}
}

// Run registers the Node (retrying with back-off), then renews the Lease and
// updates the status until ctx ends. It returns nil when ctx ends.
func (m *Manager) Run(ctx context.Context) error {
	if err := m.register(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	var wg sync.WaitGroup
	wg.Go(func() { m.leaseLoop(ctx) })
	wg.Go(func() { m.statusLoop(ctx) })
	wg.Wait()
	return nil
}

// sleep waits d on the clock; false if ctx ended first.
func (m *Manager) sleep(ctx context.Context, d time.Duration) bool {
	t := m.cfg.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

// register creates the Node, or reconciles the existing one's labels, and
// writes its status, retrying with back-off until it succeeds or ctx ends.
func (m *Manager) register(ctx context.Context) error {
	backoff := initialBackoff
	for {
		err := m.tryRegister(ctx)
		if err == nil {
			select {
			case <-m.registered:
			default:
				close(m.registered)
			}
			m.cfg.Logger.Info("node registered", "node", m.cfg.NodeName)
			return nil
		}
		m.cfg.Logger.Warn("registering the node failed; retrying", "node", m.cfg.NodeName, "err", err, "in", backoff)
		if !m.sleep(ctx, backoff) {
			return ctx.Err()
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// initialNode is the Node the agent registers.
func (m *Manager) initialNode(ctx context.Context, now time.Time) *v1.Node {
	labels := DefaultLabels(m.cfg.Hostname)
	maps.Copy(labels, m.cfg.Labels)
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: m.cfg.NodeName, Labels: labels},
		Spec:       v1.NodeSpec{Taints: slices.Clone(m.cfg.Taints)},
	}
	m.fillStatus(ctx, node, now)
	return node
}

func (m *Manager) tryRegister(ctx context.Context) error {
	nodes := m.cfg.Client.CoreV1().Nodes()
	want := m.initialNode(ctx, m.cfg.Clock.Now())
	created, err := nodes.Create(ctx, want, metav1.CreateOptions{})
	switch {
	case err == nil:
		m.observeSpec(created)
	case apierrors.IsAlreadyExists(err):
		existing, err := nodes.Get(ctx, m.cfg.NodeName, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("get the existing node: %w", err)
		}
		if ReconcileLabels(existing, want.Labels) {
			if existing, err = nodes.Update(ctx, existing, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("update the existing node's labels: %w", err)
			}
		}
		m.observeSpec(existing)
	default:
		return fmt.Errorf("create node: %w", err)
	}
	// The status written at creation may not have been kept; write it now.
	return m.syncStatus(ctx, true)
}

// observeSpec records the Node's UID and podCIDRs, calling OnPodCIDRs when
// they are first set or change.
func (m *Manager) observeSpec(node *v1.Node) {
	cidrs := node.Spec.PodCIDRs
	if len(cidrs) == 0 && node.Spec.PodCIDR != "" {
		cidrs = []string{node.Spec.PodCIDR}
	}
	m.mu.Lock()
	m.nodeUID = node.UID
	changed := len(cidrs) > 0 && !slices.Equal(cidrs, m.podCIDRs)
	if changed {
		m.podCIDRs = slices.Clone(cidrs)
	}
	m.mu.Unlock()
	if changed {
		m.cfg.Logger.Info("node podCIDRs set", "podCIDRs", cidrs)
		if m.cfg.OnPodCIDRs != nil {
			m.cfg.OnPodCIDRs(slices.Clone(cidrs))
		}
	}
}

// fillStatus computes node's status at now from the machine and the
// runtime; parts that cannot be observed now keep their last value.
func (m *Manager) fillStatus(ctx context.Context, node *v1.Node, now time.Time) {
	st := &node.Status
	machine, merr := m.cfg.Machine()
	if merr != nil {
		m.cfg.Logger.Warn("observing the machine failed", "err", merr)
	} else {
		st.Capacity = KeepExtended(Capacity(machine, m.cfg.MaxPods), st.Capacity)
		st.Allocatable = Allocatable(st.Capacity, m.cfg.SystemReserved, m.cfg.KubeReserved, m.cfg.EvictionHard)
	}
	rs, nodeInfo, images := m.observeRuntime(ctx, now)
	st.NodeInfo = nodeInfo
	if images != nil {
		st.Images = images
	}
	st.Addresses = Addresses(m.internalIP, m.cfg.Hostname)
	st.DaemonEndpoints.KubeletEndpoint.Port = m.cfg.KubeletPort
	var want []Condition
	if merr == nil {
		want = PressureConditions(machine, m.cfg.EvictionHard)
	}
	want = append(want, ReadyCondition(rs, st.Capacity, now, m.cfg.RuntimeDownAfter))
	st.Conditions = SetConditions(st.Conditions, want, now)
}

// observeRuntime asks the runtime for its status, version and images,
// remembering the last good answers.
func (m *Manager) observeRuntime(ctx context.Context, now time.Time) (RuntimeState, v1.NodeSystemInfo, []v1.ContainerImage) {
	status, serr := m.cfg.Runtime.Status(ctx, false)
	version, verr := m.cfg.Runtime.Version(ctx)
	images, ierr := m.cfg.Runtime.ListImages(ctx, nil)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rt.Err = serr
	if serr == nil {
		m.rt.Status, m.rt.LastSuccess = status.GetStatus(), now
	} else {
		m.cfg.Logger.Warn("container runtime status check failed", "err", serr)
	}
	if verr == nil {
		m.nodeInfo = NodeInfo(m.sys, version)
	}
	if ierr == nil {
		m.images = NodeImages(images, MaxImagesInNodeStatus)
	}
	return m.rt, m.nodeInfo, m.images
}

// shouldWrite decides whether a computed status is written: when it
// changed, when forced, or when the last write is a report interval old.
func shouldWrite(changed, force bool, lastReport, now time.Time, reportFrequency time.Duration) bool {
	return changed || force || lastReport.IsZero() || !now.Before(lastReport.Add(reportFrequency))
}

// syncStatus computes the status and writes it if shouldWrite says so,
// retrying conflicts on a fresh copy of the Node.
func (m *Manager) syncStatus(ctx context.Context, force bool) error {
	nodes := m.cfg.Client.CoreV1().Nodes()
	var lastErr error
	for range statusUpdateRetries {
		node, err := nodes.Get(ctx, m.cfg.NodeName, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("get node: %w", err)
		}
		m.observeSpec(node)
		now := m.cfg.Clock.Now()
		original := node.Status.DeepCopy()
		m.fillStatus(ctx, node, now)
		m.mu.Lock()
		last := m.lastReport
		m.mu.Unlock()
		if !shouldWrite(StatusChanged(original, &node.Status), force, last, now, m.cfg.StatusReportFrequency) {
			return nil
		}
		if _, err := nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
			lastErr = err
			if apierrors.IsConflict(err) {
				continue
			}
			return fmt.Errorf("update node status: %w", err)
		}
		m.mu.Lock()
		m.lastReport = now
		m.mu.Unlock()
		return nil
	}
	return fmt.Errorf("update node status: %d conflicts in a row: %w", statusUpdateRetries, lastErr)
}

// statusLoop syncs the status every StatusUpdateFrequency and on Trigger.
// A Node deleted under the agent is registered again.
func (m *Manager) statusLoop(ctx context.Context) {
	ticker := m.cfg.Clock.NewTicker(m.cfg.StatusUpdateFrequency)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		case <-m.trigger:
		}
		err := m.syncStatus(ctx, false)
		if apierrors.IsNotFound(err) {
			m.cfg.Logger.Warn("the node was deleted; registering it again", "node", m.cfg.NodeName)
			err = m.register(ctx)
		}
		if err != nil && ctx.Err() == nil {
			m.cfg.Logger.Warn("updating the node status failed", "node", m.cfg.NodeName, "err", err)
		}
	}
}
