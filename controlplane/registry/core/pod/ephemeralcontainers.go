package pod

import (
	"context"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"berth/internal/api/validation"
)

// EphemeralContainersStrategy is the pods/ephemeralcontainers strategy: a
// write changes only spec.ephemeralContainers (metadata stays the stored
// pod's, as for a status write), and only by adding.
type EphemeralContainersStrategy struct{ Strategy }

// NewEphemeralContainersStrategy returns the pods/ephemeralcontainers strategy.
func NewEphemeralContainersStrategy(typer runtime.ObjectTyper) EphemeralContainersStrategy {
	s := EphemeralContainersStrategy{NewStrategy(typer)}
	s.Reset = nil
	return s
}

// PrepareForUpdate keeps the stored pod but for spec.ephemeralContainers
// and bumps metadata.generation when they changed.
func (EphemeralContainersStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newPod, oldPod := obj.(*v1.Pod), old.(*v1.Pod)
	ecs := newPod.Spec.EphemeralContainers
	newPod.Spec = *oldPod.Spec.DeepCopy()
	newPod.Spec.EphemeralContainers = ecs
	newPod.Status = oldPod.Status
	metav1.ResetObjectMetaForStatus(&newPod.ObjectMeta, &oldPod.ObjectMeta)
	if !apiequality.Semantic.DeepEqual(newPod.Spec, oldPod.Spec) {
		newPod.Generation = oldPod.Generation + 1
	}
}

// ValidateUpdate validates the ephemeral containers change.
func (EphemeralContainersStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidatePodEphemeralContainersUpdate(obj.(*v1.Pod), old.(*v1.Pod))
}

// WarningsOnUpdate returns no warnings, as upstream.
func (EphemeralContainersStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// EphemeralContainersResetFilter keeps, for server-side apply through the
// subresource, only spec.ephemeralContainers: every other field is reset.
func EphemeralContainersResetFilter() map[fieldpath.APIVersion]fieldpath.Filter {
	return map[fieldpath.APIVersion]fieldpath.Filter{
		"v1": fieldpath.NewIncludeMatcherFilter(fieldpath.MakePrefixMatcherOrDie("spec", "ephemeralContainers")),
	}
}
