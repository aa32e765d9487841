// Package garbagecollector deletes objects whose owners are gone, following
// ownerReferences across every resource the apiserver serves (upstream's
// garbage collector):
//   - background: once every owner of an object is gone, the object is
//     deleted (dependents of a deleted Deployment: its ReplicaSets, then
//     their pods);
//   - foreground: an owner deleted with propagationPolicy=Foreground
//     carries the foregroundDeletion finalizer; its dependents are deleted
//     (themselves in the foreground when they have dependents) and the
//     finalizer is removed once no dependent with blockOwnerDeletion is left;
//   - orphan: an owner deleted with propagationPolicy=Orphan carries the
//     orphan finalizer; its references are removed from every dependent,
//     then the finalizer.
//
// It watches every discovered resource (dynamic informers; only the object
// metadata is kept in its graph) and keeps an owner → dependents graph. Decisions are the pure
// DecideDependent and ForegroundDone.
package garbagecollector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"berth/controlplane/controller"
	"berth/internal/errdefs"
)

// Name is the controller's name.
const Name = "garbagecollector"

// DefaultWorkers is upstream's --concurrent-gc-syncs.
const DefaultWorkers = 20

// DefaultDiscoveryPeriod is how often new resources are looked for.
const DefaultDiscoveryPeriod = 30 * time.Second

// Options are the garbage collector's settings.
type Options struct {
	// DiscoveryPeriod is how often served resources are rediscovered;
	// default 30s.
	DiscoveryPeriod time.Duration
}

// Validate fills defaults and checks the options.
func (o *Options) Validate() error {
	if o.DiscoveryPeriod == 0 {
		o.DiscoveryPeriod = DefaultDiscoveryPeriod
	}
	if o.DiscoveryPeriod < 0 {
		return fmt.Errorf("garbagecollector: discovery period %s is negative: %w", o.DiscoveryPeriod, errdefs.ErrInvalidArgument)
	}
	return nil
}

// Config configures the garbage collector. Of the shared Config, Informers
// is unused (it watches metadata through its own informers).
type Config struct {
	controller.Config
	// Dynamic is the client for every resource; required.
	Dynamic dynamic.Interface
	Options
}

// ignored resources (upstream ignores events: they expire by TTL).
var ignored = map[schema.GroupResource]bool{
	{Group: "", Resource: "events"}:                 true,
	{Group: "events.k8s.io", Resource: "events"}:    true,
	{Group: "", Resource: "bindings"}:               true,
	{Group: "authorization.k8s.io", Resource: "*"}:  true,
	{Group: "authentication.k8s.io", Resource: "*"}: true,
}

// resourceInfo maps a kind to its resource.
type resourceInfo struct {
	gvr        schema.GroupVersionResource
	namespaced bool
}

// node is one object in the graph.
type node struct {
	gvr        schema.GroupVersionResource
	namespace  string
	name       string
	uid        types.UID
	rv         string
	owners     []metav1.OwnerReference
	finalizers []string
	deleting   bool
}

// Collector is the garbage collector.
type Collector struct {
	cfg     Config
	queue   workqueue.TypedRateLimitingInterface[types.UID]
	factory dynamicinformer.DynamicSharedInformerFactory

	mu         sync.RWMutex
	nodes      map[types.UID]*node
	dependents map[types.UID]map[types.UID]bool
	kinds      map[schema.GroupKind]resourceInfo
	watched    map[schema.GroupVersionResource]cache.InformerSynced
}

// New validates cfg.
func New(cfg Config) (*Collector, error) {
	if err := cfg.Config.Validate(Name, DefaultWorkers); err != nil {
		return nil, err
	}
	if cfg.Dynamic == nil {
		return nil, fmt.Errorf("garbagecollector config: Dynamic client is required: %w", errdefs.ErrInvalidArgument)
	}
	if err := cfg.Options.Validate(); err != nil {
		return nil, err
	}
	return &Collector{
		cfg:        cfg,
		queue:      controller.RateLimited[types.UID](cfg.Clock),
		factory:    dynamicinformer.NewDynamicSharedInformerFactory(cfg.Dynamic, 0),
		nodes:      map[types.UID]*node{},
		dependents: map[types.UID]map[types.UID]bool{},
		kinds:      map[schema.GroupKind]resourceInfo{},
		watched:    map[schema.GroupVersionResource]cache.InformerSynced{},
	}, nil
}

