package replicaset

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"berth/controlplane/controller"
	"berth/controlplane/controller/controllerref"
)

// Name is the controller's name (in the manager, logs and the queue).
const Name = "replicaset"

// DefaultWorkers is the number of parallel syncs by default (upstream's
// --concurrent-replicaset-syncs).
const DefaultWorkers = 5

// Config configures the ReplicaSet controller.
type Config struct {
	controller.Config
}

// Controller is the ReplicaSet controller; run over replication controllers
// (NewReplicationManager) it is the ReplicationController controller too.
type Controller struct {
	cfg          Config
	owners       owners
	podLister    corelisters.PodLister
	synced       []cache.InformerSynced
	queue        workqueue.TypedRateLimitingInterface[string]
	expectations *Expectations
}

// owners is the kind of object a Controller keeps replicas for, seen as
// ReplicaSets: apps/v1 ReplicaSets themselves, or core/v1
// ReplicationControllers through the adapter in replication.go.
type owners interface {
	// kind is the owners' kind (in pods' controller references).
	kind() schema.GroupVersionKind
	// informer delivers the owners' changes.
	informer() cache.SharedIndexInformer
	// get and list read the informer's cache.
	get(ns, name string) (*appsv1.ReplicaSet, error)
	list(ns string) ([]*appsv1.ReplicaSet, error)
	// fetch reads an owner from the apiserver.
	fetch(ctx context.Context, ns, name string) (*appsv1.ReplicaSet, error)
	// updateStatus writes an owner's status.
	updateStatus(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error)
}

// New validates cfg and registers the controller's informers (ReplicaSets,
// Pods) with cfg.Informers.
func New(cfg Config) (*Controller, error) {
	if err := cfg.Validate(Name, DefaultWorkers); err != nil {
		return nil, err
	}
	return newController(cfg, Name, replicaSets{cfg.Informers.Apps().V1().ReplicaSets(), cfg.Client})
}

func newController(cfg Config, name string, o owners) (*Controller, error) {
	podInf := cfg.Informers.Core().V1().Pods()
	c := &Controller{
		cfg:          cfg,
		owners:       o,
		podLister:    podInf.Lister(),
		synced:       []cache.InformerSynced{o.informer().HasSynced, podInf.Informer().HasSynced},
		queue:        controller.NewQueue(name, cfg.Clock),
		expectations: NewExpectations(cfg.Clock),
	}
	if _, err := o.informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, cur any) { c.enqueue(cur) },
		DeleteFunc: c.deleteRS,
	}); err != nil {
		return nil, fmt.Errorf("%s controller: %w", name, err)
	}
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addPod,
		UpdateFunc: c.updatePod,
		DeleteFunc: c.deletePod,
	}); err != nil {
		return nil, fmt.Errorf("%s controller: %w", name, err)
	}
	return c, nil
}

// Run syncs ReplicaSets until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	return controller.Loop(ctx, &c.cfg.Config, c.queue, c.synced, c.sync)
}

func (c *Controller) enqueue(obj any) {
	if key, ok := controller.KeyFunc(obj); ok {
		c.queue.Add(key)
	}
}

func (c *Controller) deleteRS(obj any) {
	if key, ok := controller.KeyFunc(obj); ok {
		c.expectations.Delete(key)
		c.queue.Add(key)
	}
}

// owner resolves a pod's controllerRef to an owner in the cache.
func (c *Controller) owner(p *corev1.Pod, ref *metav1.OwnerReference) *appsv1.ReplicaSet {
	gvk := c.owners.kind()
	if ref == nil || ref.Kind != gvk.Kind || ref.APIVersion != gvk.GroupVersion().String() {
		return nil
	}
	rs, err := c.owners.get(p.Namespace, ref.Name)
	if err != nil || rs.UID != ref.UID {
		return nil
	}
	return rs
}

// enqueueMatching enqueues every ReplicaSet whose selector matches orphan p.
func (c *Controller) enqueueMatching(p *corev1.Pod) {
	all, err := c.owners.list(p.Namespace)
	if err != nil {
		return
	}
	for _, rs := range all {
		sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		c.enqueue(rs)
	}
}

