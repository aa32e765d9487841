package resources

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	apistorage "k8s.io/apiserver/pkg/storage"

	"berth/controlplane/admission"
)

var namespacesResource = corev1.Resource("namespaces")

// namespaceREST is the namespaces store with upstream's two-phase delete: a
// namespace with spec.finalizers is only marked (deletionTimestamp, phase
// Terminating); the namespace controller empties it, clears the finalizer
// through /finalize, and that removes it.
type namespaceREST struct {
	*genericregistry.Store
}

// Delete implements rest.GracefulDeleter.
func (n *namespaceREST) Delete(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions) (runtime.Object, bool, error) {
	obj, err := n.Store.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, false, err
	}
	ns := obj.(*corev1.Namespace)
	if pre := options.Preconditions; pre != nil {
		if pre.UID != nil && *pre.UID != ns.UID {
			return nil, false, apierrors.NewConflict(namespacesResource, name, fmt.Errorf("precondition failed: UID in precondition: %v, UID in object meta: %v", *pre.UID, ns.UID))
		}
		if pre.ResourceVersion != nil && *pre.ResourceVersion != ns.ResourceVersion {
			return nil, false, apierrors.NewConflict(namespacesResource, name, fmt.Errorf("precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *pre.ResourceVersion, ns.ResourceVersion))
		}
	}
	if len(ns.Spec.Finalizers) == 0 {
		return n.Store.Delete(ctx, name, deleteValidation, options)
	}
	if ns.DeletionTimestamp != nil {
		return ns, false, nil
	}
	if deleteValidation != nil {
		if err := deleteValidation(ctx, ns); err != nil {
			return nil, false, err
		}
	}
	key, err := n.Store.KeyFunc(ctx, name)
	if err != nil {
		return nil, false, err
	}
	out := &corev1.Namespace{}
	dryRun := slices.Contains(options.DryRun, metav1.DryRunAll)
	err = n.Store.Storage.GuaranteedUpdate(ctx, key, out, false, apistorage.NewUIDPreconditions(string(ns.UID)),
		func(in runtime.Object, _ apistorage.ResponseMeta) (runtime.Object, *uint64, error) {
			cur := in.(*corev1.Namespace)
			if cur.DeletionTimestamp == nil {
				now := metav1.Now()
				cur.DeletionTimestamp = &now
			}
			cur.Status.Phase = corev1.NamespaceTerminating
			return cur, nil, nil
		}, dryRun, nil)
	if err != nil {
		return nil, false, err
	}
	return out, false, nil
}

// DeleteCollection implements rest.CollectionDeleter through Delete, so
// each namespace goes through the two-phase delete; the immortal ones,
// which the NamespaceLifecycle admission keeps from a single delete, are
// skipped.
func (n *namespaceREST) DeleteCollection(ctx context.Context, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions, listOptions *metainternalversion.ListOptions) (runtime.Object, error) {
	listObj, err := n.Store.List(ctx, listOptions)
	if err != nil {
		return nil, err
	}
	list := listObj.(*corev1.NamespaceList)
	out := &corev1.NamespaceList{ListMeta: list.ListMeta}
	for i := range list.Items {
		name := list.Items[i].Name
		if slices.Contains(admission.ImmortalNamespaces, name) {
			continue
		}
		obj, _, err := n.Delete(ctx, name, deleteValidation, options.DeepCopy())
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if ns, ok := obj.(*corev1.Namespace); ok {
			out.Items = append(out.Items, *ns)
		}
	}
	return out, nil
}

// finalizeStrategy lets an update change only spec.finalizers.
type finalizeStrategy struct {
	rest.RESTUpdateStrategy
}

// PrepareForUpdate keeps everything of the old namespace but spec.finalizers.
func (f *finalizeStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	nn, on := obj.(*corev1.Namespace), old.(*corev1.Namespace)
	fin, rv := nn.Spec.Finalizers, nn.ResourceVersion
	*nn = *on.DeepCopy()
	nn.Spec.Finalizers, nn.ResourceVersion = fin, rv
}

// namespaceFinalized is the namespace stores' ShouldDeleteDuringUpdate (as
// upstream's ShouldDeleteNamespaceDuringUpdate): on top of the generic
// rule (a deleted object whose metadata.finalizers are gone), an update
// deletes a namespace only once its spec.finalizers are gone too, so
// updating a terminating namespace's labels or status keeps it.
func namespaceFinalized(_ context.Context, _ string, obj, _ runtime.Object) bool {
	ns, ok := obj.(*corev1.Namespace)
	return ok && len(ns.Spec.Finalizers) == 0
}

// finalizeOnly serves PUT namespaces/{name}/finalize; once a terminating
// namespace has no finalizers left, the update deletes it.
type finalizeOnly struct {
	store *genericregistry.Store
}

var _ rest.Updater = &finalizeOnly{}

func newFinalizeOnly(store genericregistry.Store, strategy rest.RESTUpdateStrategy) *finalizeOnly {
	store.UpdateStrategy = &finalizeStrategy{RESTUpdateStrategy: strategy}
	store.ResetFieldsStrategy = nil
	store.ShouldDeleteDuringUpdate = namespaceFinalized
	return &finalizeOnly{store: &store}
}

// New implements rest.Storage.
func (f *finalizeOnly) New() runtime.Object { return &corev1.Namespace{} }

// Destroy implements rest.Storage.
func (f *finalizeOnly) Destroy() {}

// Update implements rest.Updater.
func (f *finalizeOnly) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, _ bool, opts *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return f.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, opts)
}
