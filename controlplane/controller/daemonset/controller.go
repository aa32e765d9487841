// Package daemonset is the DaemonSet controller: one pod of each daemon set
// on every node that should run it (node name, node selector and required
// node affinity, taints against the template's tolerations plus the daemon
// tolerations), pinned there by node affinity on metadata.name; failed pods
// replaced with per-node back-off; RollingUpdate (maxUnavailable or
// maxSurge) and OnDelete updates; the template's history kept in
// ControllerRevisions (controller-revision-hash, collisionCount) for
// `kubectl rollout history/undo`; and the status counts.
//
// Each sync reads the caches, decides with the pure Decide, Status,
// SortHistory and ToPrune, and then acts: revisions first, then pod
// creations and deletions (recorded as expectations, so that a sync on a
// stale cache does not repeat them), then the status.
package daemonset

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"

	"berth/controlplane/controller"
	"berth/controlplane/controller/controllerref"
	"berth/controlplane/controller/replicaset"
)

// Name is the controller's name (upstream's "daemonset").
const Name = "daemonset"

// DefaultWorkers is the number of parallel syncs by default (upstream's
// --concurrent-daemonset-syncs).
const DefaultWorkers = 2

// Kind is the DaemonSet kind, in its pods' and revisions' controller references.
var Kind = appsv1.SchemeGroupVersion.WithKind("DaemonSet")

// Back-off of a node's failed daemon pods (upstream's 1 s doubling to 15 min).
const (
	failedPodBackoffInitial = time.Second
	failedPodBackoffMax     = 15 * time.Minute
)

// Config configures the DaemonSet controller.
type Config struct {
	controller.Config
}

// Controller is the DaemonSet controller.
type Controller struct {
	cfg          Config
	dsLister     appslisters.DaemonSetLister
	podLister    corelisters.PodLister
	nodeLister   corelisters.NodeLister
	revLister    appslisters.ControllerRevisionLister
	owners       controller.Owners[*appsv1.DaemonSet]
	queue        *controller.Queue
	expectations *replicaset.Expectations
	failed       *flowcontrol.Backoff
}

// New validates cfg and registers the controller's informers (DaemonSets,
// Pods, Nodes, ControllerRevisions) with cfg.Informers.
func New(cfg Config) (*Controller, error) {
	if err := cfg.Validate(Name, DefaultWorkers); err != nil {
		return nil, err
	}
	dsInf := cfg.Informers.Apps().V1().DaemonSets()
	podInf := cfg.Informers.Core().V1().Pods()
	nodeInf := cfg.Informers.Core().V1().Nodes()
	revInf := cfg.Informers.Apps().V1().ControllerRevisions()
	c := &Controller{
		cfg: cfg, dsLister: dsInf.Lister(), podLister: podInf.Lister(), nodeLister: nodeInf.Lister(), revLister: revInf.Lister(),
		owners: controller.OwnersFromLister(Kind, dsInf.Lister().DaemonSets,
			func(ds *appsv1.DaemonSet) *metav1.LabelSelector { return ds.Spec.Selector }),
		queue:        controller.NewQueue(Name, &cfg.Config),
		expectations: replicaset.NewExpectations(cfg.Clock),
		failed:       flowcontrol.NewBackOff(failedPodBackoffInitial, failedPodBackoffMax),
	}
	pods := &controller.Dependents[*appsv1.DaemonSet, *corev1.Pod]{Owners: c.owners, Queue: c.queue, Observer: c.expectations,
		Ready: isReady, MinReadySeconds: func(ds *appsv1.DaemonSet) int32 { return ds.Spec.MinReadySeconds }}
	for _, w := range []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{dsInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: c.queue.Enqueue, UpdateFunc: func(_, cur any) { c.queue.Enqueue(cur) }, DeleteFunc: c.deleteDS}},
		{podInf.Informer(), pods.Handler()},
		{nodeInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { c.enqueueAll() }, UpdateFunc: c.updateNode, DeleteFunc: func(any) { c.enqueueAll() }}},
		{revInf.Informer(), controller.On(controller.AllEvents, c.revisionChanged)},
	} {
		if err := c.queue.Watch(w.inf, w.h); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Run syncs DaemonSets until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	return c.queue.Run(ctx, c.sync)
}

func (c *Controller) deleteDS(obj any) {
	if key, ok := controller.KeyFunc(obj); ok {
		c.expectations.Delete(key)
		c.queue.Add(key)
	}
}

func (c *Controller) enqueueAll() {
	all, err := c.dsLister.List(labels.Everything())
	if err != nil {
		return
	}
	for _, ds := range all {
		c.queue.Enqueue(ds)
	}
}

