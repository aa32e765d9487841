package deployment

import (
	"context"
	"errors"
	"fmt"

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
	"k8s.io/client-go/util/workqueue"

	"berth/controlplane/controller"
	"berth/controlplane/controller/controllerref"
)

// Name is the controller's name.
const Name = "deployment"

// DefaultWorkers is upstream's --concurrent-deployment-syncs.
const DefaultWorkers = 5

var rsKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

// Config configures the Deployment controller.
type Config struct {
	controller.Config
}

// Controller is the Deployment controller.
type Controller struct {
	cfg       Config
	dLister   appslisters.DeploymentLister
	rsLister  appslisters.ReplicaSetLister
	podLister corelisters.PodLister
	synced    []cache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
}

// New validates cfg and registers the controller's informers (Deployments,
// ReplicaSets, Pods) with cfg.Informers.
func New(cfg Config) (*Controller, error) {
	if err := cfg.Validate(Name, DefaultWorkers); err != nil {
		return nil, err
	}
	dInf := cfg.Informers.Apps().V1().Deployments()
	rsInf := cfg.Informers.Apps().V1().ReplicaSets()
	podInf := cfg.Informers.Core().V1().Pods()
	c := &Controller{
		cfg:       cfg,
		dLister:   dInf.Lister(),
		rsLister:  rsInf.Lister(),
		podLister: podInf.Lister(),
		synced:    []cache.InformerSynced{dInf.Informer().HasSynced, rsInf.Informer().HasSynced, podInf.Informer().HasSynced},
		queue:     controller.NewQueue(Name, cfg.Clock),
	}
	handlers := []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{dInf.Informer(), cache.ResourceEventHandlerFuncs{AddFunc: c.enqueue, UpdateFunc: func(_, cur any) { c.enqueue(cur) }, DeleteFunc: c.enqueue}},
		{rsInf.Informer(), cache.ResourceEventHandlerFuncs{AddFunc: c.rsChanged, UpdateFunc: c.rsUpdated, DeleteFunc: c.rsChanged}},
		{podInf.Informer(), cache.ResourceEventHandlerFuncs{DeleteFunc: c.podDeleted}},
	}
	for _, x := range handlers {
		if _, err := x.inf.AddEventHandler(x.h); err != nil {
			return nil, fmt.Errorf("deployment controller: %w", err)
		}
	}
	return c, nil
}

// Run syncs Deployments until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	return controller.Loop(ctx, &c.cfg.Config, c.queue, c.synced, c.sync)
}

func (c *Controller) enqueue(obj any) {
	if key, ok := controller.KeyFunc(obj); ok {
		c.queue.Add(key)
	}
}

func unwrap[T any](obj any) (T, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	t, ok := obj.(T)
	return t, ok
}

// ownerOf resolves a ReplicaSet's controllerRef to a cached Deployment.
func (c *Controller) ownerOf(rs *appsv1.ReplicaSet) *appsv1.Deployment {
	ref := metav1.GetControllerOfNoCopy(rs)
	if ref == nil || ref.Kind != deploymentKind.Kind {
		return nil
	}
	d, err := c.dLister.Deployments(rs.Namespace).Get(ref.Name)
	if err != nil || d.UID != ref.UID {
		return nil
	}
	return d
}

