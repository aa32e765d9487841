package resources

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
)

// NamespaceLifecycle refuses creates in namespaces that do not exist or are
// terminating (upstream's NamespaceLifecycle admission).
type NamespaceLifecycle struct {
	Store *genericregistry.Store
}

// CheckCreate implements apiserver.NamespaceChecker.
func (l NamespaceLifecycle) CheckCreate(ctx context.Context, namespace string, gr schema.GroupResource, name string) error {
	ctx = genericapirequest.WithNamespace(ctx, "")
	// The watch cache first; a namespace created a moment ago may not be
	// there yet, so a miss is confirmed from etcd.
	obj, err := l.Store.Get(ctx, namespace, &metav1.GetOptions{ResourceVersion: "0"})
	if apierrors.IsNotFound(err) {
		obj, err = l.Store.Get(ctx, namespace, &metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return apierrors.NewNotFound(namespacesResource, namespace)
	}
	if err != nil {
		return err
	}
	ns := obj.(*corev1.Namespace)
	if ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating {
		err := apierrors.NewForbidden(gr, name, fmt.Errorf("unable to create new content in namespace %s because it is being terminated", namespace))
		// The cause lets clients (controllers) tell this refusal apart.
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
			Type:    corev1.NamespaceTerminatingCause,
			Message: fmt.Sprintf("namespace %s is being terminated", namespace),
			Field:   "metadata.namespace",
		})
		return err
	}
	return nil
}