// updateNode enqueues every daemon set when what ShouldRun reads changed.
func (c *Controller) updateNode(oldObj, curObj any) {
	old, cur := oldObj.(*corev1.Node), curObj.(*corev1.Node)
	if equality.Semantic.DeepEqual(old.Labels, cur.Labels) && equality.Semantic.DeepEqual(old.Spec.Taints, cur.Spec.Taints) {
		return
	}
	c.enqueueAll()
}

func (c *Controller) revisionChanged(r *appsv1.ControllerRevision) {
	if ds, ok := c.owners.Of(r); ok {
		c.queue.Enqueue(ds)
	}
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	ds, err := c.dsLister.DaemonSets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.expectations.Delete(key)
		return nil
	}
	if err != nil {
		return err
	}
	if ds.DeletionTimestamp != nil {
		return nil // the garbage collector removes its pods and revisions
	}
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil || sel.Empty() {
		c.cfg.Recorder.Eventf(ds, corev1.EventTypeWarning, "SelectingAll", "This daemon set is selecting all pods. A non-empty selector is required.")
		return nil
	}
	nodes, err := c.nodeLister.List(labels.Everything())
	if err != nil {
		return err
	}
	hash, old, err := c.history(ctx, ds, sel)
	if err != nil {
		return err
	}
	pods, err := c.claimPods(ctx, ds, sel)
	if err != nil {
		return err
	}
	byNode := map[string][]*corev1.Pod{}
	for _, p := range pods {
		if n := TargetNode(p); n != "" {
			byNode[n] = append(byNode[n], p)
		}
	}
	now := c.cfg.Clock.Now()
	state := State{DS: ds, Nodes: nodes, PodsByNode: byNode, Hash: hash, Now: now,
		InBackoff: func(node string) bool { return c.failed.IsInBackOffSinceUpdate(backoffKey(ds, node), now) }}
	var manageErr error
	if c.expectations.Satisfied(key) {
		plan := Decide(state)
		manageErr = c.execute(ctx, key, ds, hash, plan, now)
		if manageErr == nil {
			manageErr = c.prune(ctx, ds, old, pods)
		}
	}
	if err := c.writeStatus(ctx, ds, Status(state)); err != nil {
		return errors.Join(manageErr, err)
	}
	return manageErr
}

func backoffKey(ds *appsv1.DaemonSet, node string) string { return string(ds.UID) + "/" + node }

// claimPods adopts and releases pods; it returns ds's pods afterwards.
func (c *Controller) claimPods(ctx context.Context, ds *appsv1.DaemonSet, sel labels.Selector) ([]*corev1.Pod, error) {
	all, err := c.podLister.Pods(ds.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	return controllerref.PodAdopter(c.cfg.Client, Kind, controllerref.Fetch[*appsv1.DaemonSet](c.cfg.Client.AppsV1().DaemonSets)).Execute(ctx, ds, controllerref.Plan(ds, sel, all))
}

// history makes sure ds's current template has its ControllerRevision (the
// highest-numbered one) and returns its hash and the old revisions.
func (c *Controller) history(ctx context.Context, ds *appsv1.DaemonSet, sel labels.Selector) (string, []*appsv1.ControllerRevision, error) {
	all, err := c.revLister.ControllerRevisions(ds.Namespace).List(labels.Everything())
	if err != nil {
		return "", nil, err
	}
	client := c.cfg.Client.AppsV1().ControllerRevisions(ds.Namespace)
	// Revisions that fail to be adopted or released are tried again next sync.
	owned, _ := controllerref.RevisionAdopter[*appsv1.DaemonSet](c.cfg.Client, Kind, nil).Execute(ctx, ds, controllerref.Plan(ds, sel, all))
	h, err := SortHistory(ds, owned)
	if err != nil {
		return "", nil, err
	}
	cur := h.Current
	if cur == nil {
		if cur, err = c.snapshot(ctx, ds, h.Next); err != nil {
			return "", nil, err
		}
	} else {
		if err := c.dedup(ctx, ds, cur, h.Duplicates); err != nil {
			return "", nil, err
		}
		if cur.Revision < h.Next {
			upd := cur.DeepCopy()
			upd.Revision = h.Next
			if cur, err = client.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
				return "", nil, fmt.Errorf("renumber revision %s: %w", upd.Name, err)
			}
		}
	}
	hash := cur.Labels[HashLabel]
	if hash == "" {
		hash = Hash(ds)
	}
	return hash, h.Old, nil
}