func (c *Controller) addPod(obj any) {
	p := obj.(*corev1.Pod)
	if p.DeletionTimestamp != nil {
		c.deletePod(p)
		return
	}
	if ref := metav1.GetControllerOfNoCopy(p); ref != nil {
		if rs := c.owner(p, ref); rs != nil {
			key, _ := controller.KeyFunc(rs)
			c.expectations.CreationObserved(key)
			c.queue.Add(key)
		}
		return
	}
	c.enqueueMatching(p)
}

func (c *Controller) updatePod(oldObj, curObj any) {
	old, cur := oldObj.(*corev1.Pod), curObj.(*corev1.Pod)
	if old.ResourceVersion == cur.ResourceVersion {
		return
	}
	if cur.DeletionTimestamp != nil {
		c.deletePod(cur)
		if !equality.Semantic.DeepEqual(old.Labels, cur.Labels) {
			c.deletePod(old)
		}
		return
	}
	oldRef, curRef := metav1.GetControllerOfNoCopy(old), metav1.GetControllerOfNoCopy(cur)
	if oldRef != nil && (curRef == nil || *oldRef != *curRef) {
		if rs := c.owner(old, oldRef); rs != nil {
			c.enqueue(rs)
		}
	}
	if curRef != nil {
		rs := c.owner(cur, curRef)
		if rs == nil {
			return
		}
		c.enqueue(rs)
		// A pod that just became ready becomes available minReadySeconds
		// later: look again then.
		if !isReady(old) && isReady(cur) && rs.Spec.MinReadySeconds > 0 {
			key, _ := controller.KeyFunc(rs)
			c.queue.AddAfter(key, time.Duration(rs.Spec.MinReadySeconds)*time.Second+time.Second)
		}
		return
	}
	if !equality.Semantic.DeepEqual(old.Labels, cur.Labels) || oldRef != nil {
		c.enqueueMatching(cur)
	}
}

func (c *Controller) deletePod(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		tomb, ok := obj.(cache.DeletedFinalStateUnknown)
		if !ok {
			return
		}
		if p, ok = tomb.Obj.(*corev1.Pod); !ok {
			return
		}
	}
	rs := c.owner(p, metav1.GetControllerOfNoCopy(p))
	if rs == nil {
		return
	}
	key, _ := controller.KeyFunc(rs)
	podKey, _ := controller.KeyFunc(p)
	c.expectations.DeletionObserved(key, podKey)
	c.queue.Add(key)
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	rs, err := c.owners.get(ns, name)
	if apierrors.IsNotFound(err) {
		c.expectations.Delete(key)
		return nil
	}
	if err != nil {
		return err
	}
	satisfied := c.expectations.Satisfied(key)
	sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil {
		c.cfg.Recorder.Eventf(c.ref(rs), corev1.EventTypeWarning, "InvalidSelector", "invalid selector: %v", err)
		return nil // not retriable until the object changes
	}
	pods, err := c.podLister.Pods(ns).List(labels.Everything())
	if err != nil {
		return err
	}
	owned, claimErr := c.claim(ctx, rs, Claim(rs, sel, pods))

	var manageErr error
	if claimErr == nil {
		var related []*corev1.Pod
		if metav1.GetControllerOfNoCopy(rs) != nil {
			siblings, err := c.owners.list(ns)
			if err != nil {
				return err
			}
			related = RelatedPods(rs, siblings, pods)
		}
		plan := Manage(rs, owned, related, satisfied, c.cfg.Clock.Now())
		manageErr = c.execute(ctx, key, rs, plan)
	}
	status := CalculateStatus(rs, owned, manageErr, c.cfg.Clock.Now())
	updated, err := c.writeStatus(ctx, rs, status)
	if err != nil {
		return errors.Join(claimErr, manageErr, err)
	}
	if manageErr == nil && claimErr == nil && updated.Spec.MinReadySeconds > 0 &&
		updated.Status.ReadyReplicas == replicas(updated) && updated.Status.AvailableReplicas != replicas(updated) {
		c.queue.AddAfter(key, time.Duration(updated.Spec.MinReadySeconds)*time.Second)
	}
	return errors.Join(claimErr, manageErr)
}

