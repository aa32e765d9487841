// Package scheduler is berth's pod scheduler: it watches pods and nodes,
// runs the scheduling cycle (snapshot → filter → score → pick) from the
// plugins in controlplane/scheduler/plugins one pod at a time, assumes the
// pod onto the chosen node in its cache and binds it through pods/binding
// asynchronously. Pods that fit nowhere get a FailedScheduling event with
// kube-scheduler's message and wait in the queue until a cluster event may
// help them.
package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"

	fw "berth/controlplane/scheduler/framework"
	"berth/internal/errdefs"
)

// DefaultSchedulerName is the spec.schedulerName this scheduler serves
// unless configured otherwise.
const DefaultSchedulerName = v1.DefaultSchedulerName

// DefaultParallelism is how many goroutines filter and score nodes.
const DefaultParallelism = 16

// Config configures a Scheduler.
type Config struct {
	// Client binds pods, records events and updates pod conditions.
	Client kubernetes.Interface
	// Informers is the shared informer factory New registers the pod, node
	// and namespace informers on; Run starts it (Start is idempotent, so a
	// factory shared with other components may be started by them too) and
	// waits for those caches to sync.
	Informers informers.SharedInformerFactory
	// Recorder records the Scheduled and FailedScheduling events; nil makes
	// Run record through an events.k8s.io/v1 broadcaster on Client.
	Recorder events.EventRecorder
	// Logger receives the scheduler's log; nil discards.
	Logger *slog.Logger
	// Clock drives back-off and the queue's flush loops; nil is the real clock.
	Clock clock.WithTicker
	// Metrics registers the scheduler_* metrics; nil uses a private registry.
	Metrics prometheus.Registerer
	// SchedulerName is the spec.schedulerName served (default
	// "default-scheduler"); pods naming another scheduler are left alone.
	SchedulerName string
	// PercentageOfNodesToScore (0–100): stop filtering once this share of
	// nodes is feasible; 0 is upstream's adaptive default.
	PercentageOfNodesToScore int32
	// Parallelism is how many goroutines filter and score nodes (default 16).
	Parallelism int
	// InitialBackoff and MaxBackoff bound a pod's retry back-off (defaults
	// 1s and 10s).
	InitialBackoff, MaxBackoff time.Duration
	// Rand breaks ties between equally scored nodes; nil seeds one randomly.
	Rand *rand.Rand
}

