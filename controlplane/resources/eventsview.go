package resources

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
)

// eventsView serves events.k8s.io/v1 Events from the core/v1 events store,
// as kube-apiserver does: one set of events, two API shapes, so events the
// scheduler writes (events.k8s.io) show in kubectl describe (core/v1).
// Objects are converted on the way in and out; the events.k8s.io strategy
// validates what clients of this API write.
type eventsView struct {
	core     *genericregistry.Store
	strategy rest.RESTCreateUpdateStrategy
	table    rest.TableConvertor
}

var _ rest.StandardStorage = &eventsView{}

// New implements rest.Storage.
func (v *eventsView) New() runtime.Object { return &eventsv1.Event{} }

// NewList implements rest.Lister.
func (v *eventsView) NewList() runtime.Object { return &eventsv1.EventList{} }

// Destroy implements rest.Storage (the core store owns the storage).
func (v *eventsView) Destroy() {}

// Get implements rest.Getter.
func (v *eventsView) Get(ctx context.Context, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	obj, err := v.core.Get(ctx, name, opts)
	if err != nil {
		return nil, err
	}
	return toEventsV1(obj)
}

// List implements rest.Lister.
func (v *eventsView) List(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	obj, err := v.core.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	return toEventsV1List(obj)
}

// ConvertToTable implements rest.TableConvertor with the events.k8s.io columns.
func (v *eventsView) ConvertToTable(ctx context.Context, obj runtime.Object, opts runtime.Object) (*metav1.Table, error) {
	return v.table.ConvertToTable(ctx, obj, opts)
}

// Watch implements rest.Watcher.
func (v *eventsView) Watch(ctx context.Context, opts *metainternalversion.ListOptions) (watch.Interface, error) {
	w, err := v.core.Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
		if ev.Type == watch.Error {
			return ev, true
		}
		out, err := toEventsV1(ev.Object)
		if err != nil {
			return watch.Event{Type: watch.Error, Object: &apierrors.NewInternalError(err).ErrStatus}, true
		}
		ev.Object = out
		return ev, true
	}), nil
}

// Create implements rest.Creater.
func (v *eventsView) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error) {
	ev, ok := obj.(*eventsv1.Event)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not an events.k8s.io/v1 Event: %T", obj))
	}
	if errs := v.strategy.Validate(ctx, ev); len(errs) > 0 {
		return nil, apierrors.NewInvalid(eventsv1.SchemeGroupVersion.WithKind("Event").GroupKind(), ev.Name, errs)
	}
	out, err := v.core.Create(ctx, toCoreEvent(ev), createValidation, opts)
	if err != nil {
		return nil, err
	}
	return toEventsV1(out)
}

// Update implements rest.Updater.
func (v *eventsView) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, opts *metav1.UpdateOptions) (runtime.Object, bool, error) {
	out, created, err := v.core.Update(ctx, name, &eventsV1Update{v: v, inner: objInfo}, createValidation, updateValidation, forceAllowCreate, opts)
	if err != nil {
		return nil, false, err
	}
	ev, err := toEventsV1(out)
	return ev, created, err
}

// Delete implements rest.GracefulDeleter.
func (v *eventsView) Delete(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, opts *metav1.DeleteOptions) (runtime.Object, bool, error) {
	out, deleted, err := v.core.Delete(ctx, name, deleteValidation, opts)
	if err != nil {
		return nil, false, err
	}
	if _, isEvent := out.(*corev1.Event); isEvent {
		ev, err := toEventsV1(out)
		return ev, deleted, err
	}
	return out, deleted, nil
}

// DeleteCollection implements rest.CollectionDeleter.
func (v *eventsView) DeleteCollection(ctx context.Context, deleteValidation rest.ValidateObjectFunc, opts *metav1.DeleteOptions, listOpts *metainternalversion.ListOptions) (runtime.Object, error) {
	out, err := v.core.DeleteCollection(ctx, deleteValidation, opts, listOpts)
	if err != nil {
		return nil, err
	}
	return toEventsV1List(out)
}

// eventsV1Update runs an events.k8s.io update on a core event.
type eventsV1Update struct {
	v     *eventsView
	inner rest.UpdatedObjectInfo
}

func (u *eventsV1Update) Preconditions() *metav1.Preconditions { return u.inner.Preconditions() }

func (u *eventsV1Update) UpdatedObject(ctx context.Context, old runtime.Object) (runtime.Object, error) {
	oldV1, err := toEventsV1(old)
	if err != nil {
		return nil, err
	}
	obj, err := u.inner.UpdatedObject(ctx, oldV1)
	if err != nil {
		return nil, err
	}
	ev, ok := obj.(*eventsv1.Event)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not an events.k8s.io/v1 Event: %T", obj))
	}
	if oldV1.ResourceVersion != "" {
		// An unconditional update (no resourceVersion, allowed for events
		// as upstream) is validated as the store will write it: with the
		// stored version.
		check := ev
		if ev.ResourceVersion == "" {
			check = ev.DeepCopy()
			check.ResourceVersion = oldV1.ResourceVersion
		}
		if errs := u.v.strategy.ValidateUpdate(ctx, check, oldV1); len(errs) > 0 {
			return nil, apierrors.NewInvalid(eventsv1.SchemeGroupVersion.WithKind("Event").GroupKind(), ev.Name, errs)
		}
	}
	return toCoreEvent(ev), nil
}

// toEventsV1 converts a core/v1 Event (possibly in a watch cache wrapper).
func toEventsV1(obj runtime.Object) (*eventsv1.Event, error) {
	if c, ok := obj.(runtime.CacheableObject); ok {
		obj = c.GetObject()
	}
	e, ok := obj.(*corev1.Event)
	if !ok {
		return nil, fmt.Errorf("events view: stored object is a %T", obj)
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

func toEventsV1List(obj runtime.Object) (*eventsv1.EventList, error) {
	l, ok := obj.(*corev1.EventList)
	if !ok {
		return nil, fmt.Errorf("events view: stored list is a %T", obj)
	}
	out := &eventsv1.EventList{ListMeta: l.ListMeta, Items: make([]eventsv1.Event, 0, len(l.Items))}
	for i := range l.Items {
		e, err := toEventsV1(&l.Items[i])
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, *e)
	}
	return out, nil
}
