// Package apiservice describes apiregistration.k8s.io/v1 APIServices to
// the registry (cluster-scoped; named VERSION.GROUP; the status changes
// only through /status) and their table (NAME SERVICE AVAILABLE AGE), as
// kube-aggregator's. Validation is kube-aggregator's own, run on the
// internal form of the object.
package apiservice

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kube-aggregator/pkg/apis/apiregistration"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/helper"
	"k8s.io/kube-aggregator/pkg/apis/apiregistration/validation"

	"berth/controlplane/registry/base"
)

type apiService = apiregistrationv1.APIService

// Kind describes apiservices; Strategy and StatusStrategy add the
// validation, kube-aggregator's, which takes the request's context.
var Kind = base.Kind[*apiService]{
	APIVersion: "apiregistration.k8s.io/v1", ConditionalUpdate: true,
	Status: true,
	// a local APIService (no service) is available at once, as upstream
	PrepareCreate: func(_ context.Context, svc *apiService) {
		if svc.Spec.Service == nil {
			helper.SetAPIServiceCondition(svc, helper.NewLocalAvailableAPIServiceCondition())
		}
	},
	StatusKeepsMeta: true,
	StatusResets:    []string{"metadata", "spec"},
	Table:           table,
}

// Strategy is the apiservices strategy.
type Strategy struct{ base.Typed[*apiService] }

// NewStrategy returns the apiservices strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy { return Strategy{Kind.Strategy(typer)} }

// Validate validates a new APIService.
func (Strategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	in, err := internal(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return validation.ValidateAPIService(ctx, in)
}

// ValidateUpdate validates an APIService update.
func (Strategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return validatePair(ctx, validation.ValidateAPIServiceUpdate, obj, old)
}

// StatusStrategy is the apiservices/status strategy.
type StatusStrategy struct{ base.TypedStatus[*apiService] }

// NewStatusStrategy returns the /status strategy.
func NewStatusStrategy(typer runtime.ObjectTyper) StatusStrategy {
	return StatusStrategy{Kind.StatusStrategy(typer)}
}

// ValidateUpdate validates a status update: condition statuses True,
// False or Unknown.
func (StatusStrategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return validatePair(ctx, validation.ValidateAPIServiceStatusUpdate, obj, old)
}

// validatePair runs validate on the internal forms of obj and old.
func validatePair(ctx context.Context, validate func(context.Context, *apiregistration.APIService, *apiregistration.APIService) field.ErrorList, obj, old runtime.Object) field.ErrorList {
	in, err := internal(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	was, err := internal(old)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return validate(ctx, in, was)
}

// internal converts a v1 APIService to kube-aggregator's internal form,
// which its validation takes.
func internal(obj runtime.Object) (*apiregistration.APIService, error) {
	v1, ok := obj.(*apiregistrationv1.APIService)
	if !ok {
		return nil, fmt.Errorf("not an APIService: %T", obj)
	}
	out := &apiregistration.APIService{}
	if err := apiregistrationv1.Convert_v1_APIService_To_apiregistration_APIService(v1, out, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// table prints NAME SERVICE AVAILABLE AGE, as kube-aggregator: SERVICE is
// NAMESPACE/NAME or Local, AVAILABLE the Available condition's status with
// its reason when not True.
var table = base.Table[*apiService]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		{Name: "Service", Type: "string", Description: "The reference to the service that hosts this API endpoint."},
		{Name: "Available", Type: "string", Description: "Whether this service is available."},
		base.AgeColumn,
	},
	Row: func(svc *apiService, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		service := "Local"
		if svc.Spec.Service != nil {
			service = svc.Spec.Service.Namespace + "/" + svc.Spec.Service.Name
		}
		status := string(apiregistrationv1.ConditionUnknown)
		if c := helper.GetAPIServiceConditionByType(svc, apiregistrationv1.Available); c != nil {
			status = string(c.Status)
			if c.Status != apiregistrationv1.ConditionTrue && c.Reason != "" {
				status = fmt.Sprintf("%s (%s)", c.Status, c.Reason)
			}
		}
		return []interface{}{svc.Name, service, status, base.Age(svc.CreationTimestamp, now)}, nil
	},
}
