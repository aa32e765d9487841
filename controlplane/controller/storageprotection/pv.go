package storageprotection

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"

	"berth/controlplane/controller"
)

// PVName is the pv-protection controller's name (upstream's).
const PVName = "pv-protection"

// PVConfig configures the pv-protection controller.
type PVConfig struct {
	controller.Config
}

// PVController removes PVFinalizer from volumes being deleted once they
// are not Bound, and adds it to live volumes that lack it.
type PVController struct {
	cfg     PVConfig
	volumes corelisters.PersistentVolumeLister
	queue   *controller.Queue
}

// NewPV validates cfg and registers a PersistentVolume informer.
func NewPV(cfg PVConfig) (*PVController, error) {
	if err := cfg.Validate(PVName, 1); err != nil {
		return nil, err
	}
	pvInf := cfg.Informers.Core().V1().PersistentVolumes()
	c := &PVController{cfg: cfg, volumes: pvInf.Lister(), queue: controller.NewQueue(PVName, &cfg.Config)}
	changed := func(pv *corev1.PersistentVolume) {
		if deletionCandidate(pv, PVFinalizer) || needsFinalizer(pv, PVFinalizer) {
			c.queue.Add(pv.Name)
		}
	}
	if err := c.queue.Watch(pvInf.Informer(), controller.On(controller.Added|controller.Updated, changed)); err != nil {
		return nil, err
	}
	return c, nil
}

// Run keeps volumes' protection finalizers until ctx ends.
func (c *PVController) Run(ctx context.Context) error {
	return c.queue.Run(ctx, c.sync)
}

func (c *PVController) sync(ctx context.Context, name string) error {
	pv, err := c.volumes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	action := PlanVolume(pv)
	if action == Nothing {
		return nil
	}
	updated := pv.DeepCopy()
	if action == AddFinalizer {
		updated.Finalizers = withFinalizer(updated.Finalizers, PVFinalizer)
	} else {
		updated.Finalizers = withoutFinalizer(updated.Finalizers, PVFinalizer)
	}
	if _, err := c.cfg.Client.CoreV1().PersistentVolumes().Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("%s on volume %s: %w", action, name, err)
	}
	c.cfg.Logger.Info("volume protection finalizer updated", "volume", name, "action", action.String())
	return nil
}
