package resources

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
)

// eventsView serves events.k8s.io/v1 Events from the core/v1 events store,
// as kube-apiserver does: one set of events, two API shapes, so events the
// scheduler writes (events.k8s.io) show in kubectl describe (core/v1).
// Objects are converted on the way in and out; the events.k8s.io strategy
// validates what clients of this API write.
type eventsView = versionView[*corev1.Event, *eventsv1.Event]

func newEventsView(core *genericregistry.Store, strategy rest.RESTCreateUpdateStrategy, table rest.TableConvertor) *eventsView {
	return &eventsView{
		store: core, kind: eventsv1.SchemeGroupVersion.WithKind("Event").GroupKind(),
		newObj:  func() *eventsv1.Event { return &eventsv1.Event{} },
		newList: func() runtime.Object { return &eventsv1.EventList{} },
		toView:  toEventsV1, fromView: toCoreEvent,
		table:    table,
		validate: func(ctx context.Context, ev *eventsv1.Event) field.ErrorList { return strategy.Validate(ctx, ev) },
		validateUpdate: func(ctx context.Context, ev, old *eventsv1.Event) field.ErrorList {
			if old.ResourceVersion == "" {
				return nil
			}
			// An unconditional update (no resourceVersion, allowed for
			// events as upstream) is validated as the store will write
			// it: with the stored version.
			if ev.ResourceVersion == "" {
				ev = ev.DeepCopy()
				ev.ResourceVersion = old.ResourceVersion
			}
			return strategy.ValidateUpdate(ctx, ev, old)
		},
	}
}

var _ rest.StandardStorage = &eventsView{}

// toEventsV1 converts a stored core/v1 Event.
func toEventsV1(obj runtime.Object) (*eventsv1.Event, error) {
	e, err := storedAs[*corev1.Event](obj)
	if err != nil {
		return nil, err
	}
	out := &eventsv1.Event{
		ObjectMeta:               *e.ObjectMeta.DeepCopy(),
		EventTime:                e.EventTime,
		ReportingController:      e.ReportingController,
		ReportingInstance:        e.ReportingInstance,
		Action:                   e.Action,
		Reason:                   e.Reason,
		Regarding:                e.InvolvedObject,
		Note:                     e.Message,
		Type:                     e.Type,
		DeprecatedSource:         e.Source,
		DeprecatedFirstTimestamp: e.FirstTimestamp,
		DeprecatedLastTimestamp:  e.LastTimestamp,
		DeprecatedCount:          e.Count,
	}
	if e.Related != nil {
		r := *e.Related
		out.Related = &r
	}
	if e.Series != nil {
		out.Series = &eventsv1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	return out, nil
}

// toCoreEvent converts an events.k8s.io/v1 Event for storage.
func toCoreEvent(e *eventsv1.Event) *corev1.Event {
	out := &corev1.Event{
		ObjectMeta:          *e.ObjectMeta.DeepCopy(),
		InvolvedObject:      e.Regarding,
		Reason:              e.Reason,
		Message:             e.Note,
		Source:              e.DeprecatedSource,
		FirstTimestamp:      e.DeprecatedFirstTimestamp,
		LastTimestamp:       e.DeprecatedLastTimestamp,
		Count:               e.DeprecatedCount,
		Type:                e.Type,
		EventTime:           e.EventTime,
		Action:              e.Action,
		ReportingController: e.ReportingController,
		ReportingInstance:   e.ReportingInstance,
	}
	if e.Related != nil {
		r := *e.Related
		out.Related = &r
	}
	if e.Series != nil {
		out.Series = &corev1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	return out
}
