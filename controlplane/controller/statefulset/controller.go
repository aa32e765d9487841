// Package statefulset is the StatefulSet controller: pods with stable
// names (<set>-<ordinal>), hostnames and the governing service as
// subdomain, each with its own PersistentVolumeClaims from the claim
// templates (owned as the PVC retention policy says); OrderedReady or
// Parallel pod management; RollingUpdate with a partition, and OnDelete;
// the template's history kept in ControllerRevisions (currentRevision,
// updateRevision, collisionCount) for `kubectl rollout status/history/undo`;
// and the status counts, with minReadySeconds.
//
// Each sync reads the caches, decides with the pure DecideRevisions and
// Decide, and then acts: the update revision first, then the plan's steps
// in order (stopping at the first error), then the status, then the
// history beyond revisionHistoryLimit is truncated.
package statefulset

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"berth/controlplane/controller"
	"berth/controlplane/controller/controllerref"
)

// Name is the controller's name (upstream's "statefulset").
const Name = "statefulset"

// DefaultWorkers is the number of parallel syncs by default (upstream's
// --concurrent-statefulset-syncs).
const DefaultWorkers = 5

// Kind is the StatefulSet kind, in its pods', claims' and revisions'
// owner references.
var Kind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")

// Config configures the StatefulSet controller.
type Config struct {
	controller.Config
}

// Controller is the StatefulSet controller.
type Controller struct {
	cfg         Config
	setLister   appslisters.StatefulSetLister
	podLister   corelisters.PodLister
	claimLister corelisters.PersistentVolumeClaimLister
	revLister   appslisters.ControllerRevisionLister
	queue       *controller.Queue
	fresh       func(ctx context.Context, namespace, name string) (*appsv1.StatefulSet, error)
}

// New validates cfg and registers the controller's informers
// (StatefulSets, Pods, PersistentVolumeClaims, ControllerRevisions).
func New(cfg Config) (*Controller, error) {
	if err := cfg.Validate(Name, DefaultWorkers); err != nil {
		return nil, err
	}
	setInf := cfg.Informers.Apps().V1().StatefulSets()
	podInf := cfg.Informers.Core().V1().Pods()
	claimInf := cfg.Informers.Core().V1().PersistentVolumeClaims()
	revInf := cfg.Informers.Apps().V1().ControllerRevisions()
	c := &Controller{
		cfg: cfg, setLister: setInf.Lister(), podLister: podInf.Lister(), claimLister: claimInf.Lister(), revLister: revInf.Lister(),
		queue: controller.NewQueue(Name, &cfg.Config),
		fresh: controllerref.Fetch[*appsv1.StatefulSet](cfg.Client.AppsV1().StatefulSets),
	}
	pods := &controller.Dependents[*appsv1.StatefulSet, *corev1.Pod]{
		Owners: controller.OwnersFromLister(Kind, setInf.Lister().StatefulSets,
			func(set *appsv1.StatefulSet) *metav1.LabelSelector { return set.Spec.Selector }),
		Queue: c.queue, Ready: controller.PodReady, MinReadySeconds: func(set *appsv1.StatefulSet) int32 { return set.Spec.MinReadySeconds },
	}
	for _, w := range []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{setInf.Informer(), controller.On(controller.AllEvents, c.queue.Enqueue)},
		{podInf.Informer(), pods.Handler()},
		{claimInf.Informer(), nil},
		{revInf.Informer(), nil},
	} {
		if err := c.queue.Watch(w.inf, w.h); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Run syncs StatefulSets until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	return c.queue.Run(ctx, c.sync)
}

