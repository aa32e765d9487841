// Package volume is berth's persistent volume binder (upstream's
// persistentvolume-binder controller): it binds claims to matching
// volumes, keeps the PersistentVolume and PersistentVolumeClaim phases,
// hands claims it cannot bind to their StorageClass's provisioner (the
// volume.kubernetes.io/storage-provisioner annotation, which an external
// provisioner such as berth/csi/provisioner watches), and applies a
// released volume's reclaim policy. The decisions are the pure PlanClaim
// and PlanVolume; the controller executes them through the API.
//
// Generic ephemeral volumes (a pod's spec.volumes[].ephemeral) are the
// ephemeral subpackage's job.
package volume

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	"berth/controlplane/controller"
)

// Name is the controller's name.
const Name = "persistentvolume-binder"

// Queue key prefixes: one queue carries both kinds of keys.
const (
	claimPrefix  = "claim:"
	volumePrefix = "volume:"
)

// Config configures the controller.
type Config struct {
	controller.Config
}

// Controller binds claims and volumes and keeps their phases.
type Controller struct {
	cfg     Config
	claims  corelisters.PersistentVolumeClaimLister
	volumes corelisters.PersistentVolumeLister
	classes storagelisters.StorageClassLister
	queue   *controller.Queue
}

// New validates cfg and registers the PersistentVolume,
// PersistentVolumeClaim and StorageClass informers.
func New(cfg Config) (*Controller, error) {
	if err := cfg.Validate(Name, 2); err != nil {
		return nil, err
	}
	pvcInf := cfg.Informers.Core().V1().PersistentVolumeClaims()
	pvInf := cfg.Informers.Core().V1().PersistentVolumes()
	scInf := cfg.Informers.Storage().V1().StorageClasses()
	c := &Controller{
		cfg: cfg, claims: pvcInf.Lister(), volumes: pvInf.Lister(), classes: scInf.Lister(),
		queue: controller.NewQueue(Name, &cfg.Config),
	}
	for _, w := range []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{pvcInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: c.enqueueClaim, UpdateFunc: func(_, cur any) { c.enqueueClaim(cur) }, DeleteFunc: c.claimDeleted}},
		{pvInf.Informer(), controller.On(controller.Added|controller.Updated, c.volumeChanged)},
		{scInf.Informer(), controller.On(controller.Added|controller.Updated, func(any) { c.enqueuePendingClaims() })},
	} {
		if err := c.queue.Watch(w.inf, w.h); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Run binds until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	return c.queue.Run(ctx, c.sync)
}

func (c *Controller) enqueueClaim(obj any) {
	if key, ok := controller.KeyFunc(obj); ok {
		c.queue.Add(claimPrefix + key)
	}
}

// claimDeleted syncs the volume the claim was bound to: it is Released now.
func (c *Controller) claimDeleted(obj any) {
	if claim, ok := controller.Object[*corev1.PersistentVolumeClaim](obj); ok && claim.Spec.VolumeName != "" {
		c.queue.Add(volumePrefix + claim.Spec.VolumeName)
	}
}

// volumeChanged syncs the volume, and the claims it may now satisfy: the
// one it is (pre-)bound to, or every pending claim when it is free (upstream
// waits for its periodic resync instead).
func (c *Controller) volumeChanged(v *corev1.PersistentVolume) {
	c.queue.Add(volumePrefix + v.Name)
	if ref := v.Spec.ClaimRef; ref != nil {
		c.queue.Add(claimPrefix + ref.Namespace + "/" + ref.Name)
		return
	}
	if v.Status.Phase == corev1.VolumeAvailable {
		c.enqueuePendingClaims()
	}
}

func (c *Controller) enqueuePendingClaims() {
	claims, err := c.claims.List(labels.Everything())
	if err != nil {
		return
	}
	for _, claim := range claims {
		if claim.Spec.VolumeName == "" && claim.Status.Phase != corev1.ClaimBound {
			c.queue.Add(claimPrefix + claim.Namespace + "/" + claim.Name)
		}
	}
}

