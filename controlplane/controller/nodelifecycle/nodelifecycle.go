// Package nodelifecycle watches node heartbeats (the node's Lease in
// kube-node-lease and its Ready condition): a node silent for the grace
// period gets Ready (and the pressure conditions) Unknown and the
// node.kubernetes.io/unreachable NoSchedule and NoExecute taints (a node
// reporting Ready=False gets node.kubernetes.io/not-ready), its pods are
// marked not ready, and pods that do not tolerate a NoExecute taint are
// deleted once their tolerationSeconds have passed — so their controllers
// replace them elsewhere. A node that reports again loses the taints. A node
// reporting MemoryPressure, DiskPressure, PIDPressure or NetworkUnavailable
// True gets that condition's NoSchedule taint (node.kubernetes.io/
// memory-pressure, …) until it reports it False, as upstream's
// TaintNodesByCondition.
//
// The decisions (Observe, UnknownConditions, DesiredTaints, EvictionPlan)
// are pure functions of the node, its lease, its pods and the time.
package nodelifecycle

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coordinationlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"berth/controlplane/controller"
	"berth/internal/errdefs"
)

// Name is the controller's name.
const Name = "nodelifecycle"

// Defaults of Options (kube-controller-manager's).
const (
	DefaultGracePeriod        = 40 * time.Second // --node-monitor-grace-period
	DefaultStartupGracePeriod = 60 * time.Second // --node-startup-grace-period
	DefaultMonitorPeriod      = 5 * time.Second  // --node-monitor-period
	// LeaseNamespace holds the nodes' heartbeat Leases.
	LeaseNamespace = corev1.NamespaceNodeLease
)

const podsByNodeIndex = "berth.nodelifecycle/spec.nodeName"

// Options are the node lifecycle settings.
type Options struct {
	// GracePeriod is how long a node may stay silent before it is marked
	// unreachable; default 40s.
	GracePeriod time.Duration
	// StartupGracePeriod replaces GracePeriod for a node that never posted
	// a Ready condition; default 60s.
	StartupGracePeriod time.Duration
	// MonitorPeriod is how often every node is checked; default 5s.
	MonitorPeriod time.Duration
}

// Validate fills defaults and checks the options.
func (o *Options) Validate() error {
	if o.GracePeriod == 0 {
		o.GracePeriod = DefaultGracePeriod
	}
	if o.StartupGracePeriod == 0 {
		o.StartupGracePeriod = max(DefaultStartupGracePeriod, o.GracePeriod)
	}
	if o.MonitorPeriod == 0 {
		o.MonitorPeriod = min(DefaultMonitorPeriod, o.GracePeriod/2)
	}
	if o.GracePeriod < 0 || o.StartupGracePeriod < 0 || o.MonitorPeriod <= 0 {
		return fmt.Errorf("nodelifecycle: grace period %s, startup grace period %s and monitor period %s must be positive: %w", o.GracePeriod, o.StartupGracePeriod, o.MonitorPeriod, errdefs.ErrInvalidArgument)
	}
	return nil
}

// Config configures the controller.
type Config struct {
	controller.Config
	Options
}

// Controller is the node lifecycle controller.
type Controller struct {
	cfg         Config
	nodeLister  corelisters.NodeLister
	leaseLister coordinationlisters.LeaseLister
	podIndexer  cache.Indexer
	queue       *controller.Queue

	mu     sync.Mutex
	health map[string]*Health
}

// New validates cfg and registers Node, Lease and Pod informers (the pod
// informer gets a by-node index).
func New(cfg Config) (*Controller, error) {
	if err := cfg.Config.Validate(Name, 1); err != nil {
		return nil, err
	}
	if err := cfg.Options.Validate(); err != nil {
		return nil, err
	}
	nodeInf := cfg.Informers.Core().V1().Nodes()
	leaseInf := cfg.Informers.Coordination().V1().Leases()
	podInf := cfg.Informers.Core().V1().Pods()
	if err := podInf.Informer().AddIndexers(cache.Indexers{podsByNodeIndex: func(obj any) ([]string, error) {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			return []string{p.Spec.NodeName}, nil
		}
		return nil, nil
	}}); err != nil {
		return nil, fmt.Errorf("nodelifecycle controller: pod index: %w", err)
	}
	c := &Controller{
		cfg: cfg, nodeLister: nodeInf.Lister(), leaseLister: leaseInf.Lister(), podIndexer: podInf.Informer().GetIndexer(),
		queue: controller.NewQueue(Name, &cfg.Config), health: map[string]*Health{},
	}
	if err := c.queue.Watch(nodeInf.Informer(), controller.On(controller.AllEvents, c.queue.Enqueue)); err != nil {
		return nil, err
	}
	if err := c.queue.Watch(leaseInf.Informer(), nil); err != nil {
		return nil, err
	}
	// A pod scheduled onto an already tainted node is judged at once.
	podAdded := func(p *corev1.Pod) {
		if p.Spec.NodeName != "" {
			if n, err := c.nodeLister.Get(p.Spec.NodeName); err == nil && len(n.Spec.Taints) > 0 {
				c.queue.Add(n.Name)
			}
		}
	}
	if err := c.queue.Watch(podInf.Informer(), controller.On(controller.Added, podAdded)); err != nil {
		return nil, err
	}
	return c, nil
}