func (c *Controller) sync(ctx context.Context, key string) error {
	set, found, err := controller.Lookup[*appsv1.StatefulSet](key, c.setLister.StatefulSets)
	if !found {
		return err
	}
	ns := set.Namespace
	set = set.DeepCopy()
	sel, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil {
		return nil
	}
	revs, err := c.revisions(ctx, set, sel)
	if err != nil {
		return err
	}
	pods, err := c.claimPods(ctx, set, sel)
	if err != nil {
		return err
	}
	SortRevisions(revs)
	rd, err := DecideRevisions(set, revs)
	if err != nil {
		return err
	}
	cc := int32(0)
	if set.Status.CollisionCount != nil {
		cc = *set.Status.CollisionCount
	}
	update, err := c.recordRevision(ctx, set, rd, &cc)
	if err != nil {
		return err
	}
	current := rd.Current
	if rd.Current == rd.Update {
		current = update
	}
	currentSet, err := ApplyRevision(set, current)
	if err != nil {
		return err
	}
	updateSet, err := ApplyRevision(set, update)
	if err != nil {
		return err
	}
	claims, err := c.claimLister.PersistentVolumeClaims(ns).List(labels.Everything())
	if err != nil {
		return err
	}
	byName := make(map[string]*corev1.PersistentVolumeClaim, len(claims))
	for _, cl := range claims {
		byName[cl.Name] = cl
	}
	plan := Decide(State{Set: set, Pods: pods, Claims: byName, CurrentSet: currentSet, UpdateSet: updateSet,
		Current: current.Name, Update: update.Name, CollisionCount: cc, Now: c.cfg.Clock.Now()})
	stepErr := c.execute(ctx, set, plan.Steps)
	statusErr := c.writeStatus(ctx, set, plan.Status)
	var truncErr error
	if stepErr == nil && statusErr == nil {
		truncErr = c.truncate(ctx, ToTruncate(set, revs, pods, current.Name, update.Name))
	}
	if err := errors.Join(stepErr, statusErr, truncErr); err != nil {
		return err
	}
	if set.Spec.MinReadySeconds > 0 && plan.Status.AvailableReplicas != int32(replicasOf(set)) {
		c.queue.AddAfter(key, time.Duration(set.Spec.MinReadySeconds)*time.Second)
	}
	return nil
}

// claimPods adopts and releases pods (only those whose name makes them
// members of set); it returns set's pods afterwards.
func (c *Controller) claimPods(ctx context.Context, set *appsv1.StatefulSet, sel labels.Selector) ([]*corev1.Pod, error) {
	all, err := c.podLister.Pods(set.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var members []*corev1.Pod
	for _, p := range all {
		if isMemberOf(set, p) {
			members = append(members, p)
		}
	}
	return controllerref.PodAdopter(c.cfg.Client, Kind, c.fresh).Execute(ctx, set, controllerref.Plan(set, sel, members))
}

// revisions returns set's ControllerRevisions (matching its selector),
// adopting orphans.
func (c *Controller) revisions(ctx context.Context, set *appsv1.StatefulSet, sel labels.Selector) ([]*appsv1.ControllerRevision, error) {
	all, err := c.revLister.ControllerRevisions(set.Namespace).List(sel)
	if err != nil {
		return nil, err
	}
	cl := controllerref.Plan(set, sel, all)
	cl.Release = nil // revisions that stopped matching are left as they are
	return controllerref.RevisionAdopter(c.cfg.Client, Kind, c.fresh).Execute(ctx, set, cl)
}

// recordRevision makes the update revision exist: renumbered, or created
// (a name taken by another template is a hash collision: the collision
// count is raised and the name hashed again, as upstream).
func (c *Controller) recordRevision(ctx context.Context, set *appsv1.StatefulSet, rd Revisions, cc *int32) (*appsv1.ControllerRevision, error) {
	client := c.cfg.Client.AppsV1().ControllerRevisions(set.Namespace)
	switch {
	case rd.Renumber:
		r, err := client.Update(ctx, rd.Update, metav1.UpdateOptions{})
		if err != nil {
			return nil, fmt.Errorf("renumber revision %s: %w", rd.Update.Name, err)
		}
		return r, nil
	case !rd.Create:
		return rd.Update, nil
	}
	rev := rd.Update.DeepCopy()
	for {
		rev.Name = RevisionName(set.Name, HashRevision(rev.Data.Raw, cc))
		rev.Labels[appsv1.ControllerRevisionHashLabelKey] = HashRevision(rev.Data.Raw, cc)
		created, err := client.Create(ctx, rev, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			if err != nil {
				return nil, fmt.Errorf("create revision %s: %w", rev.Name, err)
			}
			return created, nil
		}
		existing, err := client.Get(ctx, rev.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if string(existing.Data.Raw) == string(rev.Data.Raw) {
			return existing, nil
		}
		*cc++
	}
}

// execute carries out steps in order, stopping at the first error.
func (c *Controller) execute(ctx context.Context, set *appsv1.StatefulSet, steps []Step) error {
	for _, s := range steps {
		if err := c.step(ctx, set, s); err != nil {
			return err
		}
	}
	return nil
}

func (c *Controller) step(ctx context.Context, set *appsv1.StatefulSet, s Step) error {
	pods := c.cfg.Client.CoreV1().Pods(set.Namespace)
	if s.Err != nil {
		c.podEvent(set, s.Pod, s.Op, s.Err)
		return s.Err
	}
	if err := c.claims(ctx, set, s); err != nil {
		c.podEvent(set, s.Pod, s.Op, err)
		return err
	}
	var err error
	switch s.Op {
	case OpClaims:
		return nil
	case OpCreate:
		_, err = pods.Create(ctx, s.Pod, metav1.CreateOptions{})
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil
		}
	case OpUpdate:
		_, err = pods.Update(ctx, s.Pod, metav1.UpdateOptions{})
	case OpDelete:
		err = pods.Delete(ctx, s.Pod.Name, metav1.DeleteOptions{})
		if s.ForUpdate && apierrors.IsNotFound(err) {
			err = nil
		}
	}
	c.podEvent(set, s.Pod, s.Op, err)
	if err != nil {
		return fmt.Errorf("%s pod %s: %w", s.Op, s.Pod.Name, err)
	}
	return nil
}

// claims creates s's missing claims and updates the owners of the others.
func (c *Controller) claims(ctx context.Context, set *appsv1.StatefulSet, s Step) error {
	client := c.cfg.Client.CoreV1().PersistentVolumeClaims(set.Namespace)
	var errs []error
	for _, cl := range s.Claims {
		_, err := client.Create(ctx, cl, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			errs = append(errs, fmt.Errorf("failed to create PVC %s: %w", cl.Name, err))
		}
		if err == nil || !apierrors.IsAlreadyExists(err) {
			c.claimEvent(set, s.Pod, cl, err)
		}
	}
	for _, cl := range s.ClaimUpdates {
		if _, err := client.Update(ctx, cl, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("could not update claim %s for delete policy ownerRefs: %w", cl.Name, err))
		}
	}
	return errors.Join(errs...)
}

