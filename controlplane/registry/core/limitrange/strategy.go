// Package limitrange is the registry strategy for core/v1 limit ranges and
// their table (NAME CREATED AT).
package limitrange

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

// Strategy is the limitranges strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the limitranges strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy { return Strategy{base.New(typer, true)} }

// PrepareForCreate does nothing: a LimitRange has no status.
func (Strategy) PrepareForCreate(context.Context, runtime.Object) {}

// PrepareForUpdate does nothing: a LimitRange has no status.
func (Strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

// Validate validates a new LimitRange.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateLimitRange(obj.(*v1.LimitRange))
}

// ValidateUpdate validates a LimitRange update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateLimitRangeUpdate(obj.(*v1.LimitRange), old.(*v1.LimitRange))
}

// GetAttrs returns a LimitRange's labels and metadata fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, true) })

// Predicate matches LimitRanges against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints limit ranges as kubectl get limitranges does.
var Table = base.Table[*v1.LimitRange]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
	},
	Row: func(lr *v1.LimitRange, _ time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return []interface{}{lr.Name, lr.CreationTimestamp.UTC().Format(time.RFC3339)}, nil
	},
}