func (c *Controller) sync(ctx context.Context, key string) error {
	if name, ok := strings.CutPrefix(key, volumePrefix); ok {
		return c.syncVolume(ctx, name)
	}
	if k, ok := strings.CutPrefix(key, claimPrefix); ok {
		return c.syncClaim(ctx, k)
	}
	return nil
}

func (c *Controller) syncClaim(ctx context.Context, key string) error {
	claim, found, err := controller.Lookup[*corev1.PersistentVolumeClaim](key, c.claims.PersistentVolumeClaims)
	if !found {
		return err
	}
	if claim.DeletionTimestamp != nil {
		return nil
	}
	volumes, err := c.volumes.List(labels.Everything())
	if err != nil {
		return err
	}
	var class *storagev1.StorageClass
	if cn := storagehelpers.GetPersistentVolumeClaimClass(claim); cn != "" {
		class, err = c.classes.Get(cn)
		if apierrors.IsNotFound(err) {
			class = nil
		} else if err != nil {
			return err
		}
	}
	plan := PlanClaim(ClaimState{Claim: claim, Volumes: volumes, Class: class})
	if plan.Event != nil {
		c.cfg.Recorder.Event(claim, plan.Event.Type, plan.Event.Reason, plan.Event.Message)
	}
	if plan.Err != nil {
		return plan.Err
	}
	switch plan.Action {
	case ClaimBind:
		return c.bind(ctx, plan.Volume, claim)
	case ClaimProvision:
		if claim, err = c.setProvisioner(ctx, claim, plan.Provisioner); err != nil {
			return err
		}
		return c.setClaimStatus(ctx, claim, plan.Phase, nil)
	default:
		return c.setClaimStatus(ctx, claim, plan.Phase, nil)
	}
}

// setProvisioner annotates the claim for its class's provisioner (both the
// GA and the beta annotation, as upstream).
func (c *Controller) setProvisioner(ctx context.Context, claim *corev1.PersistentVolumeClaim, provisioner string) (*corev1.PersistentVolumeClaim, error) {
	if claim.Annotations[storagehelpers.AnnStorageProvisioner] == provisioner && claim.Annotations[storagehelpers.AnnBetaStorageProvisioner] == provisioner {
		return claim, nil
	}
	claim = claim.DeepCopy()
	metav1.SetMetaDataAnnotation(&claim.ObjectMeta, storagehelpers.AnnStorageProvisioner, provisioner)
	metav1.SetMetaDataAnnotation(&claim.ObjectMeta, storagehelpers.AnnBetaStorageProvisioner, provisioner)
	out, err := c.cfg.Client.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, claim, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("claim %s/%s: set provisioner %q: %w", claim.Namespace, claim.Name, provisioner, err)
	}
	return out, nil
}

// bind points the volume at the claim and the claim at the volume, in
// upstream's order: volume spec, volume phase, claim spec, claim phase. A
// failure part way is finished by the next sync of either.
func (c *Controller) bind(ctx context.Context, v *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim) error {
	bound, dirty, err := storagehelpers.GetBindVolumeToClaim(v, claim)
	if err != nil {
		return err
	}
	if dirty {
		if bound, err = c.cfg.Client.CoreV1().PersistentVolumes().Update(ctx, bound, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("bind volume %s to claim %s/%s: %w", v.Name, claim.Namespace, claim.Name, err)
		}
	}
	if _, err := c.setVolumePhase(ctx, bound, corev1.VolumeBound, ""); err != nil {
		return err
	}
	want := claim.DeepCopy()
	if want.Spec.VolumeName != bound.Name {
		want.Spec.VolumeName = bound.Name
		metav1.SetMetaDataAnnotation(&want.ObjectMeta, storagehelpers.AnnBoundByController, "yes")
	}
	metav1.SetMetaDataAnnotation(&want.ObjectMeta, storagehelpers.AnnBindCompleted, "yes")
	if !equality.Semantic.DeepEqual(want.ObjectMeta, claim.ObjectMeta) || want.Spec.VolumeName != claim.Spec.VolumeName {
		if claim, err = c.cfg.Client.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, want, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("bind claim %s/%s to volume %s: %w", want.Namespace, want.Name, bound.Name, err)
		}
	}
	return c.setClaimStatus(ctx, claim, corev1.ClaimBound, bound)
}

