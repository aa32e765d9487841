package admission

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"
)

// StorageObjectInUseProtectionName is the plugin's upstream name.
const StorageObjectInUseProtectionName = "StorageObjectInUseProtection"

// The finalizers the plugin adds; the pvc-protection and pv-protection
// controllers remove them once the object is no longer in use.
const (
	PVCProtectionFinalizer = "kubernetes.io/pvc-protection"
	PVProtectionFinalizer  = "kubernetes.io/pv-protection"
)

var volumesResource = corev1.SchemeGroupVersion.WithResource("persistentvolumes")

// StorageObjectInUseProtection adds PVCProtectionFinalizer to every new
// PersistentVolumeClaim and PVProtectionFinalizer to every new
// PersistentVolume, so that deleting one still in use only marks it for
// deletion until its protection controller lets it go.
type StorageObjectInUseProtection struct {
	*admission.Handler
}

var _ admission.MutationInterface = (*StorageObjectInUseProtection)(nil)

// NewStorageObjectInUseProtection returns the plugin; it handles creates only.
func NewStorageObjectInUseProtection() *StorageObjectInUseProtection {
	return &StorageObjectInUseProtection{Handler: admission.NewHandler(admission.Create)}
}

// Admit adds the protection finalizer to a created claim or volume that
// does not carry it yet; other resources and subresources are left alone.
func (p *StorageObjectInUseProtection) Admit(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetOperation() != admission.Create {
		return nil
	}
	switch {
	case isResource(a, claimsResource, ""):
		claim, ok := a.GetObject().(*corev1.PersistentVolumeClaim)
		if !ok {
			return apierrors.NewBadRequest(fmt.Sprintf("expected *v1.PersistentVolumeClaim, got %T", a.GetObject()))
		}
		claim.Finalizers = withFinalizer(claim.Finalizers, PVCProtectionFinalizer)
	case isResource(a, volumesResource, ""):
		pv, ok := a.GetObject().(*corev1.PersistentVolume)
		if !ok {
			return apierrors.NewBadRequest(fmt.Sprintf("expected *v1.PersistentVolume, got %T", a.GetObject()))
		}
		pv.Finalizers = withFinalizer(pv.Finalizers, PVProtectionFinalizer)
	}
	return nil
}

// withFinalizer appends f to finalizers unless it is already there.
func withFinalizer(finalizers []string, f string) []string {
	if slices.Contains(finalizers, f) {
		return finalizers
	}
	return append(finalizers, f)
}