// Run collects garbage until ctx ends.
func (c *Collector) Run(ctx context.Context) error {
	defer c.queue.ShutDown()
	defer c.factory.Shutdown()
	if err := c.discover(ctx); err != nil {
		c.cfg.Logger.Warn("garbage collector: discovery", "err", err)
	}
	go func() {
		t := c.cfg.Clock.NewTicker(c.cfg.DiscoveryPeriod)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C():
				if err := c.discover(ctx); err != nil {
					c.cfg.Logger.Warn("garbage collector: discovery", "err", err)
				}
			}
		}
	}()
	c.mu.RLock()
	synced := make([]cache.InformerSynced, 0, len(c.watched))
	for _, s := range c.watched {
		synced = append(synced, s)
	}
	c.mu.RUnlock()
	c.cfg.Logger.Debug("garbage collector watching", "resources", len(synced))
	return controller.Loop(ctx, &c.cfg.Config, c.queue, synced, c.sync)
}

// discover finds the served resources that can be listed, watched and
// deleted, records their kinds, and starts a metadata informer for each
// new one.
func (c *Collector) discover(ctx context.Context) error {
	lists, err := c.cfg.Client.Discovery().ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range lists {
		gv, perr := schema.ParseGroupVersion(l.GroupVersion)
		if perr != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || ignored[gv.WithResource(r.Name).GroupResource()] || ignored[schema.GroupResource{Group: gv.Group, Resource: "*"}] {
				continue
			}
			gvr := gv.WithResource(r.Name)
			c.kinds[schema.GroupKind{Group: gv.Group, Kind: r.Kind}] = resourceInfo{gvr: gvr, namespaced: r.Namespaced}
			verbs := r.Verbs
			if !slices.Contains(verbs, "list") || !slices.Contains(verbs, "watch") || !slices.Contains(verbs, "delete") || !slices.Contains(verbs, "patch") {
				continue
			}
			if _, ok := c.watched[gvr]; ok {
				continue
			}
			inf := c.factory.ForResource(gvr).Informer()
			if err := inf.SetTransform(metadataOnly); err != nil {
				return err
			}
			if _, err := inf.AddEventHandler(c.handlers(gvr)); err != nil {
				return err
			}
			c.watched[gvr] = inf.HasSynced
		}
	}
	c.factory.Start(ctx.Done())
	return err
}

// metadataOnly keeps an object's identity and metadata (no spec, status
// or managedFields) in the collector's caches.
func metadataOnly(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	md, _ := u.Object["metadata"].(map[string]any)
	if md != nil {
		md = maps.Clone(md)
		delete(md, "managedFields")
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "metadata": md}}, nil
}

func asMeta(obj any) (metav1.Object, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	m, err := meta.Accessor(obj)
	return m, err == nil
}

func (c *Collector) handlers(gvr schema.GroupVersionResource) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.upsert(gvr, obj) },
		UpdateFunc: func(_, cur any) { c.upsert(gvr, cur) },
		DeleteFunc: func(obj any) { c.remove(obj) },
	}
}

// upsert records obj in the graph and queues what may need work: the
// object itself (owners to check, finalizers to serve) and owners it
// stopped referencing (a foreground owner may be unblocked).
func (c *Collector) upsert(gvr schema.GroupVersionResource, obj any) {
	m, ok := asMeta(obj)
	if !ok {
		return
	}
	n := &node{gvr: gvr, namespace: m.GetNamespace(), name: m.GetName(), uid: m.GetUID(), rv: m.GetResourceVersion(), owners: m.GetOwnerReferences(),
		finalizers: m.GetFinalizers(), deleting: m.GetDeletionTimestamp() != nil}
	c.mu.Lock()
	var dropped []types.UID
	if old, ok := c.nodes[n.uid]; ok {
		for _, r := range old.owners {
			if !slices.ContainsFunc(n.owners, func(x metav1.OwnerReference) bool { return x.UID == r.UID }) {
				dropped = append(dropped, r.UID)
				c.unlink(r.UID, n.uid)
			}
		}
	}
	c.nodes[n.uid] = n
	for _, r := range n.owners {
		if c.dependents[r.UID] == nil {
			c.dependents[r.UID] = map[types.UID]bool{}
		}
		c.dependents[r.UID][n.uid] = true
	}
	c.mu.Unlock()
	if len(n.owners) > 0 || (n.deleting && (slices.Contains(n.finalizers, FinalizerOrphan) || slices.Contains(n.finalizers, FinalizerForeground))) {
		c.queue.Add(n.uid)
	}
	for _, o := range dropped {
		c.queue.Add(o)
	}
}