// snapshot creates the revision of ds's current template. A revision of
// that name holding another template is a hash collision: the collision
// count is raised (a new hash next time) and the sync retried.
func (c *Controller) snapshot(ctx context.Context, ds *appsv1.DaemonSet, number int64) (*appsv1.ControllerRevision, error) {
	rev, err := NewRevision(ds, Hash(ds), number)
	if err != nil {
		return nil, err
	}
	client := c.cfg.Client.AppsV1().ControllerRevisions(ds.Namespace)
	created, err := client.Create(ctx, rev, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return created, err
	}
	existing, gerr := client.Get(ctx, rev.Name, metav1.GetOptions{})
	if gerr != nil {
		return nil, gerr
	}
	if ref := metav1.GetControllerOfNoCopy(existing); ref != nil && ref.UID == ds.UID && string(existing.Data.Raw) == string(rev.Data.Raw) {
		return existing, nil
	}
	fresh, gerr := c.cfg.Client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
	if gerr != nil {
		return nil, gerr
	}
	n := int32(0)
	if fresh.Status.CollisionCount != nil {
		n = *fresh.Status.CollisionCount
	}
	n++
	fresh.Status.CollisionCount = &n
	if _, uerr := c.cfg.Client.AppsV1().DaemonSets(ds.Namespace).UpdateStatus(ctx, fresh, metav1.UpdateOptions{}); uerr != nil {
		return nil, uerr
	}
	return nil, fmt.Errorf("revision %s exists with another template: collision count raised to %d", rev.Name, n)
}

// dedup relabels the pods of duplicate revisions as cur's and deletes the duplicates.
func (c *Controller) dedup(ctx context.Context, ds *appsv1.DaemonSet, cur *appsv1.ControllerRevision, dups []*appsv1.ControllerRevision) error {
	if len(dups) == 0 {
		return nil
	}
	hash := cur.Labels[HashLabel]
	pods, err := c.podLister.Pods(ds.Namespace).List(labels.Everything())
	if err != nil {
		return err
	}
	for _, p := range pods {
		ref := metav1.GetControllerOfNoCopy(p)
		if ref == nil || ref.UID != ds.UID || p.Labels[HashLabel] == hash {
			continue
		}
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, HashLabel, hash)
		if _, err := c.cfg.Client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("relabel pod %s: %w", p.Name, err)
		}
	}
	for _, d := range dups {
		if err := c.cfg.Client.AppsV1().ControllerRevisions(ds.Namespace).Delete(ctx, d.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete duplicate revision %s: %w", d.Name, err)
		}
	}
	return nil
}

// prune deletes the old revisions ToPrune picks.
func (c *Controller) prune(ctx context.Context, ds *appsv1.DaemonSet, old []*appsv1.ControllerRevision, pods []*corev1.Pod) error {
	for _, r := range ToPrune(ds, old, pods) {
		if err := c.cfg.Client.AppsV1().ControllerRevisions(ds.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete revision %s: %w", r.Name, err)
		}
	}
	return nil
}

// execute carries out plan: deletions (failed pods first recorded with an
// event and their node's back-off), then creations in slow-start batches;
// each recorded as an expectation before it is issued.
func (c *Controller) execute(ctx context.Context, key string, ds *appsv1.DaemonSet, hash string, plan Plan, now time.Time) error {
	for _, p := range plan.Failed {
		node := TargetNode(p)
		c.failed.Next(backoffKey(ds, node), now)
		c.cfg.Recorder.Eventf(ds, corev1.EventTypeWarning, "FailedDaemonPod", "Found failed daemon pod %s/%s on node %s, will try to kill it", p.Namespace, p.Name, node)
	}
	for _, node := range plan.Backoff {
		c.queue.AddAfter(key, c.failed.Get(backoffKey(ds, node)))
	}
	pc := replicaset.PodControl{Client: c.cfg.Client, Recorder: c.cfg.Recorder, Expectations: c.expectations}
	if err := pc.Delete(ctx, key, ds, plan.Delete); err != nil {
		return err
	}
	if len(plan.CreateOn) == 0 {
		return nil
	}
	return pc.Create(ctx, key, ds, len(plan.CreateOn), func(i int) *corev1.Pod { return NewPod(ds, plan.CreateOn[i], hash) })
}

// writeStatus writes status if it differs from ds's, retrying once on a
// conflict with a fresh copy; it requeues ds when a ready pod becomes
// available later (minReadySeconds).
func (c *Controller) writeStatus(ctx context.Context, ds *appsv1.DaemonSet, status appsv1.DaemonSetStatus) error {
	if status.NumberReady != status.NumberAvailable && ds.Spec.MinReadySeconds > 0 {
		key, _ := controller.KeyFunc(ds)
		c.queue.AddAfter(key, time.Duration(ds.Spec.MinReadySeconds)*time.Second)
	}
	if equality.Semantic.DeepEqual(ds.Status, status) {
		return nil
	}
	client := c.cfg.Client.AppsV1().DaemonSets(ds.Namespace)
	cp := ds.DeepCopy()
	cp.Status = status
	_, err := client.UpdateStatus(ctx, cp, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		fresh, gerr := client.Get(ctx, ds.Name, metav1.GetOptions{})
		if gerr != nil {
			return gerr
		}
		status.CollisionCount = fresh.Status.CollisionCount
		fresh.Status = status
		_, err = client.UpdateStatus(ctx, fresh, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("update status of daemonset %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	return nil
}
