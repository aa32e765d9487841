package admission

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/admission"
	storagelisters "k8s.io/client-go/listers/storage/v1"
)

// DefaultStorageClassName is the plugin's upstream name.
const DefaultStorageClassName = "DefaultStorageClass"

// The annotations marking a StorageClass as the cluster's default.
const (
	isDefaultClassAnnotation     = "storageclass.kubernetes.io/is-default-class"
	betaIsDefaultClassAnnotation = "storageclass.beta.kubernetes.io/is-default-class"
)

// DefaultStorageClass gives a new claim that names no storageClassName the
// default StorageClass: the class annotated is-default-class "true", the
// newest one when several are. A claim with storageClassName "" asks for
// no class and is left alone; with no default class nothing changes.
type DefaultStorageClass struct {
	*admission.Handler
	classes storagelisters.StorageClassLister
}

var _ admission.MutationInterface = (*DefaultStorageClass)(nil)

// NewDefaultStorageClass returns the plugin reading classes from lister.
func NewDefaultStorageClass(classes storagelisters.StorageClassLister) (*DefaultStorageClass, error) {
	if classes == nil {
		return nil, fmt.Errorf("%s: a StorageClass lister is required", DefaultStorageClassName)
	}
	return &DefaultStorageClass{Handler: admission.NewHandler(admission.Create), classes: classes}, nil
}

// Admit sets the default class on a claim that names none.
func (d *DefaultStorageClass) Admit(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if !isResource(a, claimsResource, "") || a.GetOperation() != admission.Create {
		return nil
	}
	claim, ok := a.GetObject().(*corev1.PersistentVolumeClaim)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("expected *v1.PersistentVolumeClaim, got %T", a.GetObject()))
	}
	if claim.Spec.StorageClassName != nil {
		return nil
	}
	class, err := d.defaultClass()
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if class != nil {
		name := class.Name
		claim.Spec.StorageClassName = &name
	}
	return nil
}

// defaultClass is the newest class marked default (by name on a tie), or
// nil.
func (d *DefaultStorageClass) defaultClass() (*storagev1.StorageClass, error) {
	classes, err := d.classes.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("listing storage classes: %w", err)
	}
	return newestDefault(classes, func(c *storagev1.StorageClass) bool {
		return c.Annotations[isDefaultClassAnnotation] == "true" || c.Annotations[betaIsDefaultClassAnnotation] == "true"
	}), nil
}
