package resources

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"berth/controlplane/registry/core/service"
	"berth/internal/errdefs"
)

// installServiceAllocators hooks al into the services store: cluster IPs
// and node ports taken on create and update, given back on delete (with
// the Service's Endpoints, as upstream).
func installServiceAllocators(set *Set, al *service.Allocators) error {
	svcs, ok := set.ByGVR[corev1.SchemeGroupVersion.WithResource("services")].Store.(*genericregistry.Store)
	if !ok {
		return fmt.Errorf("resources: services are not a generic store: %w", errdefs.ErrInvalidArgument)
	}
	if eps, ok := set.ByGVR[corev1.SchemeGroupVersion.WithResource("endpoints")].Store.(*genericregistry.Store); ok {
		al.DeleteEndpoints = func(ctx context.Context, namespace, name string) error {
			_, _, err := eps.Delete(genericapirequest.WithNamespace(ctx, namespace), name, rest.ValidateAllObjectFunc, &metav1.DeleteOptions{})
			return err
		}
	}
	svcs.BeginCreate = al.BeginCreate
	svcs.BeginUpdate = al.BeginUpdate
	svcs.AfterDelete = al.AfterDelete
	return nil
}