// podEvent records upstream's Successful/Failed<Verb> event for a pod step.
func (c *Controller) podEvent(set *appsv1.StatefulSet, pod *corev1.Pod, op Op, err error) {
	verb := map[Op]string{OpCreate: "Create", OpClaims: "Update", OpUpdate: "Update", OpDelete: "Delete"}[op]
	if err == nil {
		if op != OpClaims {
			c.cfg.Recorder.Eventf(set, corev1.EventTypeNormal, "Successful"+verb, "%s Pod %s in StatefulSet %s successful", lower(verb), pod.Name, set.Name)
		}
		return
	}
	c.cfg.Recorder.Eventf(set, corev1.EventTypeWarning, "Failed"+verb, "%s Pod %s in StatefulSet %s failed error: %s", lower(verb), pod.Name, set.Name, err)
}

func (c *Controller) claimEvent(set *appsv1.StatefulSet, pod *corev1.Pod, cl *corev1.PersistentVolumeClaim, err error) {
	if err == nil {
		c.cfg.Recorder.Eventf(set, corev1.EventTypeNormal, "SuccessfulCreate", "create Claim %s Pod %s in StatefulSet %s success", cl.Name, pod.Name, set.Name)
		return
	}
	c.cfg.Recorder.Eventf(set, corev1.EventTypeWarning, "FailedCreate", "create Claim %s for Pod %s in StatefulSet %s failed error: %s", cl.Name, pod.Name, set.Name, err)
}

func lower(verb string) string {
	return map[string]string{"Create": "create", "Update": "update", "Delete": "delete"}[verb]
}

// writeStatus writes status when it differs from set's in what upstream
// compares, retrying on conflicts with a fresh copy.
func (c *Controller) writeStatus(ctx context.Context, set *appsv1.StatefulSet, st appsv1.StatefulSetStatus) error {
	old := set.Status
	if st.ObservedGeneration <= old.ObservedGeneration && st.Replicas == old.Replicas && st.CurrentReplicas == old.CurrentReplicas &&
		st.ReadyReplicas == old.ReadyReplicas && st.UpdatedReplicas == old.UpdatedReplicas && st.CurrentRevision == old.CurrentRevision &&
		st.AvailableReplicas == old.AvailableReplicas && st.UpdateRevision == old.UpdateRevision {
		return nil
	}
	client := c.cfg.Client.AppsV1().StatefulSets(set.Namespace)
	cp := set.DeepCopy()
	for attempt := 0; ; attempt++ {
		st.Conditions = cp.Status.Conditions
		cp.Status = st
		_, err := client.UpdateStatus(ctx, cp, metav1.UpdateOptions{})
		if err == nil {
			return nil
		}
		if !apierrors.IsConflict(err) || attempt == 4 {
			return fmt.Errorf("update status of statefulset %s/%s: %w", set.Namespace, set.Name, err)
		}
		if cp, err = client.Get(ctx, set.Name, metav1.GetOptions{}); err != nil {
			return err
		}
	}
}

// truncate deletes old revisions.
func (c *Controller) truncate(ctx context.Context, revs []*appsv1.ControllerRevision) error {
	for _, r := range revs {
		if err := c.cfg.Client.AppsV1().ControllerRevisions(r.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete revision %s: %w", r.Name, err)
		}
	}
	return nil
}
