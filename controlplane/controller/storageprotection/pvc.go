package storageprotection

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"berth/controlplane/controller"
	"berth/internal/errdefs"
)

// PVCName is the pvc-protection controller's name (upstream's).
const PVCName = "pvc-protection"

// PVCConfig configures the pvc-protection controller.
type PVCConfig struct {
	controller.Config
}

// PVCController removes PVCFinalizer from claims being deleted once no pod
// uses them, and adds it to live claims that lack it.
type PVCController struct {
	cfg    PVCConfig
	claims corelisters.PersistentVolumeClaimLister
	pods   corelisters.PodLister
	queue  *controller.Queue
}

// NewPVC validates cfg and registers PersistentVolumeClaim and Pod
// informers.
func NewPVC(cfg PVCConfig) (*PVCController, error) {
	if err := cfg.Validate(PVCName, 1); err != nil {
		return nil, err
	}
	pvcInf := cfg.Informers.Core().V1().PersistentVolumeClaims()
	podInf := cfg.Informers.Core().V1().Pods()
	c := &PVCController{cfg: cfg, claims: pvcInf.Lister(), pods: podInf.Lister(), queue: controller.NewQueue(PVCName, &cfg.Config)}
	claimChanged := func(claim *corev1.PersistentVolumeClaim) {
		if deletionCandidate(claim, PVCFinalizer) || needsFinalizer(claim, PVCFinalizer) {
			c.queue.Enqueue(claim)
		}
	}
	if err := c.queue.Watch(pvcInf.Informer(), controller.On(controller.Added|controller.Updated, claimChanged)); err != nil {
		return nil, err
	}
	if err := c.queue.Watch(podInf.Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.podChanged(nil, obj, false) },
		UpdateFunc: func(old, cur any) { c.podChanged(old, cur, false) },
		DeleteFunc: func(obj any) { c.podChanged(nil, obj, true) },
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// podChanged queues the claims of a pod that may have stopped holding
// them; an update that replaced the pod by a namesake (another UID) counts
// as the old pod's deletion.
func (c *PVCController) podChanged(old, cur any, deleted bool) {
	pod := asPod(cur)
	if pod == nil {
		return
	}
	if mayReleaseClaims(pod, deleted) {
		for _, key := range claimKeys(pod) {
			c.queue.Add(key)
		}
	}
	if prev := asPod(old); prev != nil && prev.UID != pod.UID {
		for _, key := range claimKeys(prev) {
			c.queue.Add(key)
		}
	}
}

// asPod unwraps a pod, or a tombstone of one.
func asPod(obj any) *corev1.Pod {
	pod, _ := controller.Object[*corev1.Pod](obj)
	return pod
}

// Run keeps claims' protection finalizers until ctx ends.
func (c *PVCController) Run(ctx context.Context) error {
	return c.queue.Run(ctx, c.sync)
}

func (c *PVCController) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return fmt.Errorf("claim key %q: %w: %w", key, errdefs.ErrInvalidArgument, err)
	}
	claim, err := c.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	cached, err := c.pods.Pods(ns).List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list cached pods of %s: %w", ns, err)
	}
	action := PlanClaim(claim, cached)
	if action == RemoveFinalizer {
		// The cache may not have a new pod yet: ask the apiserver before
		// letting the claim go, as upstream does.
		live, err := c.livePods(ctx, ns)
		if err != nil {
			return err
		}
		if ClaimInUse(claim, live) {
			c.cfg.Logger.Debug("claim still in use (live list)", "claim", key)
			return nil
		}
	}
	if action == Nothing {
		return nil
	}
	updated := claim.DeepCopy()
	if action == AddFinalizer {
		updated.Finalizers = withFinalizer(updated.Finalizers, PVCFinalizer)
	} else {
		updated.Finalizers = withoutFinalizer(updated.Finalizers, PVCFinalizer)
	}
	if _, err := c.cfg.Client.CoreV1().PersistentVolumeClaims(ns).Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("%s on claim %s: %w", action, key, err)
	}
	c.cfg.Logger.Info("claim protection finalizer updated", "claim", key, "action", action.String())
	return nil
}

// livePods lists the namespace's pods from the apiserver, not the cache.
func (c *PVCController) livePods(ctx context.Context, ns string) ([]*corev1.Pod, error) {
	list, err := c.cfg.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("live list of pods in %s: %w", ns, err)
	}
	pods := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		pods[i] = &list.Items[i]
	}
	return pods, nil
}
