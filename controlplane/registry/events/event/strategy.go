// Package event describes events.k8s.io/v1 events to the registry:
// validation with that API's field names, create-on-update, the same field
// selectors and table as core/v1 events.
package event

import (
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/registry/base"
	coreevent "berth/controlplane/registry/core/event"
	"berth/internal/api/convert"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

// Kind describes events.k8s.io events.
var Kind = base.Kind[*eventsv1.Event]{
	Namespaced: true, CreateOnUpdate: true,
	Validate:       validation.ValidateEventsV1Event,
	ValidateUpdate: validation.ValidateEventsV1EventUpdate,
	Fields:         fieldsets.EventsV1Event,
	Table:          table,
}

// table prints events.k8s.io events with the core/v1 event columns.
var table = base.Table[*eventsv1.Event]{Columns: coreevent.Columns, Row: func(e *eventsv1.Event, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
	return coreevent.Row(convert.EventToCore(e), now), nil
}}