func (c *Collector) unlink(owner, dep types.UID) {
	if deps := c.dependents[owner]; deps != nil {
		delete(deps, dep)
		if len(deps) == 0 {
			delete(c.dependents, owner)
		}
	}
}

// remove drops obj from the graph and queues its dependents (their owner
// is gone) and its owners (a foreground owner may be unblocked).
func (c *Collector) remove(obj any) {
	m, ok := asMeta(obj)
	if !ok {
		return
	}
	c.mu.Lock()
	n, ok := c.nodes[m.GetUID()]
	var wake []types.UID
	if ok {
		delete(c.nodes, m.GetUID())
		for _, r := range n.owners {
			c.unlink(r.UID, n.uid)
			wake = append(wake, r.UID)
		}
	}
	for d := range c.dependents[m.GetUID()] {
		wake = append(wake, d)
	}
	c.mu.Unlock()
	for _, u := range wake {
		c.queue.Add(u)
	}
}

func (c *Collector) snapshot(uid types.UID) (*node, []*node) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n, ok := c.nodes[uid]
	if !ok {
		return nil, nil
	}
	cp := *n
	var deps []*node
	for d := range c.dependents[uid] {
		if dn, ok := c.nodes[d]; ok {
			x := *dn
			deps = append(deps, &x)
		}
	}
	return &cp, deps
}

func (c *Collector) sync(ctx context.Context, uid types.UID) error {
	n, deps := c.snapshot(uid)
	if n == nil {
		return nil
	}
	var errs []error
	if n.deleting && slices.Contains(n.finalizers, FinalizerOrphan) {
		errs = append(errs, c.orphan(ctx, n, deps))
	}
	if n.deleting && slices.Contains(n.finalizers, FinalizerForeground) {
		errs = append(errs, c.foreground(ctx, n, deps))
	}
	if len(n.owners) > 0 && (!n.deleting || slices.Contains(n.finalizers, FinalizerForeground)) {
		errs = append(errs, c.attemptToDelete(ctx, n, deps))
	}
	return errors.Join(errs...)
}

// orphan removes n's references from its dependents, then n's orphan finalizer.
func (c *Collector) orphan(ctx context.Context, n *node, deps []*node) error {
	for _, d := range deps {
		if err := c.patchOwners(ctx, d, withoutRefs(d.owners, []types.UID{n.uid})); err != nil {
			return fmt.Errorf("orphan %s %s/%s: %w", d.gvr.Resource, d.namespace, d.name, err)
		}
	}
	return c.patchFinalizers(ctx, n, withoutFinalizer(n.finalizers, FinalizerOrphan))
}

// foreground deletes n's dependents and drops the foregroundDeletion
// finalizer once none blocks.
func (c *Collector) foreground(ctx context.Context, n *node, deps []*node) error {
	refs := make([][]metav1.OwnerReference, 0, len(deps))
	for _, d := range deps {
		refs = append(refs, d.owners)
		c.queue.Add(d.uid)
	}
	if !ForegroundDone(n.uid, refs) {
		return nil // a dependent's deletion requeues n
	}
	return c.patchFinalizers(ctx, n, withoutFinalizer(n.finalizers, FinalizerForeground))
}

