// Package event describes core/v1 events to the registry: validation,
// create-on-update (as upstream), the involvedObject/reason/type/source
// field selectors, and the table (LAST SEEN TYPE REASON OBJECT MESSAGE,
// wide: SUBOBJECT SOURCE FIRST SEEN COUNT NAME).
package event

import (
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

// Kind describes core/v1 events.
var Kind = base.Kind[*v1.Event]{
	Namespaced: true, CreateOnUpdate: true,
	Validate:       validation.ValidateEvent,
	ValidateUpdate: validation.ValidateEventUpdate,
	Fields:         fieldsets.Event,
	Table:          table,
}

// Columns are the event table's columns (shared with events.k8s.io).
var Columns = []metav1.TableColumnDefinition{
	base.Col("Last Seen", v1.Event{}.SwaggerDoc()["lastTimestamp"]),
	base.Col("Type", v1.Event{}.SwaggerDoc()["type"]),
	base.Col("Reason", v1.Event{}.SwaggerDoc()["reason"]),
	base.Col("Object", v1.Event{}.SwaggerDoc()["involvedObject"]),
	base.Wide(base.Col("Subobject", v1.ObjectReference{}.SwaggerDoc()["fieldPath"])),
	base.Wide(base.Col("Source", v1.Event{}.SwaggerDoc()["source"])),
	base.Col("Message", v1.Event{}.SwaggerDoc()["message"]),
	base.Wide(base.Col("First Seen", v1.Event{}.SwaggerDoc()["firstTimestamp"])),
	base.Wide(base.IntCol("Count", v1.Event{}.SwaggerDoc()["count"])),
	base.Wide(metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]}),
}

// table prints events as kubectl get events does.
var table = base.Table[*v1.Event]{Columns: Columns, Row: func(e *v1.Event, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
	return Row(e, now), nil
}}

// Row computes an event's cells, in Columns order.
func Row(e *v1.Event, now time.Time) []interface{} {
	first := base.Age(e.FirstTimestamp, now)
	if e.FirstTimestamp.IsZero() {
		first = base.MicroAge(e.EventTime, now)
	}
	last := base.Age(e.LastTimestamp, now)
	if e.LastTimestamp.IsZero() {
		last = first
	}
	count := e.Count
	if e.Series != nil {
		last = base.MicroAge(e.Series.LastObservedTime, now)
		count = e.Series.Count
	} else if count == 0 {
		count = 1
	}
	target := strings.ToLower(e.InvolvedObject.Kind)
	if e.InvolvedObject.Name != "" {
		target = fmt.Sprintf("%s/%s", target, e.InvolvedObject.Name)
	}
	return []interface{}{last, e.Type, e.Reason, target, e.InvolvedObject.FieldPath,
		Source(firstNonEmpty(e.Source.Component, e.ReportingController), firstNonEmpty(e.Source.Host, e.ReportingInstance)),
		strings.TrimSpace(e.Message), first, int64(count), e.Name}
}

// Source formats an event source as "component, instance" (or just the
// component when there is no instance), as kubectl does.
func Source(component, instance string) string {
	if instance == "" {
		return component
	}
	return component + ", " + instance
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