// setClaimStatus sets the claim's phase, and its capacity and access modes
// from the bound volume (cleared without one).
func (c *Controller) setClaimStatus(ctx context.Context, claim *corev1.PersistentVolumeClaim, phase corev1.PersistentVolumeClaimPhase, v *corev1.PersistentVolume) error {
	want := claim.DeepCopy()
	want.Status.Phase = phase
	if v == nil {
		want.Status.AccessModes, want.Status.Capacity = nil, nil
	} else {
		want.Status.AccessModes = v.Spec.AccessModes
		want.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: v.Spec.Capacity[corev1.ResourceStorage]}
	}
	if equality.Semantic.DeepEqual(want.Status, claim.Status) {
		return nil
	}
	if _, err := c.cfg.Client.CoreV1().PersistentVolumeClaims(claim.Namespace).UpdateStatus(ctx, want, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("claim %s/%s: set phase %s: %w", claim.Namespace, claim.Name, phase, err)
	}
	return nil
}

func (c *Controller) syncVolume(ctx context.Context, name string) error {
	v, err := c.volumes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	var claim *corev1.PersistentVolumeClaim
	if ref := v.Spec.ClaimRef; ref != nil {
		claim, err = c.claims.PersistentVolumeClaims(ref.Namespace).Get(ref.Name)
		if apierrors.IsNotFound(err) {
			// The informer may lag behind a claim just created: ask the
			// apiserver before declaring the volume released.
			claim, err = c.cfg.Client.CoreV1().PersistentVolumeClaims(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				claim, err = nil, nil
			}
		}
		if err != nil {
			return err
		}
	}
	plan := PlanVolume(v, claim)
	switch plan.Action {
	case VolumeSetPhase:
		changed, err := c.setVolumePhase(ctx, v, plan.Phase, plan.Message)
		if err != nil {
			return err
		}
		if changed && plan.Event != nil {
			c.cfg.Recorder.Event(v, plan.Event.Type, plan.Event.Reason, plan.Event.Message)
		}
		if plan.Claim != "" {
			c.queue.Add(claimPrefix + plan.Claim)
		}
	case VolumeWaitClaim:
		c.queue.Add(claimPrefix + plan.Claim)
	case VolumeUnbind:
		return c.unbind(ctx, v)
	}
	return nil
}

// setVolumePhase writes phase and message when they differ; it reports
// whether it wrote.
func (c *Controller) setVolumePhase(ctx context.Context, v *corev1.PersistentVolume, phase corev1.PersistentVolumePhase, msg string) (bool, error) {
	if v.Status.Phase == phase && v.Status.Message == msg {
		return false, nil
	}
	want := v.DeepCopy()
	want.Status.Phase, want.Status.Message, want.Status.Reason = phase, msg, ""
	if phase != v.Status.Phase {
		want.Status.LastPhaseTransitionTime = nil // the apiserver stamps the change
	}
	if _, err := c.cfg.Client.CoreV1().PersistentVolumes().UpdateStatus(ctx, want, metav1.UpdateOptions{}); err != nil {
		return false, fmt.Errorf("volume %s: set phase %s: %w", v.Name, phase, err)
	}
	return true, nil
}

// unbind frees a volume whose claim got bound elsewhere: a binding the
// controller made is removed whole, a user's pre-binding keeps the claim's
// name and loses only the UID.
func (c *Controller) unbind(ctx context.Context, v *corev1.PersistentVolume) error {
	want := v.DeepCopy()
	if metav1.HasAnnotation(v.ObjectMeta, storagehelpers.AnnBoundByController) {
		want.Spec.ClaimRef = nil
		delete(want.Annotations, storagehelpers.AnnBoundByController)
	} else {
		want.Spec.ClaimRef.UID = ""
		want.Spec.ClaimRef.ResourceVersion = ""
	}
	out, err := c.cfg.Client.CoreV1().PersistentVolumes().Update(ctx, want, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("unbind volume %s: %w", v.Name, err)
	}
	_, err = c.setVolumePhase(ctx, out, corev1.VolumeAvailable, "")
	return err
}