func (c *Controller) enqueueMatching(rs *appsv1.ReplicaSet) {
	ds, err := c.dLister.Deployments(rs.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, d := range ds {
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err == nil && !sel.Empty() && sel.Matches(labels.Set(rs.Labels)) {
			c.enqueue(d)
		}
	}
}

func (c *Controller) rsChanged(obj any) {
	rs, ok := unwrap[*appsv1.ReplicaSet](obj)
	if !ok {
		return
	}
	if d := c.ownerOf(rs); d != nil {
		c.enqueue(d)
		return
	}
	if metav1.GetControllerOfNoCopy(rs) == nil {
		c.enqueueMatching(rs)
	}
}

func (c *Controller) rsUpdated(oldObj, curObj any) {
	old, cur := oldObj.(*appsv1.ReplicaSet), curObj.(*appsv1.ReplicaSet)
	if old.ResourceVersion == cur.ResourceVersion {
		return
	}
	if d := c.ownerOf(old); d != nil {
		c.enqueue(d)
	}
	c.rsChanged(cur)
}

// podDeleted wakes a Recreate Deployment waiting for its old pods to go.
func (c *Controller) podDeleted(obj any) {
	p, ok := unwrap[*corev1.Pod](obj)
	if !ok {
		return
	}
	ref := metav1.GetControllerOfNoCopy(p)
	if ref == nil || ref.Kind != rsKind.Kind {
		return
	}
	rs, err := c.rsLister.ReplicaSets(p.Namespace).Get(ref.Name)
	if err != nil || rs.UID != ref.UID {
		return
	}
	if d := c.ownerOf(rs); d != nil && d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		c.enqueue(d)
	}
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.dLister.Deployments(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	d := cached.DeepCopy()
	now := c.cfg.Clock.Now()
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || sel.Empty() {
		c.cfg.Recorder.Eventf(d, corev1.EventTypeWarning, "SelectingAll", "This deployment is selecting all pods. A non-empty selector is required.")
		return nil
	}
	rsList, err := c.claim(ctx, d, sel)
	if err != nil {
		return err
	}
	newRS, oldRSs := SplitReplicaSets(d, rsList)
	if d.DeletionTimestamp != nil {
		_, err := c.apply(ctx, d, StatusOnly(d, newRS, oldRSs, now))
		return err
	}
	st := *d.Status.DeepCopy()
	if PausedCondition(d, &st, now) {
		want := d.DeepCopy()
		want.Status = st
		if d, err = c.writeDeployment(ctx, d, want); err != nil {
			return err
		}
	}
	if newRS != nil {
		if d, newRS, err = c.ensureNewRS(ctx, d, newRS, oldRSs, false); err != nil {
			return err
		}
	}
	if d.Spec.Paused || IsScalingEvent(d, newRS, oldRSs) {
		_, err := c.apply(ctx, d, Sync(d, newRS, oldRSs, now))
		return err
	}
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		plan, needNew := Recreate(d, newRS, oldRSs, c.oldPodsRunning(d, newRS, oldRSs, sel), now)
		if needNew {
			if d, newRS, err = c.ensureNewRS(ctx, d, nil, oldRSs, true); err != nil {
				return err
			}
			plan, _ = Recreate(d, newRS, oldRSs, false, now)
		}
		_, err := c.apply(ctx, d, plan)
		return err
	}
	if newRS == nil {
		if d, newRS, err = c.ensureNewRS(ctx, d, nil, oldRSs, true); err != nil {
			return err
		}
	}
	_, err = c.apply(ctx, d, Rolling(d, newRS, oldRSs, now))
	return err
}

// claim adopts orphan ReplicaSets matching d and releases its own that
// stopped matching; it returns the ReplicaSets d controls.
func (c *Controller) claim(ctx context.Context, d *appsv1.Deployment, sel labels.Selector) ([]*appsv1.ReplicaSet, error) {
	all, err := c.rsLister.ReplicaSets(d.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	cl := controllerref.Plan(d, sel, all)
	owned := cl.Owned
	var errs []error
	if len(cl.Adopt) > 0 {
		fresh, err := c.cfg.Client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
		switch {
		case err != nil:
			errs = append(errs, err)
		case fresh.UID != d.UID || fresh.DeletionTimestamp != nil:
			errs = append(errs, fmt.Errorf("deployment %s/%s changed; not adopting", d.Namespace, d.Name))
		default:
			for _, rs := range cl.Adopt {
				out, err := c.cfg.Client.AppsV1().ReplicaSets(rs.Namespace).Patch(ctx, rs.Name, types.StrategicMergePatchType, controllerref.AdoptPatch(d, deploymentKind, rs.UID), metav1.PatchOptions{})
				if err != nil {
					if !apierrors.IsNotFound(err) {
						errs = append(errs, fmt.Errorf("adopt replicaset %s: %w", rs.Name, err))
					}
					continue
				}
				owned = append(owned, out)
			}
		}
	}
	for _, rs := range cl.Release {
		_, err := c.cfg.Client.AppsV1().ReplicaSets(rs.Namespace).Patch(ctx, rs.Name, types.StrategicMergePatchType, controllerref.ReleasePatch(d.UID, rs.UID), metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("release replicaset %s: %w", rs.Name, err))
		}
	}
	return owned, errors.Join(errs...)
}

// oldPodsRunning: any old ReplicaSet still reports pods, or a pod of one is
// not finished (Unknown counts as running).
func (c *Controller) oldPodsRunning(d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet, sel labels.Selector) bool {
	old := map[types.UID]bool{}
	for _, rs := range oldRSs {
		if rs.Status.Replicas > 0 {
			return true
		}
		old[rs.UID] = true
	}
	pods, err := c.podLister.Pods(d.Namespace).List(sel)
	if err != nil {
		return true
	}
	for _, p := range pods {
		ref := metav1.GetControllerOfNoCopy(p)
		if ref == nil || !old[ref.UID] || (newRS != nil && ref.UID == newRS.UID) {
			continue
		}
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			return true
		}
	}
	return false
}

