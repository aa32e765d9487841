// Package namespace empties terminating namespaces and then finalizes them
// (upstream's namespace controller, pkg/controller/namespace): every
// resource served in a namespace, built-in, custom or aggregated, found
// through discovery, is deleted through the API, pods first (upstream's
// OrderedNamespaceDeletion: nothing else is touched while a pod is left, so
// the secrets and volumes a pod uses outlive it). The namespace's deletion
// conditions say what is left and why; once nothing is, the "kubernetes"
// finalizer is removed through namespaces/{name}/finalize, which deletes the
// namespace.
package namespace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"berth/controlplane/controller"
	"berth/internal/errdefs"
)

// Name is the controller's name.
const Name = "namespace"

// DefaultRetryInterval is how soon a namespace with content left is
// looked at again.
const DefaultRetryInterval = 2 * time.Second

// DefaultWorkers is how many namespaces are emptied at once
// (kube-controller-manager's --concurrent-namespace-syncs): one at a time,
// fifty namespaces deleted together took minutes to drain.
const DefaultWorkers = 10

var podsGVR = corev1.SchemeGroupVersion.WithResource("pods")

// Config configures the controller.
type Config struct {
	controller.Config
	// Metadata lists and deletes the namespaces' content; required.
	Metadata metadata.Interface
	// RetryInterval is how soon a namespace with content left is looked at
	// again; default DefaultRetryInterval.
	RetryInterval time.Duration
}

// Controller deletes terminating namespaces' content.
type Controller struct {
	cfg    Config
	synced cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
}

// New validates cfg and registers a Namespace informer.
func New(cfg Config) (*Controller, error) {
	if err := cfg.Validate(Name, DefaultWorkers); err != nil {
		return nil, err
	}
	if cfg.Metadata == nil {
		return nil, fmt.Errorf("%s controller config: Metadata is required: %w", Name, errdefs.ErrInvalidArgument)
	}
	if cfg.RetryInterval < 0 {
		return nil, fmt.Errorf("%s controller config: RetryInterval %s is negative: %w", Name, cfg.RetryInterval, errdefs.ErrInvalidArgument)
	}
	if cfg.RetryInterval == 0 {
		cfg.RetryInterval = DefaultRetryInterval
	}
	inf := cfg.Informers.Core().V1().Namespaces().Informer()
	c := &Controller{
		cfg:    cfg,
		synced: inf.HasSynced,
		// Upstream's limiter for this controller: per-item back-off capped
		// at a minute (an unreachable aggregated API fails discovery until
		// it is back), under the overall bucket.
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedMaxOfRateLimiter(
				workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, time.Minute),
				&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(10), 100)}),
			workqueue.TypedRateLimitingQueueConfig[string]{Clock: cfg.Clock}),
	}
	enqueue := func(obj any) {
		if ns, ok := obj.(*corev1.Namespace); ok && ns.DeletionTimestamp != nil {
			c.queue.Add(ns.Name)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, cur any) { enqueue(cur) }}); err != nil {
		return nil, fmt.Errorf("%s controller: %w", Name, err)
	}
	return c, nil
}

// Run deletes terminating namespaces' content until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	return controller.Loop(ctx, &c.cfg.Config, c.queue, []cache.InformerSynced{c.synced}, c.sync)
}

// sync makes one pass over a terminating namespace: deletes what it can,
// records the conditions, and finalizes the namespace once it is empty;
// with content left it looks again after RetryInterval.
func (c *Controller) sync(ctx context.Context, name string) error {
	namespaces := c.cfg.Client.CoreV1().Namespaces()
	ns, err := namespaces.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ns.DeletionTimestamp == nil || !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
		return nil
	}
	p := c.deleteContent(ctx, ns)
	if err := c.recordConditions(ctx, ns, p); err != nil {
		return err
	}
	if err := errors.Join(append([]error{p.discoveryErr}, p.deleteErrs...)...); err != nil {
		return err
	}
	if len(p.remaining) > 0 {
		c.queue.AddAfter(name, c.cfg.RetryInterval)
		return nil
	}
	ns.Spec.Finalizers = slices.DeleteFunc(ns.Spec.Finalizers, func(f corev1.FinalizerName) bool { return f == corev1.FinalizerKubernetes })
	_, err = namespaces.Finalize(ctx, ns, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("finalizing namespace %s: %w", name, err)
	}
	c.cfg.Logger.Info("namespace finalized", "namespace", name)
	return nil
}

