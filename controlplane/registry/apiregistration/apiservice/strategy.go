// Package apiservice is the registry strategy for apiregistration.k8s.io/v1
// APIServices (cluster-scoped; named VERSION.GROUP; the status changes
// only through /status) and their table (NAME SERVICE AVAILABLE AGE), as
// kube-aggregator's. Validation is kube-aggregator's own, run on the
// internal form of the object.
package apiservice

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kube-aggregator/pkg/apis/apiregistration"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/helper"
	"k8s.io/kube-aggregator/pkg/apis/apiregistration/validation"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
)

// Strategy is the apiservices strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the apiservices strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	s := Strategy{base.New(typer, false)}
	s.Reset = base.Reset("apiregistration.k8s.io/v1", "status")
	return s
}

// PrepareForCreate clears the status; a local APIService (no service) is
// available at once, as upstream.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	svc := obj.(*apiregistrationv1.APIService)
	svc.Status = apiregistrationv1.APIServiceStatus{}
	if svc.Spec.Service == nil {
		helper.SetAPIServiceCondition(svc, helper.NewLocalAvailableAPIServiceCondition())
	}
}

// PrepareForUpdate keeps the stored status.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*apiregistrationv1.APIService).Status = old.(*apiregistrationv1.APIService).Status
}

// AllowUnconditionalUpdate is false, as upstream.
func (Strategy) AllowUnconditionalUpdate(context.Context) bool { return false }

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
	in, err := internal(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	was, err := internal(old)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return validation.ValidateAPIServiceUpdate(ctx, in, was)
}

// StatusStrategy is the apiservices/status strategy.
type StatusStrategy struct{ Strategy }

// NewStatusStrategy returns the /status strategy.
func NewStatusStrategy(typer runtime.ObjectTyper) StatusStrategy {
	s := StatusStrategy{NewStrategy(typer)}
	s.Reset = base.Reset("apiregistration.k8s.io/v1", "metadata", "spec")
	return s
}

// PrepareForUpdate keeps the stored spec and metadata.
func (StatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newSvc, oldSvc := obj.(*apiregistrationv1.APIService), old.(*apiregistrationv1.APIService)
	newSvc.Spec = oldSvc.Spec
	metav1.ResetObjectMetaForStatus(&newSvc.ObjectMeta, &oldSvc.ObjectMeta)
}

// ValidateUpdate validates a status update: condition statuses True,
// False or Unknown.
func (StatusStrategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	in, err := internal(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	was, err := internal(old)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return validation.ValidateAPIServiceStatusUpdate(ctx, in, was)
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

// GetAttrs returns an APIService's labels and metadata fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, false) })

// Predicate matches APIServices against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints NAME SERVICE AVAILABLE AGE, as kube-aggregator: SERVICE is
// NAMESPACE/NAME or Local, AVAILABLE the Available condition's status with
// its reason when not True.
var Table = base.Table[*apiregistrationv1.APIService]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		{Name: "Service", Type: "string", Description: "The reference to the service that hosts this API endpoint."},
		{Name: "Available", Type: "string", Description: "Whether this service is available."},
		base.AgeColumn,
	},
	Row: func(svc *apiregistrationv1.APIService, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
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
