package server

import (
	"context"
	"fmt"

	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"berth/controlplane/resources"
	"berth/internal/api/defaults"
	"berth/internal/api/validation"
)

// bootstrapPriorityClasses creates the system PriorityClasses
// (system-node-critical, system-cluster-critical) that every cluster has,
// as upstream's apiserver does at start; an existing one is left alone.
func bootstrapPriorityClasses(ctx context.Context, set *resources.Set) error {
	res, ok := set.ByGVR[schedulingv1.SchemeGroupVersion.WithResource("priorityclasses")]
	if !ok {
		return fmt.Errorf("server: priorityclasses are not served")
	}
	for _, pc := range validation.SystemPriorityClasses() {
		defaults.PriorityClass(pc)
		_, err := res.Store.Create(genericapirequest.WithNamespace(ctx, ""), pc, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("server: creating priority class %s: %w", pc.Name, err)
		}
	}
	return nil
}
