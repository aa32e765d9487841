package controllerref

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// Adopter carries out Claims: the patches adopting and releasing the
// dependents (of one resource) of owners of one kind.
type Adopter[O, T metav1.Object] struct {
	// Kind is the owners' kind.
	Kind schema.GroupVersionKind
	// Resource names the dependents in errors ("pod").
	Resource string
	// Patch applies a strategic-merge patch to a dependent; required.
	Patch func(ctx context.Context, namespace, name string, patch []byte) (T, error)
	// Fresh, when set, re-reads the owner from the apiserver before the
	// first adoption, so that an owner deleted, or replaced by another of
	// its name, adopts nothing (upstream's canAdopt).
	Fresh func(ctx context.Context, namespace, name string) (O, error)
	// AdoptPatch, when set, builds the adopting patch instead of the
	// package's AdoptPatch.
	AdoptPatch func(owner O, dep T) ([]byte, error)
}

// Execute adopts cl.Adopt and releases cl.Release for owner, and returns
// the dependents owner controls afterwards (cl.Owned and those adopted)
// with the errors met. A dependent gone meanwhile is no error; when the
// fresh owner is gone, another or being deleted, nothing is adopted.
func (a Adopter[O, T]) Execute(ctx context.Context, owner O, cl Claim[T]) ([]T, error) {
	owned := cl.Owned
	var errs []error
	if len(cl.Adopt) > 0 {
		if err := a.canAdopt(ctx, owner); err != nil {
			errs = append(errs, err)
		} else {
			for _, dep := range cl.Adopt {
				out, err := a.adopt(ctx, owner, dep)
				switch {
				case err == nil:
					owned = append(owned, out)
				case !apierrors.IsNotFound(err):
					errs = append(errs, fmt.Errorf("adopt %s %s: %w", a.Resource, dep.GetName(), err))
				}
			}
		}
	}
	for _, dep := range cl.Release {
		_, err := a.Patch(ctx, dep.GetNamespace(), dep.GetName(), ReleasePatch(owner.GetUID(), dep.GetUID()))
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("release %s %s: %w", a.Resource, dep.GetName(), err))
		}
	}
	return owned, errors.Join(errs...)
}

func (a Adopter[O, T]) canAdopt(ctx context.Context, owner O) error {
	if a.Fresh == nil {
		return nil
	}
	fresh, err := a.Fresh(ctx, owner.GetNamespace(), owner.GetName())
	if err != nil {
		return fmt.Errorf("re-read %s/%s before adopting: %w", owner.GetNamespace(), owner.GetName(), err)
	}
	if fresh.GetUID() != owner.GetUID() || fresh.GetDeletionTimestamp() != nil {
		return fmt.Errorf("%s/%s changed (uid %s, deleting %v); not adopting", owner.GetNamespace(), owner.GetName(), fresh.GetUID(), fresh.GetDeletionTimestamp() != nil)
	}
	return nil
}

func (a Adopter[O, T]) adopt(ctx context.Context, owner O, dep T) (T, error) {
	patch := AdoptPatch(owner, a.Kind, dep.GetUID())
	if a.AdoptPatch != nil {
		var err error
		if patch, err = a.AdoptPatch(owner, dep); err != nil {
			var zero T
			return zero, err
		}
	}
	return a.Patch(ctx, dep.GetNamespace(), dep.GetName(), patch)
}

// PodAdopter is the Adopter of the pods of owners of kind, patching them
// through client; fresh re-reads an owner (nil: no re-read).
func PodAdopter[O metav1.Object](client kubernetes.Interface, kind schema.GroupVersionKind, fresh func(ctx context.Context, namespace, name string) (O, error)) Adopter[O, *corev1.Pod] {
	return Adopter[O, *corev1.Pod]{Kind: kind, Resource: "pod", Fresh: fresh,
		Patch: func(ctx context.Context, ns, name string, patch []byte) (*corev1.Pod, error) {
			return client.CoreV1().Pods(ns).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		}}
}

// getter is what Fetch uses of a typed client (as a DaemonSetInterface).
type getter[O any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (O, error)
}

// Fetch reads owners through a typed client's per-namespace accessor (as
// kubernetes.Interface.AppsV1().DaemonSets), for Adopter.Fresh.
func Fetch[O any, G getter[O]](byNamespace func(namespace string) G) func(ctx context.Context, namespace, name string) (O, error) {
	return func(ctx context.Context, ns, name string) (O, error) {
		return byNamespace(ns).Get(ctx, name, metav1.GetOptions{})
	}
}

// RevisionAdopter is the Adopter of the ControllerRevisions of owners of
// kind, patching them through client; fresh re-reads an owner (nil: no
// re-read).
func RevisionAdopter[O metav1.Object](client kubernetes.Interface, kind schema.GroupVersionKind, fresh func(ctx context.Context, namespace, name string) (O, error)) Adopter[O, *appsv1.ControllerRevision] {
	return Adopter[O, *appsv1.ControllerRevision]{Kind: kind, Resource: "revision", Fresh: fresh,
		Patch: func(ctx context.Context, ns, name string, patch []byte) (*appsv1.ControllerRevision, error) {
			return client.AppsV1().ControllerRevisions(ns).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		}}
}
