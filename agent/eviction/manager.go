package eviction

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"

	"berth/agent/node"
	"berth/agent/qos"
	"berth/internal/errdefs"
)

// Defaults, the kubelet's.
const (
	// DefaultPeriod is how often the manager looks at the latest sample
	// (the kubelet's evictionMonitoringPeriod).
	DefaultPeriod = 10 * time.Second
	// cleanupTimeout bounds the wait for an evicted pod to be down before
	// the next synchronization (podCleanupTimeout).
	cleanupTimeout = 30 * time.Second
	// minGracePeriod is the least a pod is given to stop, as the kubelet's
	// minimumGracePeriodInSeconds.
	minGracePeriod = 2 * time.Second
)

// Recorder records events; client-go's record.EventRecorder is one.
type Recorder interface {
	Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...interface{})
	AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...interface{})
}

// Kill is how the manager ends a pod: stop it within grace and publish
// it Failed with Reason, message and condition (podworker.Manager.Evict).
// It reports whether the pod was running on the node.
type Kill func(pod *v1.Pod, grace time.Duration, message string, condition *v1.PodCondition) bool

// Config configures a Manager. Summary, Refresh, Pods, Kill and Stopped
// are required.
type Config struct {
	// Thresholds are the hard and soft thresholds (see Thresholds); none:
	// the manager only reports no pressure.
	Thresholds []Threshold
	// PressureTransitionPeriod: default DefaultPressureTransitionPeriod.
	PressureTransitionPeriod time.Duration
	// MaxPodGracePeriod bounds the grace period of pods evicted for a soft
	// threshold (--eviction-max-pod-grace-period); hard thresholds give
	// none. Either way a pod gets at least 2 s, as the kubelet's.
	MaxPodGracePeriod time.Duration
	// Period: default DefaultPeriod.
	Period time.Duration
	// Summary is the latest resource-usage sample and when it was taken
	// (agent/stats); Refresh samples now.
	Summary func() (*statsapi.Summary, time.Time, error)
	Refresh func(ctx context.Context) error
	// Pods are the pods running on the node.
	Pods func() []*v1.Pod
	// Kill ends a pod; Stopped reports when it is down.
	Kill    Kill
	Stopped func(uid types.UID) bool
	// DeleteAllUnusedContainers removes the dead containers and sandboxes
	// of the pods that finished (podworker); nil: they are not reclaimed.
	DeleteAllUnusedContainers func(ctx context.Context) error
	// DeleteUnusedImages removes every unused image old enough
	// (agent/imagegc); nil: images are not reclaimed.
	DeleteUnusedImages func(ctx context.Context) error
	// DedicatedImageFs reports whether the runtime's images live on
	// another filesystem than the node's: then only imagefs pressure
	// reclaims images. Nil: one filesystem.
	DedicatedImageFs func(ctx context.Context) (bool, error)
	// Recorder and NodeRef record the node's and the pods' events; nil:
	// none.
	Recorder Recorder
	NodeRef  *v1.ObjectReference
	// Registerer gets kubelet_evictions; nil: not registered.
	Registerer prometheus.Registerer
	Clock      clock.WithTicker
	Logger     *slog.Logger
}

func (cfg *Config) validate() error {
	switch {
	case cfg.Summary == nil || cfg.Refresh == nil:
		return fmt.Errorf("eviction: Config.Summary and Config.Refresh are required: %w", errdefs.ErrInvalidArgument)
	case cfg.Pods == nil:
		return fmt.Errorf("eviction: Config.Pods is required: %w", errdefs.ErrInvalidArgument)
	case cfg.Kill == nil || cfg.Stopped == nil:
		return fmt.Errorf("eviction: Config.Kill and Config.Stopped are required: %w", errdefs.ErrInvalidArgument)
	case cfg.PressureTransitionPeriod < 0, cfg.Period < 0, cfg.MaxPodGracePeriod < 0:
		return fmt.Errorf("eviction: Config durations must not be negative: %w", errdefs.ErrInvalidArgument)
	}
	if cfg.PressureTransitionPeriod == 0 {
		cfg.PressureTransitionPeriod = DefaultPressureTransitionPeriod
	}
	if cfg.Period == 0 {
		cfg.Period = DefaultPeriod
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Manager is the kubelet's eviction manager: every Period it reads the
// latest sample and synchronizes (Synchronize); when a threshold is met
// for its grace period it records EvictionThresholdMet, reclaims what the
// node itself holds (unused images, for disk), and when that is not
// enough evicts one pod, ranked (Rank), waiting until it is down before
// it looks again. It also tells the node manager its pressure conditions
// and admits pods as the kubelet does under pressure.
type Manager struct {
	cfg       Config
	evictions *prometheus.CounterVec

	mu         sync.Mutex
	conditions []v1.NodeConditionType

	// The loop's own.
	state      State
	lastSample time.Time
	dedicated  *bool
}

// New validates cfg and returns a manager; Run runs it.
func New(cfg Config) (*Manager, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m := &Manager{cfg: cfg, evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: "kubelet", Name: "evictions",
		Help: "Cumulative number of pod evictions by eviction signal",
	}, []string{"eviction_signal"})}
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(m.evictions); err != nil {
			return nil, fmt.Errorf("eviction: %w", err)
		}
	}
	return m, nil
}