// Run monitors nodes until ctx ends: every MonitorPeriod each node is
// checked, besides the checks node changes trigger.
func (c *Controller) Run(ctx context.Context) error {
	go c.queue.Resync(ctx, c.cfg.MonitorPeriod, func() []string {
		nodes, _ := c.nodeLister.List(labels.Everything())
		names := make([]string, len(nodes))
		for i, n := range nodes {
			names[i] = n.Name
		}
		return names
	})
	return c.queue.Run(ctx, c.sync)
}

func (c *Controller) sync(ctx context.Context, name string) error {
	node, err := c.nodeLister.Get(name)
	if apierrors.IsNotFound(err) {
		c.mu.Lock()
		delete(c.health, name)
		c.mu.Unlock()
		return nil
	}
	if err != nil {
		return err
	}
	lease, err := c.leaseLister.Leases(LeaseNamespace).Get(name)
	if err != nil {
		lease = nil
	}
	now := c.cfg.Clock.Now()
	c.mu.Lock()
	h := Observe(c.health[name], node, lease, now)
	c.health[name] = &h
	c.mu.Unlock()

	nodes := c.cfg.Client.CoreV1().Nodes()
	if conds, changed := UnknownConditions(node, h, now, c.cfg.GracePeriod, c.cfg.StartupGracePeriod); changed {
		up := node.DeepCopy()
		up.Status.Conditions = conds
		if node, err = nodes.UpdateStatus(ctx, up, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("mark node %s unknown: %w", name, err)
		}
		c.cfg.Recorder.Eventf(node, corev1.EventTypeNormal, "NodeNotReady", "Node %s status is now: NodeNotReady", name)
		c.cfg.Logger.Info("node stopped reporting", "node", name, "lastSeen", h.ProbeTime)
	}
	if taints, changed := DesiredTaints(node, now); changed {
		up := node.DeepCopy()
		up.Spec.Taints = taints
		if node, err = nodes.Update(ctx, up, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update taints of node %s: %w", name, err)
		}
	}
	objs, err := c.podIndexer.ByIndex(podsByNodeIndex, name)
	if err != nil {
		return err
	}
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		pods = append(pods, o.(*corev1.Pod))
	}
	var errs []error
	if rc := readyCondition(&node.Status); rc == nil || rc.Status != corev1.ConditionTrue {
		errs = append(errs, c.markPodsNotReady(ctx, pods, now))
	}
	evict, next := EvictionPlan(node.Spec.Taints, pods, now)
	for _, p := range evict {
		c.cfg.Recorder.Eventf(p, corev1.EventTypeNormal, "TaintManagerEviction", "Marking for deletion Pod %s/%s", p.Namespace, p.Name)
		err := c.cfg.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("evict pod %s/%s: %w", p.Namespace, p.Name, err))
		}
	}
	if next > 0 {
		c.queue.AddAfter(name, next)
	}
	return errors.Join(errs...)
}

// markPodsNotReady sets Ready=False on the node's pods that still claim it.
func (c *Controller) markPodsNotReady(ctx context.Context, pods []*corev1.Pod, now time.Time) error {
	var errs []error
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		up := p.DeepCopy()
		for i := range up.Status.Conditions {
			cond := &up.Status.Conditions[i]
			if cond.Type == corev1.PodReady && cond.Status != corev1.ConditionFalse {
				cond.Status = corev1.ConditionFalse
				cond.LastTransitionTime = metav1.NewTime(now)
			}
		}
		if equality.Semantic.DeepEqual(up.Status, p.Status) {
			continue
		}
		if _, err := c.cfg.Client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, up, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("mark pod %s/%s not ready: %w", p.Namespace, p.Name, err))
		}
	}
	return errors.Join(errs...)
}
