package endpointslice

import (
	"context"
	"errors"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"

	"berth/controlplane/controller"
)

// Name is the controller's name (kube-controller-manager's).
const Name = "endpointslice"

// Config configures the controller.
type Config struct {
	controller.Config
}

// Controller keeps the EndpointSlices of Services with selectors.
type Controller struct {
	cfg      Config
	services corelisters.ServiceLister
	pods     corelisters.PodLister
	nodes    corelisters.NodeLister
	slices   discoverylisters.EndpointSliceLister
	queue    *controller.Queue
	// written tracks, per Service key, the slices this controller created
	// and deleted that its informer may not have seen yet.
	written tracker
	// triggers compute the slices' last-change-trigger-time.
	triggers *TriggerTimes
}

// tracker remembers recent writes so a sync on a stale cache waits
// instead of creating a slice twice or deleting one twice.
type tracker struct {
	mu      sync.Mutex
	created map[string]map[string]bool    // key → slice names
	deleted map[string]map[types.UID]bool // key → slice UIDs
}

// stale reports whether existing misses a created slice or still holds a
// deleted one; entries the cache caught up with are dropped.
func (t *tracker) stale(key string, existing []*discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	names, uids := map[string]bool{}, map[types.UID]bool{}
	for _, s := range existing {
		names[s.Name], uids[s.UID] = true, true
	}
	stale := false
	for n := range t.created[key] {
		if names[n] {
			delete(t.created[key], n)
		} else {
			stale = true
		}
	}
	for u := range t.deleted[key] {
		if uids[u] {
			stale = true
		} else {
			delete(t.deleted[key], u)
		}
	}
	return stale
}

func (t *tracker) record(key string, created []string, deleted []types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.created == nil {
		t.created, t.deleted = map[string]map[string]bool{}, map[string]map[types.UID]bool{}
	}
	for _, n := range created {
		if t.created[key] == nil {
			t.created[key] = map[string]bool{}
		}
		t.created[key][n] = true
	}
	for _, u := range deleted {
		if t.deleted[key] == nil {
			t.deleted[key] = map[types.UID]bool{}
		}
		t.deleted[key][u] = true
	}
}

// New validates cfg and registers the Service, Pod, Node and EndpointSlice informers.
func New(cfg Config) (*Controller, error) {
	if err := cfg.Validate(Name, 5); err != nil {
		return nil, err
	}
	inf := cfg.Informers
	svcInf, podInf, nodeInf, sliceInf := inf.Core().V1().Services(), inf.Core().V1().Pods(), inf.Core().V1().Nodes(), inf.Discovery().V1().EndpointSlices()
	c := &Controller{
		cfg: cfg, services: svcInf.Lister(), pods: podInf.Lister(), nodes: nodeInf.Lister(), slices: sliceInf.Lister(),
		queue: controller.NewQueue(Name, &cfg.Config), triggers: NewTriggerTimes(),
	}
	handlers := []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{svcInf.Informer(), controller.On(controller.AllEvents, c.queue.Enqueue)},
		{podInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { c.enqueuePodServices(obj) },
			UpdateFunc: func(old, cur any) { c.enqueuePodServices(old); c.enqueuePodServices(cur) },
			DeleteFunc: func(obj any) { c.enqueuePodServices(obj) },
		}},
		{sliceInf.Informer(), controller.On(controller.AllEvents, c.enqueueSliceService)},
		{nodeInf.Informer(), cache.ResourceEventHandlerFuncs{
			// A node's zone appears in its pods' endpoints.
			UpdateFunc: func(old, cur any) {
				if old.(*corev1.Node).Labels[corev1.LabelTopologyZone] != cur.(*corev1.Node).Labels[corev1.LabelTopologyZone] {
					c.enqueueAll()
				}
			},
		}},
	}
	for _, h := range handlers {
		if err := c.queue.Watch(h.inf, h.h); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Run syncs until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	return c.queue.Run(ctx, c.sync)
}

// enqueuePodServices queues the Services in the pod's namespace whose
// selector matches the pod.
func (c *Controller) enqueuePodServices(obj any) {
	pod, ok := controller.Object[*corev1.Pod](obj)
	if !ok {
		return
	}
	svcs, err := c.services.Services(pod.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, s := range svcs {
		if s.Spec.Selector != nil && labels.SelectorFromValidatedSet(s.Spec.Selector).Matches(labels.Set(pod.Labels)) {
			c.queue.Add(s.Namespace + "/" + s.Name)
		}
	}
}

func (c *Controller) enqueueSliceService(s *discoveryv1.EndpointSlice) {
	if s.Labels[discoveryv1.LabelManagedBy] != ManagedBy || s.Labels[discoveryv1.LabelServiceName] == "" {
		return
	}
	c.queue.Add(s.Namespace + "/" + s.Labels[discoveryv1.LabelServiceName])
}

func (c *Controller) enqueueAll() {
	svcs, err := c.services.List(labels.Everything())
	if err != nil {
		return
	}
	for _, s := range svcs {
		c.queue.Add(s.Namespace + "/" + s.Name)
	}
}

// sync plans the Service's slices and writes the plan: creates, then
// updates, then deletes (so a Service never loses every endpoint in
// between).
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	existing, err := c.slices.EndpointSlices(ns).List(labels.SelectorFromSet(labels.Set{
		discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: ManagedBy}))
	if err != nil {
		return err
	}
	if c.written.stale(key, existing) {
		c.queue.AddAfter(key, staleRetry)
		return nil
	}
	svc, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) || (err == nil && (svc.Spec.Selector == nil || svc.Spec.Type == corev1.ServiceTypeExternalName)) {
		// Gone or not ours to fill: its managed slices go (the garbage
		// collector would take a deleted Service's too).
		c.triggers.Forget(key)
		return c.apply(ctx, key, PlanResult{Delete: existing})
	}
	if err != nil {
		return err
	}
	pods, err := c.pods.Pods(ns).List(labels.SelectorFromValidatedSet(svc.Spec.Selector))
	if err != nil {
		return err
	}
	zones := map[string]string{}
	for _, p := range pods {
		if n := p.Spec.NodeName; n != "" {
			if _, seen := zones[n]; !seen {
				if node, err := c.nodes.Get(n); err == nil {
					zones[n] = node.Labels[corev1.LabelTopologyZone]
				}
			}
		}
	}
	trigger, commit := c.triggers.Compute(key, svc, pods)
	if err := c.apply(ctx, key, Plan(svc, pods, zones, existing, trigger)); err != nil {
		return err
	}
	commit()
	return nil
}

// staleRetry is how soon a sync on a stale cache is tried again.
const staleRetry = 100 * time.Millisecond

func (c *Controller) apply(ctx context.Context, key string, plan PlanResult) error {
	var errs []error
	var created []string
	var deleted []types.UID
	defer func() { c.written.record(key, created, deleted) }()
	for _, s := range plan.Create {
		out, err := c.cfg.Client.DiscoveryV1().EndpointSlices(s.Namespace).Create(ctx, s, metav1.CreateOptions{})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		created = append(created, out.Name)
	}
	for _, s := range plan.Update {
		if _, err := c.cfg.Client.DiscoveryV1().EndpointSlices(s.Namespace).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range plan.Delete {
		err := c.cfg.Client.DiscoveryV1().EndpointSlices(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &s.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		deleted = append(deleted, s.UID)
	}
	return errors.Join(errs...)
}
