package resources

import (
	"context"
	"fmt"
	"k8s.io/apiextensions-apiserver/pkg/apihelpers"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	apistorage "k8s.io/apiserver/pkg/storage"
)

// crdCleanupFinalizer makes a deleted CustomResourceDefinition wait until
// its custom objects are gone (the CRD finalizer controller removes it).
const crdCleanupFinalizer = "customresourcecleanup.apiextensions.k8s.io"

// crdREST is the customresourcedefinitions store with upstream's delete:
// the first DELETE marks the CRD terminating (deletionTimestamp, the
// cleanup finalizer, condition Terminating=True InstanceDeletionPending)
// and leaves the removal to the finalizer controller.
type crdREST struct {
	*genericregistry.Store
}

// Delete implements rest.GracefulDeleter.
func (r *crdREST) Delete(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions) (runtime.Object, bool, error) {
	obj, err := r.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, false, err
	}
	crd := obj.(*apiextensionsv1.CustomResourceDefinition)
	gr := apiextensionsv1.Resource("customresourcedefinitions")
	if options == nil {
		options = metav1.NewDeleteOptions(0)
	}
	if options.Preconditions == nil {
		options.Preconditions = &metav1.Preconditions{}
	}
	if options.Preconditions.UID == nil {
		options.Preconditions.UID = &crd.UID
	} else if *options.Preconditions.UID != crd.UID {
		return nil, false, apierrors.NewConflict(gr, name,
			fmt.Errorf("precondition failed: UID in precondition: %v, UID in object meta: %v", *options.Preconditions.UID, crd.UID))
	}
	if rv := options.Preconditions.ResourceVersion; rv != nil && *rv != crd.ResourceVersion {
		return nil, false, apierrors.NewConflict(gr, name,
			fmt.Errorf("precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *rv, crd.ResourceVersion))
	}
	if !crd.DeletionTimestamp.IsZero() {
		return r.Store.Delete(ctx, name, deleteValidation, options)
	}
	key, err := r.Store.KeyFunc(ctx, name)
	if err != nil {
		return nil, false, err
	}
	out := r.Store.NewFunc()
	pre := apistorage.Preconditions{UID: options.Preconditions.UID, ResourceVersion: options.Preconditions.ResourceVersion}
	err = r.Store.Storage.GuaranteedUpdate(ctx, key, out, false, &pre, apistorage.SimpleUpdate(func(existing runtime.Object) (runtime.Object, error) {
		c := existing.(*apiextensionsv1.CustomResourceDefinition)
		if err := deleteValidation(ctx, c); err != nil {
			return nil, err
		}
		if c.DeletionTimestamp.IsZero() {
			now := metav1.Now()
			c.DeletionTimestamp = &now
		}
		if !apihelpers.CRDHasFinalizer(c, crdCleanupFinalizer) {
			c.Finalizers = append(c.Finalizers, crdCleanupFinalizer)
		}
		apihelpers.SetCRDCondition(c, apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue, Reason: "InstanceDeletionPending",
			Message: "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
		})
		return c, nil
	}), len(options.DryRun) > 0, nil)
	if err != nil {
		if apistorage.IsNotFound(err) {
			return nil, false, apierrors.NewNotFound(gr, name)
		}
		if apistorage.IsConflict(err) {
			return nil, false, apierrors.NewConflict(gr, name, err)
		}
		if _, ok := err.(apierrors.APIStatus); !ok {
			err = apierrors.NewInternalError(err)
		}
		return nil, false, err
	}
	return out, false, nil
}