// Run synchronizes every Period until ctx ends.
func (m *Manager) Run(ctx context.Context) error {
	if len(m.cfg.Thresholds) == 0 {
		<-ctx.Done()
		return nil
	}
	t := m.cfg.Clock.NewTicker(m.cfg.Period)
	defer t.Stop()
	for {
		if pod := m.synchronize(ctx); pod != nil {
			m.waitStopped(ctx, pod)
			// What the eviction freed shows only in samples taken after
			// it: older ones would evict the next pod for nothing.
			m.lastSample = m.cfg.Clock.Now()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// Conditions are the node's pressure conditions now (true ones).
func (m *Manager) Conditions() []v1.NodeConditionType {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.conditions)
}

// Admit is the kubelet's eviction admission: under pressure only critical
// pods are admitted, and under memory pressure alone also pods that are
// not BestEffort or tolerate the memory-pressure taint.
func (m *Manager) Admit(pod *v1.Pod) (reason, message string, ok bool) {
	conds := m.Conditions()
	if len(conds) == 0 || Critical(pod) {
		return "", "", true
	}
	if len(conds) == 1 && conds[0] == v1.NodeMemoryPressure {
		if qos.Class(pod) != v1.PodQOSBestEffort {
			return "", "", true
		}
		taint := &v1.Taint{Key: v1.TaintNodeMemoryPressure, Effect: v1.TaintEffectNoSchedule}
		for i := range pod.Spec.Tolerations {
			if pod.Spec.Tolerations[i].ToleratesTaint(klog.Background(), taint, false) {
				return "", "", true
			}
		}
	}
	return Reason, fmt.Sprintf("The node had condition: %v. ", conds), false
}

// synchronize is one look at the latest sample; it returns the pod it
// evicted, if any.
func (m *Manager) synchronize(ctx context.Context) *v1.Pod {
	log := m.cfg.Logger
	summary, at, err := m.cfg.Summary()
	if summary == nil || !at.After(m.lastSample) {
		if err != nil {
			log.Debug("eviction manager: no resource usage sample", "err", err)
		}
		return nil // nothing new observed since the last look
	}
	m.lastSample = at
	observed := Observe(summary)
	var d Decision
	m.state, d = Synchronize(m.state, m.cfg.Thresholds, observed, m.cfg.Clock.Now(), m.cfg.PressureTransitionPeriod)
	m.mu.Lock()
	m.conditions = d.Conditions
	m.mu.Unlock()
	if d.Reclaim == nil {
		return nil
	}
	signal := d.Reclaim.Signal
	log.Info("eviction manager: attempting to reclaim", "resourceName", d.Resource, "signal", signal)
	m.nodeEvent(v1.EventTypeWarning, "EvictionThresholdMet", fmt.Sprintf("Attempting to reclaim %s", d.Resource))
	if m.reclaimNodeLevel(ctx, signal) {
		log.Info("eviction manager: able to reduce resource pressure without evicting pods", "resourceName", d.Resource)
		return nil
	}
	stats := map[types.UID]*statsapi.PodStats{}
	for i := range summary.Pods {
		stats[types.UID(summary.Pods[i].PodRef.UID)] = &summary.Pods[i]
	}
	var candidates []Candidate
	for _, p := range m.cfg.Pods() {
		candidates = append(candidates, Candidate{Pod: p, Stats: stats[p.UID]})
	}
	if len(candidates) == 0 {
		log.Error("eviction manager: eviction thresholds have been met, but no pods are active to evict")
		return nil
	}
	Rank(signal, candidates)
	for _, c := range candidates {
		if Critical(c.Pod) {
			log.Error("eviction manager: cannot evict a critical pod", "pod", c.Pod.Namespace+"/"+c.Pod.Name)
			continue
		}
		grace := minGracePeriod
		if !d.Reclaim.Hard() {
			g := m.cfg.MaxPodGracePeriod
			if tgps := c.Pod.Spec.TerminationGracePeriodSeconds; tgps != nil {
				g = min(g, time.Duration(*tgps)*time.Second)
			}
			grace = max(g, minGracePeriod)
		}
		message, annotations := Message(d.Resource, c.Pod, c.Stats, d.Met, observed)
		condition := &v1.PodCondition{
			Type: v1.DisruptionTarget, Status: v1.ConditionTrue, ObservedGeneration: c.Pod.Generation,
			Reason: v1.PodReasonTerminationByKubelet, Message: message,
		}
		if m.cfg.Recorder != nil {
			m.cfg.Recorder.AnnotatedEventf(c.Pod, annotations, v1.EventTypeWarning, Reason, "%s", message)
		}
		if !m.cfg.Kill(c.Pod, grace, message, condition) {
			log.Error("eviction manager: pod failed to evict", "pod", c.Pod.Namespace+"/"+c.Pod.Name)
		} else {
			log.Info("eviction manager: pod is evicted", "pod", c.Pod.Namespace+"/"+c.Pod.Name, "signal", signal, "gracePeriod", grace)
		}
		m.evictions.WithLabelValues(string(signal)).Inc()
		return c.Pod // one pod per synchronization, as upstream
	}
	log.Info("eviction manager: unable to evict any pods from the node")
	return nil
}

// reclaimNodeLevel frees what the node holds for signal — the finished
// pods' containers, then the unused images, on the filesystem they live
// on (upstream's buildSignalToNodeReclaimFuncs without a split container
// filesystem) — samples again and reports whether no threshold is met any
// more, minimum reclaims counted.
func (m *Manager) reclaimNodeLevel(ctx context.Context, signal node.Signal) bool {
	reclaims := m.nodeReclaims(ctx, signal)
	if len(reclaims) == 0 {
		return false
	}
	for _, reclaim := range reclaims {
		if err := reclaim(ctx); err != nil {
			m.cfg.Logger.Info("eviction manager: unexpected error when attempting to reduce resource pressure", "signal", signal, "err", err)
		}
	}
	if err := m.cfg.Refresh(ctx); err != nil {
		m.cfg.Logger.Error("eviction manager: failed to get summary stats after resource reclaim", "err", err)
		return false
	}
	summary, _, err := m.cfg.Summary()
	if err != nil || summary == nil {
		return false
	}
	return len(Met(m.cfg.Thresholds, Observe(summary), true)) == 0
}

// nodeReclaims are the reclaim functions for signal: for imagefs signals,
// and for nodefs signals when the images share the node's filesystem, the
// finished pods' containers, then the unused images; none otherwise (with
// a dedicated image filesystem, nodefs pressure only evicts).
func (m *Manager) nodeReclaims(ctx context.Context, signal node.Signal) []func(context.Context) error {
	switch signal {
	case node.SignalImageFsAvailable, node.SignalImageFsInodesFree:
	case node.SignalNodeFsAvailable, node.SignalNodeFsInodesFree:
		if m.dedicatedImageFs(ctx) {
			return nil
		}
	default:
		return nil
	}
	var out []func(context.Context) error
	for _, f := range []func(context.Context) error{m.cfg.DeleteAllUnusedContainers, m.cfg.DeleteUnusedImages} {
		if f != nil {
			out = append(out, f)
		}
	}
	return out
}

func (m *Manager) dedicatedImageFs(ctx context.Context) bool {
	if m.dedicated != nil {
		return *m.dedicated
	}
	if m.cfg.DedicatedImageFs == nil {
		return false
	}
	d, err := m.cfg.DedicatedImageFs(ctx)
	if err != nil {
		m.cfg.Logger.Warn("eviction manager: cannot tell whether the images have a filesystem of their own", "err", err)
		return false
	}
	m.dedicated = &d
	return d
}

// waitStopped waits (up to 30 s) until the evicted pod is down, polling
// every second, as the kubelet's waitForPodsCleanup.
func (m *Manager) waitStopped(ctx context.Context, pod *v1.Pod) {
	timeout := m.cfg.Clock.NewTimer(cleanupTimeout)
	defer timeout.Stop()
	tick := m.cfg.Clock.NewTicker(time.Second)
	defer tick.Stop()
	for !m.cfg.Stopped(pod.UID) {
		select {
		case <-ctx.Done():
			return
		case <-timeout.C():
			m.cfg.Logger.Info("eviction manager: timed out waiting for pods to be cleaned up", "pod", pod.Namespace+"/"+pod.Name)
			return
		case <-tick.C():
		}
	}
	m.cfg.Logger.Info("eviction manager: pods successfully cleaned up", "pod", pod.Namespace+"/"+pod.Name)
}

func (m *Manager) nodeEvent(eventType, reason, message string) {
	if m.cfg.Recorder != nil && m.cfg.NodeRef != nil {
		m.cfg.Recorder.Eventf(m.cfg.NodeRef, eventType, reason, "%s", message)
	}
}