// ensureNewRS executes PlanNewReplicaSet: it creates or updates the new
// ReplicaSet and then records the revision and condition on d. A name
// collision with a foreign ReplicaSet bumps status.collisionCount (a new
// hash next time) and returns an error so the key is retried.
func (c *Controller) ensureNewRS(ctx context.Context, d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet, create bool) (*appsv1.Deployment, *appsv1.ReplicaSet, error) {
	plan := PlanNewReplicaSet(d, newRS, oldRSs, create, c.cfg.Clock.Now())
	rsClient := c.cfg.Client.AppsV1().ReplicaSets(d.Namespace)
	result := plan.NewRS
	switch {
	case plan.Create != nil:
		created, err := rsClient.Create(ctx, plan.Create, metav1.CreateOptions{})
		switch {
		case apierrors.IsAlreadyExists(err):
			existing, gerr := rsClient.Get(ctx, plan.Create.Name, metav1.GetOptions{})
			if gerr != nil {
				return d, nil, gerr
			}
			if ref := metav1.GetControllerOfNoCopy(existing); ref != nil && ref.UID == d.UID && EqualIgnoreHash(&d.Spec.Template, &existing.Spec.Template) {
				result = existing
				break
			}
			want := d.DeepCopy()
			if want.Status.CollisionCount == nil {
				want.Status.CollisionCount = new(int32)
			}
			*want.Status.CollisionCount++
			if _, werr := c.writeDeployment(ctx, d, want); werr != nil {
				return d, nil, werr
			}
			return d, nil, fmt.Errorf("replicaset %s exists with another template; collision count now %d: %w", plan.Create.Name, *want.Status.CollisionCount, err)
		case err != nil:
			if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				return d, nil, err
			}
			msg := fmt.Sprintf("Failed to create new replica set %q: %v", plan.Create.Name, err)
			if hasProgressDeadline(d) {
				want := d.DeepCopy()
				setCondition(&want.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonFailedRSCreate, msg, c.cfg.Clock.Now()))
				_, _ = c.writeDeployment(ctx, d, want)
			}
			c.cfg.Recorder.Event(d, corev1.EventTypeWarning, ReasonFailedRSCreate, msg)
			return d, nil, err
		default:
			result = created
			if n := rsReplicas(created); n > 0 {
				c.cfg.Recorder.Eventf(d, corev1.EventTypeNormal, "ScalingReplicaSet", "Scaled up replica set %s from 0 to %d", created.Name, n)
			}
		}
	case plan.Update != nil:
		updated, err := rsClient.Update(ctx, plan.Update, metav1.UpdateOptions{})
		if err != nil {
			return d, nil, fmt.Errorf("update replicaset %s: %w", plan.Update.Name, err)
		}
		result = updated
	}
	d, err := c.writeDeployment(ctx, d, plan.Deployment)
	return d, result, err
}

// writeDeployment writes want's annotations (through the main resource) and
// status (through /status) where they differ from cur's.
func (c *Controller) writeDeployment(ctx context.Context, cur, want *appsv1.Deployment) (*appsv1.Deployment, error) {
	client := c.cfg.Client.AppsV1().Deployments(cur.Namespace)
	out := cur
	if !equality.Semantic.DeepEqual(cur.Annotations, want.Annotations) {
		up := cur.DeepCopy()
		up.Annotations = want.Annotations
		written, err := client.Update(ctx, up, metav1.UpdateOptions{})
		if err != nil {
			return cur, fmt.Errorf("update deployment %s/%s annotations: %w", cur.Namespace, cur.Name, err)
		}
		out = written
	}
	if !equality.Semantic.DeepEqual(out.Status, want.Status) {
		up := out.DeepCopy()
		up.Status = want.Status
		written, err := client.UpdateStatus(ctx, up, metav1.UpdateOptions{})
		if err != nil {
			return out, fmt.Errorf("update deployment %s/%s status: %w", cur.Namespace, cur.Name, err)
		}
		out = written
	}
	return out, nil
}

// apply executes plan: its ReplicaSet writes in order (stopping at the
// first failure), then the status.
func (c *Controller) apply(ctx context.Context, d *appsv1.Deployment, plan Plan) (*appsv1.Deployment, error) {
	rsClient := c.cfg.Client.AppsV1().ReplicaSets(d.Namespace)
	for _, a := range plan.Actions {
		switch a.Kind {
		case ActionScale:
			if _, err := rsClient.Update(ctx, a.RS, metav1.UpdateOptions{}); err != nil {
				return d, fmt.Errorf("scale replicaset %s to %d: %w", a.RS.Name, a.To, err)
			}
			if a.From != a.To {
				dir := "up"
				if a.To < a.From {
					dir = "down"
				}
				c.cfg.Recorder.Eventf(d, corev1.EventTypeNormal, "ScalingReplicaSet", "Scaled %s replica set %s from %d to %d", dir, a.RS.Name, a.From, a.To)
			}
		case ActionDelete:
			err := rsClient.Delete(ctx, a.RS.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &a.RS.UID}})
			if err != nil && !apierrors.IsNotFound(err) {
				return d, fmt.Errorf("delete old replicaset %s: %w", a.RS.Name, err)
			}
		}
	}
	if plan.Status != nil {
		want := d.DeepCopy()
		want.Status = *plan.Status
		var err error
		if d, err = c.writeDeployment(ctx, d, want); err != nil {
			return d, err
		}
	}
	if plan.RequeueAfter > 0 {
		key, _ := controller.KeyFunc(d)
		c.queue.AddAfter(key, plan.RequeueAfter)
	}
	return d, nil
}
