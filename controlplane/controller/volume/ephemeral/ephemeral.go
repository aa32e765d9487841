// Package ephemeral is upstream's ephemeral-volume controller: for every
// generic ephemeral volume of a pod (spec.volumes[].ephemeral) it creates
// the PersistentVolumeClaim "<pod>-<volume>" from the volumeClaimTemplate,
// owned (controller reference) by the pod, so the claim is bound or
// provisioned like any other and garbage-collected with the pod.
package ephemeral

import (
	"context"
	"errors"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	storageephemeral "k8s.io/component-helpers/storage/ephemeral"

	"berth/controlplane/controller"
)

// Name is the controller's name.
const Name = "ephemeral-volume"

// ReasonFailedBinding is the reason of the Warning event on a pod whose
// claim cannot be created or belongs to something else (upstream's).
const ReasonFailedBinding = "FailedBinding"

// Config configures the controller.
type Config struct {
	controller.Config
}

// Controller creates the claims of pods' generic ephemeral volumes.
type Controller struct {
	cfg    Config
	pods   corelisters.PodLister
	claims corelisters.PersistentVolumeClaimLister
	queue  *controller.Queue
}

// New validates cfg and registers Pod and PersistentVolumeClaim informers.
func New(cfg Config) (*Controller, error) {
	if err := cfg.Validate(Name, 1); err != nil {
		return nil, err
	}
	podInf := cfg.Informers.Core().V1().Pods()
	pvcInf := cfg.Informers.Core().V1().PersistentVolumeClaims()
	c := &Controller{cfg: cfg, pods: podInf.Lister(), claims: pvcInf.Lister(), queue: controller.NewQueue(Name, &cfg.Config)}
	enqueue := func(pod *corev1.Pod) {
		if hasEphemeral(pod) {
			c.queue.Enqueue(pod)
		}
	}
	if err := c.queue.Watch(podInf.Informer(), controller.On(controller.Added|controller.Updated, enqueue)); err != nil {
		return nil, err
	}
	// A deleted claim whose pod still runs is made again.
	claimDeleted := func(claim *corev1.PersistentVolumeClaim) {
		if ref := metav1.GetControllerOf(claim); ref != nil && ref.Kind == "Pod" {
			c.queue.Add(claim.Namespace + "/" + ref.Name)
		}
	}
	if err := c.queue.Watch(pvcInf.Informer(), controller.On(controller.Deleted, claimDeleted)); err != nil {
		return nil, err
	}
	return c, nil
}

// Run creates claims until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	return c.queue.Run(ctx, c.sync)
}

func hasEphemeral(pod *corev1.Pod) bool {
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Ephemeral != nil {
			return true
		}
	}
	return false
}

// ClaimFor returns the claim the pod's ephemeral volume needs: named
// "<pod>-<volume>", the template's labels, annotations and spec, and the pod
// as its controller.
func ClaimFor(pod *corev1.Pod, vol *corev1.Volume) *corev1.PersistentVolumeClaim {
	tmpl := vol.Ephemeral.VolumeClaimTemplate
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:            storageephemeral.VolumeClaimName(pod, vol),
			Namespace:       pod.Namespace,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(pod, corev1.SchemeGroupVersion.WithKind("Pod"))},
		},
	}
	if tmpl != nil {
		claim.Labels = maps.Clone(tmpl.Labels)
		claim.Annotations = maps.Clone(tmpl.Annotations)
		claim.Spec = *tmpl.Spec.DeepCopy()
	}
	return claim
}

func (c *Controller) sync(ctx context.Context, key string) error {
	pod, found, err := controller.Lookup[*corev1.Pod](key, c.pods.Pods)
	if !found {
		return err
	}
	if pod.DeletionTimestamp != nil {
		return nil
	}
	var errs []error
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if vol.Ephemeral == nil {
			continue
		}
		if err := c.ensureClaim(ctx, pod, vol); err != nil {
			c.cfg.Recorder.Event(pod, corev1.EventTypeWarning, ReasonFailedBinding, err.Error())
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (c *Controller) ensureClaim(ctx context.Context, pod *corev1.Pod, vol *corev1.Volume) error {
	name := storageephemeral.VolumeClaimName(pod, vol)
	existing, err := c.claims.PersistentVolumeClaims(pod.Namespace).Get(name)
	if err == nil {
		// It is ours, or the pod cannot use it (the agent reports that).
		return storageephemeral.VolumeIsForPod(pod, existing)
	}
	if !apierrors.IsNotFound(err) {
		return err
	}
	_, err = c.cfg.Client.CoreV1().PersistentVolumeClaims(pod.Namespace).Create(ctx, ClaimFor(pod, vol), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil // the informer lags; the next sync checks the owner
	}
	if err != nil {
		return fmt.Errorf("create PVC %s: %w", name, err)
	}
	return nil
}
