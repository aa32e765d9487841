// Package event is the registry strategy for events.k8s.io/v1 events:
// validation with that API's field names, create-on-update, the same field
// selectors and table as core/v1 events.
package event

import (
	"context"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth/controlplane/registry/base"
	coreevent "berth/controlplane/registry/core/event"
	"berth/internal/api/convert"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

// Strategy is the events.k8s.io events strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the events.k8s.io events strategy; a PUT may create.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	s := Strategy{base.New(typer, true)}
	s.CreateOnUpdate = true
	return s
}

// PrepareForCreate does nothing: an event has no status.
func (Strategy) PrepareForCreate(context.Context, runtime.Object) {}

// PrepareForUpdate does nothing: an event has no status.
func (Strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

// Validate validates a new event.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateEventsV1Event(obj.(*eventsv1.Event))
}

// ValidateUpdate validates an event update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateEventsV1EventUpdate(obj.(*eventsv1.Event), old.(*eventsv1.Event))
}

// GetAttrs returns an event's labels and selectable fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.EventsV1Event(o.(*eventsv1.Event)) })

// Predicate matches events against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints events.k8s.io events with the core/v1 event columns.
var Table = base.Table[*eventsv1.Event]{Columns: coreevent.Columns, Row: func(e *eventsv1.Event, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
	return coreevent.Row(convert.EventToCore(e), now), nil
}}