// claim adopts and releases pods; it returns the pods rs owns afterwards.
// Before the first adoption it re-reads rs from the apiserver so that a
// ReplicaSet deleted and recreated under the same name does not adopt.
func (c *Controller) claim(ctx context.Context, rs *appsv1.ReplicaSet, cl controllerref.Claim[*corev1.Pod]) ([]*corev1.Pod, error) {
	owned := cl.Owned
	var errs []error
	if len(cl.Adopt) > 0 {
		fresh, err := c.owners.fetch(ctx, rs.Namespace, rs.Name)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("re-read %s/%s before adopting: %w", rs.Namespace, rs.Name, err))
		case fresh.UID != rs.UID || fresh.DeletionTimestamp != nil:
			errs = append(errs, fmt.Errorf("%s/%s changed (uid %s, deleting %v); not adopting", rs.Namespace, rs.Name, fresh.UID, fresh.DeletionTimestamp != nil))
		default:
			for _, p := range cl.Adopt {
				_, err := c.cfg.Client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, controllerref.AdoptPatch(rs, c.owners.kind(), p.UID), metav1.PatchOptions{})
				if err != nil {
					if !apierrors.IsNotFound(err) {
						errs = append(errs, fmt.Errorf("adopt pod %s: %w", p.Name, err))
					}
					continue
				}
				owned = append(owned, p)
			}
		}
	}
	for _, p := range cl.Release {
		_, err := c.cfg.Client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, controllerref.ReleasePatch(rs.UID, p.UID), metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("release pod %s: %w", p.Name, err))
		}
	}
	return owned, errors.Join(errs...)
}

// execute creates or deletes pods as plan says (through PodControl, so
// that syncs on a stale cache do nothing until the cache catches up).
func (c *Controller) execute(ctx context.Context, key string, rs *appsv1.ReplicaSet, plan ManagePlan) error {
	pc := PodControl{Client: c.cfg.Client, Recorder: c.cfg.Recorder, Expectations: c.expectations}
	if plan.Create > 0 {
		return pc.Create(ctx, key, c.ref(rs), plan.Create, func(int) *corev1.Pod { return PodFromTemplate(rs, c.owners.kind()) })
	}
	return pc.Delete(ctx, key, c.ref(rs), plan.Delete)
}

// ref is the reference events about rs name it by (its own kind, not
// ReplicaSet, for a replication controller).
func (c *Controller) ref(rs *appsv1.ReplicaSet) *corev1.ObjectReference {
	gvk := c.owners.kind()
	return &corev1.ObjectReference{Kind: gvk.Kind, APIVersion: gvk.GroupVersion().String(), Namespace: rs.Namespace,
		Name: rs.Name, UID: rs.UID, ResourceVersion: rs.ResourceVersion}
}

// PodFromTemplate is the pod rs creates: its template's labels, annotations,
// finalizers and spec, named after rs, with rs (of kind gvk) as its controller.
func PodFromTemplate(rs *appsv1.ReplicaSet, gvk schema.GroupVersionKind) *corev1.Pod {
	t := rs.Spec.Template.DeepCopy()
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    rs.Name + "-",
			Namespace:       rs.Namespace,
			Labels:          t.Labels,
			Annotations:     t.Annotations,
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*controllerref.NewControllerRef(rs, gvk)},
		},
		Spec: t.Spec,
	}
}

// writeStatus writes status if it differs from rs's, retrying once on a
// conflict with a fresh copy.
func (c *Controller) writeStatus(ctx context.Context, rs *appsv1.ReplicaSet, status appsv1.ReplicaSetStatus) (*appsv1.ReplicaSet, error) {
	if equality.Semantic.DeepEqual(rs.Status, status) {
		return rs, nil
	}
	cp := rs.DeepCopy()
	cp.Status = status
	out, err := c.owners.updateStatus(ctx, cp)
	if apierrors.IsConflict(err) {
		fresh, gerr := c.owners.fetch(ctx, rs.Namespace, rs.Name)
		if gerr != nil {
			return nil, gerr
		}
		status.ObservedGeneration = fresh.Generation
		fresh.Status = status
		out, err = c.owners.updateStatus(ctx, fresh)
	}
	if err != nil {
		return nil, fmt.Errorf("update status of %s %s/%s: %w", strings.ToLower(c.owners.kind().Kind), rs.Namespace, rs.Name, err)
	}
	return out, nil
}