// ownerState finds whether the owner ref of n exists, verifying with the
// apiserver when the graph does not know it.
func (c *Collector) ownerState(ctx context.Context, n *node, ref metav1.OwnerReference) (OwnerState, error) {
	c.mu.RLock()
	owner, known := c.nodes[ref.UID]
	gv, _ := schema.ParseGroupVersion(ref.APIVersion)
	info, mapped := c.kinds[schema.GroupKind{Group: gv.Group, Kind: ref.Kind}]
	c.mu.RUnlock()
	if known {
		if owner.deleting && slices.Contains(owner.finalizers, FinalizerForeground) {
			return OwnerWaiting, nil
		}
		return OwnerSolid, nil
	}
	if !mapped {
		// Not a served kind (yet): never delete on a guess. Discovery runs
		// again every DiscoveryPeriod and the object is looked at on its
		// next change.
		c.cfg.Logger.Debug("owner kind not served; keeping dependent", "kind", ref.Kind, "apiVersion", ref.APIVersion, "namespace", n.namespace, "name", n.name)
		return OwnerSolid, nil
	}
	ns := ""
	if info.namespaced {
		ns = n.namespace
	}
	live, err := c.cfg.Dynamic.Resource(info.gvr).Namespace(ns).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return OwnerAbsent, nil
	case err != nil:
		return OwnerSolid, err
	case live.GetUID() != ref.UID:
		return OwnerAbsent, nil
	case live.GetDeletionTimestamp() != nil && slices.Contains(live.GetFinalizers(), FinalizerForeground):
		return OwnerWaiting, nil
	}
	return OwnerSolid, nil
}

func (c *Collector) attemptToDelete(ctx context.Context, n *node, deps []*node) error {
	states := map[types.UID]OwnerState{}
	for _, r := range n.owners {
		st, err := c.ownerState(ctx, n, r)
		if err != nil {
			return err
		}
		states[r.UID] = st
	}
	known := Dependents{Any: len(deps) > 0, Waiting: slices.ContainsFunc(deps, func(d *node) bool {
		return d.deleting && slices.Contains(d.finalizers, FinalizerForeground)
	})}
	act := DecideDependent(n.owners, states, n.finalizers, known)
	if len(act.RemoveRefs) > 0 {
		return c.patchOwners(ctx, n, withoutRefs(n.owners, act.RemoveRefs))
	}
	if !act.Delete || n.deleting {
		return nil
	}
	if act.Unblock {
		if err := c.patchOwners(ctx, n, unblocked(n.owners)); err != nil {
			return err
		}
		c.cfg.Logger.Debug("unblocked the owners of an object in an ownership circle", "resource", n.gvr.Resource, "namespace", n.namespace, "name", n.name)
	}
	policy := act.Policy
	err := c.cfg.Dynamic.Resource(n.gvr).Namespace(n.namespace).Delete(ctx, n.name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &n.uid}, PropagationPolicy: &policy,
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete %s %s/%s: %w", n.gvr.Resource, n.namespace, n.name, err)
	}
	c.cfg.Logger.Debug("collected", "resource", n.gvr.Resource, "namespace", n.namespace, "name", n.name, "policy", policy)
	return nil
}

// patchOwners sets n's ownerReferences.
func (c *Collector) patchOwners(ctx context.Context, n *node, refs []metav1.OwnerReference) error {
	return c.patchMeta(ctx, n, map[string]any{"ownerReferences": refs})
}

// patchFinalizers sets n's finalizers.
func (c *Collector) patchFinalizers(ctx context.Context, n *node, fs []string) error {
	return c.patchMeta(ctx, n, map[string]any{"finalizers": fs})
}

func (c *Collector) patchMeta(ctx context.Context, n *node, meta map[string]any) error {
	// uid and resourceVersion make the patch conditional: a stale view
	// fails with a conflict and is retried from the updated cache.
	meta["uid"], meta["resourceVersion"] = n.uid, n.rv
	body, _ := json.Marshal(map[string]any{"metadata": meta})
	_, err := c.cfg.Dynamic.Resource(n.gvr).Namespace(n.namespace).Patch(ctx, n.name, types.MergePatchType, body, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("patch %s %s/%s: %w", n.gvr.Resource, n.namespace, n.name, err)
	}
	return nil
}