// Validate fills defaults and checks the fields, naming the bad one.
func (c *Config) Validate() error {
	if c.Client == nil {
		return fmt.Errorf("scheduler config: client is required: %w", errdefs.ErrInvalidArgument)
	}
	if c.Informers == nil {
		return fmt.Errorf("scheduler config: informer factory is required: %w", errdefs.ErrInvalidArgument)
	}
	if c.PercentageOfNodesToScore < 0 || c.PercentageOfNodesToScore > 100 {
		return fmt.Errorf("scheduler config: percentageOfNodesToScore %d: want 0–100: %w", c.PercentageOfNodesToScore, errdefs.ErrInvalidArgument)
	}
	if c.Parallelism < 0 {
		return fmt.Errorf("scheduler config: parallelism %d is negative: %w", c.Parallelism, errdefs.ErrInvalidArgument)
	}
	if c.InitialBackoff < 0 || c.MaxBackoff < 0 {
		return fmt.Errorf("scheduler config: back-off durations must not be negative: %w", errdefs.ErrInvalidArgument)
	}
	if c.InitialBackoff == 0 {
		c.InitialBackoff = DefaultInitialBackoff
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	if c.MaxBackoff < c.InitialBackoff {
		return fmt.Errorf("scheduler config: max back-off %s is below the initial back-off %s: %w", c.MaxBackoff, c.InitialBackoff, errdefs.ErrInvalidArgument)
	}
	if c.Parallelism == 0 {
		c.Parallelism = DefaultParallelism
	}
	if c.SchedulerName == "" {
		c.SchedulerName = DefaultSchedulerName
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Metrics == nil {
		c.Metrics = prometheus.NewRegistry()
	}
	if c.Rand == nil {
		c.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	return nil
}

// Scheduler assigns pending pods to nodes. Create it with New, run it with Run.
type Scheduler struct {
	cfg       Config
	log       *slog.Logger
	recorder  events.EventRecorder
	cache     *Cache
	queue     *Queue
	algorithm *Algorithm
	nominator *nominator
	snapshot  *fw.Snapshot
	metrics   *metrics
	nsLister  corelisters.NamespaceLister
	podLister corelisters.PodLister
	// pdbLister reads the disruption budgets preemption respects.
	pdbLister policylisters.PodDisruptionBudgetLister
	synced    []cache.InformerSynced
	binds     sync.WaitGroup
	// bindSlots bounds the bindings in flight: the scheduling loop waits
	// for a slot, so a slow apiserver slows scheduling instead of piling
	// up requests that time out.
	bindSlots chan struct{}
}

// maxInflightBindings is how many pods/binding requests may be in flight.
const maxInflightBindings = 64

// New validates cfg and builds a Scheduler, registering its event
// handlers on the informers (call it before the factory is started, or
// the handlers get the initial list replayed).
func New(cfg Config) (*Scheduler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Metrics)
	if err != nil {
		return nil, fmt.Errorf("scheduler: registering metrics: %w", err)
	}
	s := &Scheduler{
		cfg:       cfg,
		log:       cfg.Logger,
		recorder:  cfg.Recorder,
		cache:     NewCache(),
		metrics:   m,
		snapshot:  fw.NewSnapshot(nil),
		nominator: newNominator(),
	}
	s.algorithm = &Algorithm{Profile: DefaultProfile(), PercentageOfNodesToScore: cfg.PercentageOfNodesToScore,
		Parallelism: cfg.Parallelism, Rand: cfg.Rand, Nominated: s.nominator.onNode}
	s.queue = NewQueue(QueueConfig{Clock: cfg.Clock, InitialBackoff: cfg.InitialBackoff, MaxBackoff: cfg.MaxBackoff, OnChange: m.setPending})
	m.setPending(0, 0, 0)
	core := cfg.Informers.Core().V1()
	podInf, nodeInf, nsInf := core.Pods().Informer(), core.Nodes().Informer(), core.Namespaces().Informer()
	s.nsLister = core.Namespaces().Lister()
	s.podLister = core.Pods().Lister()
	s.bindSlots = make(chan struct{}, maxInflightBindings)
	s.snapshot.NamespaceLabels = s.namespaceLabels
	if _, err := podInf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: s.onPodAdd, UpdateFunc: s.onPodUpdate, DeleteFunc: s.onPodDelete}); err != nil {
		return nil, fmt.Errorf("scheduler: pod event handler: %w", err)
	}
	if _, err := nodeInf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: s.onNodeAdd, UpdateFunc: s.onNodeUpdate, DeleteFunc: s.onNodeDelete}); err != nil {
		return nil, fmt.Errorf("scheduler: node event handler: %w", err)
	}
	s.synced = []cache.InformerSynced{podInf.HasSynced, nodeInf.HasSynced, nsInf.HasSynced}
	pdbInf := cfg.Informers.Policy().V1().PodDisruptionBudgets()
	s.pdbLister = pdbInf.Lister()
	s.synced = append(s.synced, pdbInf.Informer().HasSynced)
	if err := s.addVolumeBinding(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Scheduler) namespaceLabels(ns string) labels.Set {
	n, err := s.nsLister.Get(ns)
	if err != nil {
		return nil
	}
	return n.Labels
}

// Run starts the informers, waits for their caches, and schedules pods
// until ctx ends; it then waits for in-flight bindings and returns nil.
func (s *Scheduler) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if s.recorder == nil {
		b := events.NewBroadcaster(&events.EventSinkImpl{Interface: s.cfg.Client.EventsV1()})
		if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
			return fmt.Errorf("scheduler: starting event recording: %w", err)
		}
		defer b.Shutdown()
		s.recorder = b.NewRecorder(scheme.Scheme, s.cfg.SchedulerName)
	}
	s.cfg.Informers.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), s.synced...) {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("scheduler: informer caches did not sync: %w", errdefs.ErrUnavailable)
	}
	s.log.Info("scheduler started", "schedulerName", s.cfg.SchedulerName, "nodes", s.cache.NodeCount())
	go s.queue.Run(ctx)
	for s.scheduleOne(ctx) {
	}
	s.binds.Wait()
	return nil
}

// responsible reports whether this scheduler should place pod: unassigned,
// ours by schedulerName, not terminating, not terminal, not gated.
func (s *Scheduler) responsible(pod *v1.Pod) bool {
	return pod.Spec.NodeName == "" && pod.Spec.SchedulerName == s.cfg.SchedulerName && pod.DeletionTimestamp == nil &&
		!terminal(pod) && len(pod.Spec.SchedulingGates) == 0
}