// recordConditions writes the pass's conditions (and phase Terminating)
// into the namespace's status when they changed.
func (c *Controller) recordConditions(ctx context.Context, ns *corev1.Namespace, p progress) error {
	cur := ns.DeepCopy()
	changed := mergeConditions(&cur.Status, p.conditions(), metav1.NewTime(c.cfg.Clock.Now()))
	if cur.Status.Phase != corev1.NamespaceTerminating {
		cur.Status.Phase, changed = corev1.NamespaceTerminating, true
	}
	if !changed {
		return nil
	}
	updated, err := c.cfg.Client.CoreV1().Namespaces().UpdateStatus(ctx, cur, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("updating the status of namespace %s: %w", ns.Name, err)
	}
	*ns = *updated
	return nil
}

// deleteContent deletes what the namespace holds, pods first: while a pod
// is left, nothing else is deleted.
func (c *Controller) deleteContent(ctx context.Context, ns *corev1.Namespace) progress {
	p := progress{remaining: map[schema.GroupVersionResource]int{}, finalizers: map[string]int{}}
	lists, err := discovery.ServerPreferredNamespacedResources(c.cfg.Client.Discovery())
	if err != nil {
		// Partial: what was discovered is still deleted.
		p.discoveryErr = err
	}
	served := map[schema.GroupVersionResource]metav1.APIResource{}
	for _, l := range discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"delete"}}, lists) {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			served[gv.WithResource(r.Name)] = r
		}
	}
	if r, ok := served[podsGVR]; ok {
		c.deleteResource(ctx, &p, podsGVR, r, ns)
		if p.remaining[podsGVR] > 0 {
			return p
		}
		delete(served, podsGVR)
	}
	for gvr, r := range served {
		c.deleteResource(ctx, &p, gvr, r, ns)
	}
	return p
}

// deleteResource deletes every object of one resource in the namespace
// (as a collection when the resource allows it) and counts what is left.
func (c *Controller) deleteResource(ctx context.Context, p *progress, gvr schema.GroupVersionResource, r metav1.APIResource, ns *corev1.Namespace) {
	client := c.cfg.Metadata.Resource(gvr).Namespace(ns.Name)
	background := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &background}
	if !slices.Contains(r.Verbs, "list") {
		return
	}
	estimate, err := c.estimate(ctx, gvr, ns)
	if err != nil {
		p.deleteErrs = append(p.deleteErrs, err)
		return
	}
	if slices.Contains(r.Verbs, "deletecollection") {
		err = client.DeleteCollection(ctx, opts, metav1.ListOptions{})
	} else {
		var list *metav1.PartialObjectMetadataList
		list, err = client.List(ctx, metav1.ListOptions{})
		for i := 0; err == nil && i < len(list.Items); i++ {
			if err = client.Delete(ctx, list.Items[i].Name, opts); apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
				err = nil
			}
		}
	}
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsMethodNotSupported(err) {
		p.deleteErrs = append(p.deleteErrs, fmt.Errorf("deleting %s: %w", gvr, err))
		return
	}
	left, err := client.List(ctx, metav1.ListOptions{})
	if err != nil {
		if !apierrors.IsNotFound(err) && !apierrors.IsMethodNotSupported(err) {
			p.deleteErrs = append(p.deleteErrs, fmt.Errorf("listing %s: %w", gvr, err))
		}
		return
	}
	if len(left.Items) == 0 {
		return
	}
	p.remaining[gvr] = len(left.Items)
	held := false
	for _, item := range left.Items {
		for _, f := range item.Finalizers {
			p.finalizers[f]++
			held = true
		}
	}
	if estimate == 0 && !held {
		// Nothing should keep these: neither a grace period nor a finalizer.
		p.deleteErrs = append(p.deleteErrs, fmt.Errorf("unexpected items still remain in namespace: %s for gvr: %v", ns.Name, gvr))
	}
}

// estimate is how many seconds more the resource's objects may take to go,
// as upstream estimates it: for pods, the longest grace period of those
// not yet terminal, unless that long has passed since the namespace's
// deletion; for the rest none.
func (c *Controller) estimate(ctx context.Context, gvr schema.GroupVersionResource, ns *corev1.Namespace) (int64, error) {
	if gvr.GroupResource() != podsGVR.GroupResource() {
		return 0, nil
	}
	pods, err := c.cfg.Client.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("listing pods: %w", err)
	}
	var longest int64
	for _, pod := range pods.Items {
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		if g := pod.Spec.TerminationGracePeriodSeconds; g != nil && *g > longest {
			longest = *g
		}
	}
	if c.cfg.Clock.Since(ns.DeletionTimestamp.Time) >= time.Duration(longest)*time.Second {
		return 0, nil
	}
	return longest, nil
}
