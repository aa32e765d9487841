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
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

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
	queue        *controller.Queue
	expectations *Expectations
	pods         controllerref.Adopter[*appsv1.ReplicaSet, *corev1.Pod]
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
		queue:        controller.NewQueue(name, &cfg.Config),
		expectations: NewExpectations(cfg.Clock),
		pods:         controllerref.PodAdopter[*appsv1.ReplicaSet](cfg.Client, o.kind(), o.fetch),
	}
	deps := &controller.Dependents[*appsv1.ReplicaSet, *corev1.Pod]{
		Owners: controller.Owners[*appsv1.ReplicaSet]{Kind: o.kind(), Get: o.get, List: o.list,
			Selector: func(rs *appsv1.ReplicaSet) *metav1.LabelSelector { return rs.Spec.Selector }},
		Queue: c.queue, Observer: c.expectations,
		Ready: isReady, MinReadySeconds: func(rs *appsv1.ReplicaSet) int32 { return rs.Spec.MinReadySeconds },
	}
	if err := c.queue.Watch(o.informer(), cache.ResourceEventHandlerFuncs{
		AddFunc:    c.queue.Enqueue,
		UpdateFunc: func(_, cur any) { c.queue.Enqueue(cur) },
		DeleteFunc: c.deleteRS,
	}); err != nil {
		return nil, err
	}
	if err := c.queue.Watch(podInf.Informer(), deps.Handler()); err != nil {
		return nil, err
	}
	return c, nil
}

// Run syncs ReplicaSets until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	return c.queue.Run(ctx, c.sync)
}

func (c *Controller) deleteRS(obj any) {
	if key, ok := controller.KeyFunc(obj); ok {
		c.expectations.Delete(key)
		c.queue.Add(key)
	}
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
	owned, claimErr := c.pods.Execute(ctx, rs, Claim(rs, sel, pods))

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
