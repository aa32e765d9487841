package resources

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"berth/controlplane/apiserver"
	"berth/controlplane/registry/core/pod"
)

// ephemeralContainersREST serves pods/ephemeralcontainers: GET returns the
// pod, PUT and PATCH change its spec.ephemeralContainers only (kubectl
// debug), through a copy of the pods store with the subresource's strategy.
type ephemeralContainersREST struct {
	store *genericregistry.Store
}

var (
	_ rest.Getter                    = (*ephemeralContainersREST)(nil)
	_ rest.Updater                   = (*ephemeralContainersREST)(nil)
	_ rest.ResetFieldsFilterStrategy = (*ephemeralContainersREST)(nil)
)

// serveEphemeralContainers adds pods/ephemeralcontainers to the pods resource.
func serveEphemeralContainers(res *apiserver.Resource, pods *genericregistry.Store, typer runtime.ObjectTyper) {
	store := *pods
	strategy := pod.NewEphemeralContainersStrategy(typer)
	store.UpdateStrategy = strategy
	store.ResetFieldsStrategy = strategy
	res.Subresources["ephemeralcontainers"] = apiserver.Subresource{
		Kind:    corev1.SchemeGroupVersion.WithKind("Pod"),
		Storage: &ephemeralContainersREST{store: &store},
	}
}

// New returns an empty pod.
func (r *ephemeralContainersREST) New() runtime.Object { return &corev1.Pod{} }

// Destroy does nothing: the pods store owns the storage.
func (r *ephemeralContainersREST) Destroy() {}

// Get returns the pod.
func (r *ephemeralContainersREST) Get(ctx context.Context, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, opts)
}

// Update writes the pod's ephemeral containers; the subresource never
// creates a pod.
func (r *ephemeralContainersREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, _ bool, opts *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, opts)
}

// GetResetFieldsFilter lets server-side apply through the subresource own
// only spec.ephemeralContainers.
func (r *ephemeralContainersREST) GetResetFieldsFilter() map[fieldpath.APIVersion]fieldpath.Filter {
	return pod.EphemeralContainersResetFilter()
}