// skip reports whether a popped pod must not be scheduled: it is gone or
// replaced, bound, no longer ours, or already in the cache (assumed while
// its binding is in flight, or bound by a binding that reported an error
// yet succeeded).
func (s *Scheduler) skip(pod *v1.Pod) bool {
	cur, err := s.podLister.Pods(pod.Namespace).Get(pod.Name)
	if err != nil || cur.UID != pod.UID || !s.responsible(cur) {
		return true
	}
	return s.cache.Has(pod)
}

func terminal(pod *v1.Pod) bool {
	return pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed
}

func podWithAffinityOrSpread(p *QueuedPodInfo) bool {
	a := p.Pod.Spec.Affinity
	return (a != nil && (a.PodAffinity != nil || a.PodAntiAffinity != nil)) || len(p.Pod.Spec.TopologySpreadConstraints) > 0
}

func (s *Scheduler) onPodAdd(obj any) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	switch {
	case pod.Spec.NodeName != "":
		if terminal(pod) {
			return
		}
		s.cache.AddPod(pod)
		s.queue.MoveAllToActiveOrBackoffQueue(podWithAffinityOrSpread)
	case s.responsible(pod):
		s.nominator.setPod(pod, pod.Status.NominatedNodeName)
		s.queue.Add(pod)
	}
}

func (s *Scheduler) onPodUpdate(oldObj, newObj any) {
	old, ok1 := oldObj.(*v1.Pod)
	pod, ok2 := newObj.(*v1.Pod)
	if !ok1 || !ok2 {
		return
	}
	if pod.Spec.NodeName != "" {
		if old.Spec.NodeName == "" {
			s.queue.Delete(pod)
			s.nominator.remove(pod.UID)
		}
		if terminal(pod) {
			s.cache.RemovePod(pod)
			s.queue.MoveAllToActiveOrBackoffQueue(nil)
			return
		}
		s.cache.UpdatePod(pod)
		if old.Spec.NodeName == "" || !equality.Semantic.DeepEqual(old.Labels, pod.Labels) {
			s.queue.MoveAllToActiveOrBackoffQueue(podWithAffinityOrSpread)
		}
		return
	}
	if s.responsible(pod) {
		s.nominator.update(old, pod)
		s.queue.Update(pod)
	} else {
		s.nominator.remove(pod.UID)
		s.queue.Delete(pod)
	}
}

func (s *Scheduler) onPodDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	if pod.Spec.NodeName != "" {
		s.cache.RemovePod(pod)
		s.queue.MoveAllToActiveOrBackoffQueue(nil)
		return
	}
	s.nominator.remove(pod.UID)
	s.queue.Delete(pod)
}

func (s *Scheduler) onNodeAdd(obj any) {
	node, ok := obj.(*v1.Node)
	if !ok {
		return
	}
	s.cache.AddNode(node)
	s.queue.MoveAllToActiveOrBackoffQueue(nil)
}

func (s *Scheduler) onNodeUpdate(oldObj, newObj any) {
	old, ok1 := oldObj.(*v1.Node)
	node, ok2 := newObj.(*v1.Node)
	if !ok1 || !ok2 {
		return
	}
	s.cache.AddNode(node)
	if NodeSchedulingPropertiesChanged(old, node) {
		s.queue.MoveAllToActiveOrBackoffQueue(nil)
	}
}

func (s *Scheduler) onNodeDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if node, ok := obj.(*v1.Node); ok {
		s.cache.RemoveNode(node.Name)
	}
}

// NodeSchedulingPropertiesChanged reports whether a node update could make
// a parked pod schedulable: unschedulable flag, allocatable, labels,
// taints or images changed.
func NodeSchedulingPropertiesChanged(old, node *v1.Node) bool {
	return old.Spec.Unschedulable != node.Spec.Unschedulable ||
		!equality.Semantic.DeepEqual(old.Status.Allocatable, node.Status.Allocatable) ||
		!equality.Semantic.DeepEqual(old.Labels, node.Labels) ||
		!equality.Semantic.DeepEqual(old.Spec.Taints, node.Spec.Taints) ||
		!equality.Semantic.DeepEqual(old.Status.Images, node.Status.Images)
}
