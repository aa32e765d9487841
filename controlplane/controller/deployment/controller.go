package deployment

import (
	"context"
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
	owners    controller.Owners[*appsv1.Deployment]
	rsOwners  controller.Owners[*appsv1.ReplicaSet]
	queue     *controller.Queue
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
		owners: controller.OwnersFromLister(deploymentKind, dInf.Lister().Deployments,
			func(d *appsv1.Deployment) *metav1.LabelSelector { return d.Spec.Selector }),
		rsOwners: controller.OwnersFromLister(rsKind, rsInf.Lister().ReplicaSets,
			func(rs *appsv1.ReplicaSet) *metav1.LabelSelector { return rs.Spec.Selector }),
		queue: controller.NewQueue(Name, &cfg.Config),
	}
	replicaSets := &controller.Dependents[*appsv1.Deployment, *appsv1.ReplicaSet]{Owners: c.owners, Queue: c.queue}
	for _, w := range []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{dInf.Informer(), controller.On(controller.AllEvents, c.queue.Enqueue)},
		{rsInf.Informer(), replicaSets.Handler()},
		{podInf.Informer(), controller.On(controller.Deleted, c.podDeleted)},
	} {
		if err := c.queue.Watch(w.inf, w.h); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Run syncs Deployments until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	return c.queue.Run(ctx, c.sync)
}

// podDeleted wakes a Recreate Deployment waiting for its old pods to go.
func (c *Controller) podDeleted(p *corev1.Pod) {
	rs, ok := c.rsOwners.Of(p)
	if !ok {
		return
	}
	if d, ok := c.owners.Of(rs); ok && d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		c.queue.Enqueue(d)
	}
}

func (c *Controller) sync(ctx context.Context, key string) error {
	cached, found, err := controller.Lookup[*appsv1.Deployment](key, c.dLister.Deployments)
	if !found {
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
	adopter := controllerref.Adopter[*appsv1.Deployment, *appsv1.ReplicaSet]{Kind: deploymentKind, Resource: "replicaset",
		Fresh: controllerref.Fetch[*appsv1.Deployment](c.cfg.Client.AppsV1().Deployments),
		Patch: func(ctx context.Context, ns, name string, patch []byte) (*appsv1.ReplicaSet, error) {
			return c.cfg.Client.AppsV1().ReplicaSets(ns).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		}}
	return adopter.Execute(ctx, d, controllerref.Plan(d, sel, all))
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
