package disruption

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/tools/cache"

	"berth/controlplane/controller"
)

// Name is the controller's name (in the manager, logs and the queue).
const Name = "disruption"

// DefaultWorkers is upstream's (one worker).
const DefaultWorkers = 1

// Config configures the controller.
type Config struct {
	controller.Config
}

// Controller keeps PodDisruptionBudgets' status.
type Controller struct {
	cfg         Config
	pdbs        policylisters.PodDisruptionBudgetLister
	pods        corelisters.PodLister
	replicasets appslisters.ReplicaSetLister
	deployments appslisters.DeploymentLister
	rcs         corelisters.ReplicationControllerLister
	queue       *controller.Queue
}

// New validates cfg and registers the informers: budgets, pods, and the
// scale owners (ReplicaSets, Deployments, ReplicationControllers; a
// StatefulSet's scale is read from the apiserver).
func New(cfg Config) (*Controller, error) {
	if err := cfg.Validate(Name, DefaultWorkers); err != nil {
		return nil, err
	}
	f := cfg.Informers
	pdbInf, podInf := f.Policy().V1().PodDisruptionBudgets(), f.Core().V1().Pods()
	rsInf, dInf, rcInf := f.Apps().V1().ReplicaSets(), f.Apps().V1().Deployments(), f.Core().V1().ReplicationControllers()
	c := &Controller{cfg: cfg, pdbs: pdbInf.Lister(), pods: podInf.Lister(), replicasets: rsInf.Lister(),
		deployments: dInf.Lister(), rcs: rcInf.Lister(), queue: controller.NewQueue(Name, &cfg.Config)}
	// A scale change changes the expected count of the namespace's budgets.
	ownerChanged := controller.On(controller.AllEvents, func(o metav1.Object) { c.enqueueBudgetsOf(o, false) })
	for _, w := range []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{pdbInf.Informer(), controller.On(controller.AllEvents, c.queue.Enqueue)},
		{podInf.Informer(), controller.On(controller.AllEvents, func(o metav1.Object) { c.enqueueBudgetsOf(o, true) })},
		{rsInf.Informer(), ownerChanged}, {dInf.Informer(), ownerChanged}, {rcInf.Informer(), ownerChanged},
	} {
		if err := c.queue.Watch(w.inf, w.h); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// enqueueBudgetsOf queues the budgets of obj's namespace: those whose
// selector matches it (matchPod), or all of them.
func (c *Controller) enqueueBudgetsOf(m metav1.Object, matchPod bool) {
	budgets, err := c.pdbs.PodDisruptionBudgets(m.GetNamespace()).List(labels.Everything())
	if err != nil {
		return
	}
	for _, pdb := range budgets {
		if matchPod {
			sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
			if err != nil || !sel.Matches(labels.Set(m.GetLabels())) {
				continue
			}
		}
		c.queue.Enqueue(pdb)
	}
}

// Run keeps budgets' status until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	return c.queue.Run(ctx, c.sync)
}

func (c *Controller) sync(ctx context.Context, key string) error {
	pdb, found, err := controller.Lookup[*policyv1.PodDisruptionBudget](key, c.pdbs.PodDisruptionBudgets)
	if !found {
		return err
	}
	ns := pdb.Namespace
	pods, err := c.podsOf(pdb)
	if err != nil {
		return err
	}
	in := Input{PDB: pdb, Pods: pods, Now: c.cfg.Clock.Now()}
	if NeedsScale(pdb) {
		in.Expected, in.ScaleErr = c.expectedCount(ctx, pods)
	}
	res := Plan(in)
	if res.RecheckAfter > 0 {
		c.queue.AddAfter(key, res.RecheckAfter)
	}
	if !res.Changed(pdb) {
		return nil
	}
	updated := pdb.DeepCopy()
	updated.Status = res.Status
	_, err = c.cfg.Client.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// podsOf lists the pods the budget's selector matches (a nil selector
// matches none; an empty one every pod of the namespace, as policy/v1).
func (c *Controller) podsOf(pdb *policyv1.PodDisruptionBudget) ([]*corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		return nil, nil
	}
	return c.pods.Pods(pdb.Namespace).List(sel)
}

// expectedCount sums the replicas of the pods' controllers (each counted
// once): a ReplicaSet (its Deployment's when it has one),
// ReplicationController or StatefulSet. A pod without such a controller
// is an error, as upstream.
func (c *Controller) expectedCount(ctx context.Context, pods []*corev1.Pod) (int32, error) {
	seen := map[types.UID]bool{}
	var total int32
	for _, p := range pods {
		ref := metav1.GetControllerOf(p)
		if ref == nil {
			return 0, fmt.Errorf("found no controller ref for pod %q", p.Name)
		}
		uid, replicas, err := c.scaleOf(ctx, p.Namespace, ref)
		if err != nil {
			return 0, err
		}
		if !seen[uid] {
			seen[uid] = true
			total += replicas
		}
	}
	return total, nil
}

// scaleOf returns the UID and replicas of the controller ref names.
func (c *Controller) scaleOf(ctx context.Context, ns string, ref *metav1.OwnerReference) (types.UID, int32, error) {
	replicas := func(n *int32) int32 {
		if n == nil {
			return 1
		}
		return *n
	}
	switch {
	case ref.Kind == "ReplicaSet" && ref.APIVersion == appsv1.SchemeGroupVersion.String():
		rs, err := c.replicasets.ReplicaSets(ns).Get(ref.Name)
		if err != nil || rs.UID != ref.UID {
			return "", 0, fmt.Errorf("found no controllers for pod's ReplicaSet %q", ref.Name)
		}
		if dref := metav1.GetControllerOf(rs); dref != nil && dref.Kind == "Deployment" {
			d, err := c.deployments.Deployments(ns).Get(dref.Name)
			if err == nil && d.UID == dref.UID {
				return d.UID, replicas(d.Spec.Replicas), nil
			}
		}
		return rs.UID, replicas(rs.Spec.Replicas), nil
	case ref.Kind == "ReplicationController" && ref.APIVersion == "v1":
		rc, err := c.rcs.ReplicationControllers(ns).Get(ref.Name)
		if err != nil || rc.UID != ref.UID {
			return "", 0, fmt.Errorf("found no controllers for pod's ReplicationController %q", ref.Name)
		}
		return rc.UID, replicas(rc.Spec.Replicas), nil
	case ref.Kind == "StatefulSet" && ref.APIVersion == appsv1.SchemeGroupVersion.String():
		scale, err := c.cfg.Client.AppsV1().StatefulSets(ns).GetScale(ctx, ref.Name, metav1.GetOptions{})
		if err != nil || scale.UID != ref.UID {
			return "", 0, fmt.Errorf("found no controllers for pod's StatefulSet %q", ref.Name)
		}
		return scale.UID, scale.Spec.Replicas, nil
	}
	return "", 0, fmt.Errorf("found no controllers for pod's %s %q", ref.Kind, ref.Name)
}
