package base

import (
	"context"
	"fmt"
	"reflect"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/names"

	"berth/internal/api/fieldsets"
)

// Object is what the typed strategies work on: an API object with metadata.
type Object interface {
	runtime.Object
	metav1.Object
}

// Kind describes a resource whose objects are of type T to the typed
// strategies (Typed for the resource, TypedStatus for its /status): its
// scope, which half of an object each write may change, what
// metadata.generation counts, how it is validated, its field selectors and
// its table, and the few steps of its own. Validate and ValidateUpdate are
// required (unless a strategy embedding Typed validates, as APIServices'
// do with the request's context); every other field is optional.
type Kind[T Object] struct {
	// APIVersion is the served group/version ("apps/v1"), naming the fields
	// a write resets for server-side apply.
	APIVersion string
	// Namespaced, CreateOnUpdate and ConditionalUpdate: as Strategy's.
	Namespaced, CreateOnUpdate, ConditionalUpdate bool
	// NameGenerator turns generateName into a name (a random suffix when nil).
	NameGenerator names.NameGenerator
	// DefaultGC is the garbage-collection policy of a delete that names
	// none (empty: the store's, dependents deleted in the background).
	DefaultGC rest.GarbageCollectionPolicy

	// Generation returns what metadata.generation counts the changes of
	// (SpecGeneration: the spec): a new object gets generation 1, an update
	// that changes it the stored generation + 1. Nil for a kind without one.
	Generation     func(T) any
	SpecGeneration bool

	// Status is set for a kind whose objects have a Spec and a Status the
	// writes keep apart: a new object's status is cleared (or set by
	// NewStatus), an update keeps the stored status, and the resource is
	// served with /status, whose writes keep the stored spec.
	Status bool
	// NewStatus sets a new object's status (an initial phase; AsSent keeps
	// what the client sent).
	NewStatus func(T)
	// StatusResets are the fields a /status write resets ("spec" when nil);
	// StatusKeepsMeta keeps the stored metadata on a /status write, as
	// metav1.ResetObjectMetaForStatus does.
	StatusResets    []string
	StatusKeepsMeta bool

	// Validate, ValidateUpdate and ValidateStatusUpdate validate a new
	// object, an update and a /status write (with ValidateUpdate when nil).
	Validate             func(T) field.ErrorList
	ValidateUpdate       func(obj, old T) field.ErrorList
	ValidateStatusUpdate func(obj, old T) field.ErrorList

	// PrepareCreate, PrepareUpdate and PrepareStatusUpdate are the kind's
	// own preparation, after the status is set or kept and before the
	// generation is compared; Canonicalize normalizes an object to store.
	PrepareCreate       func(ctx context.Context, obj T)
	PrepareUpdate       func(obj, old T)
	PrepareStatusUpdate func(obj, old T)
	Canonicalize        func(T)

	// Warnings, UpdateWarnings and StatusWarnings are the warnings of a new
	// object, an update and a /status write (none when nil).
	Warnings       func(T) []string
	UpdateWarnings func(obj, old T) []string
	StatusWarnings func(obj, old T) []string

	// Fields are the fields selectors may name (metadata.name, and
	// metadata.namespace for a namespaced kind, when nil).
	Fields func(T) fields.Set
	// IndexFields are the fields the watch cache indexes (pods' spec.nodeName).
	IndexFields []string
	// Table prints objects for kubectl get.
	Table Table[T]
}

// AsSent is a NewStatus that keeps the status the client sent.
func AsSent[T Object](T) {}

// half returns the named field of the struct obj points to.
func half(obj any, name string) reflect.Value {
	return reflect.ValueOf(obj).Elem().FieldByName(name)
}

// mustHave panics unless the struct T points to has the named fields (a
// Kind describing a type it does not fit).
func mustHave[T Object](names ...string) {
	var obj T
	for _, name := range names {
		if f, ok := reflect.TypeOf(obj).Elem().FieldByName(name); !ok || len(f.Index) != 1 {
			panic(fmt.Sprintf("registry: %T has no %s", obj, name))
		}
	}
}

// copyHalf sets the named field of to to from's.
func copyHalf(to, from any, name string) {
	half(to, name).Set(half(from, name))
}

// Attrs is the kind's storage.AttrFunc: an object's labels and the fields
// selectors may name.
func (k Kind[T]) Attrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	o, ok := obj.(T)
	if !ok {
		return nil, nil, fmt.Errorf("not an object of this kind: %T", obj)
	}
	if k.Fields != nil {
		return labels.Set(o.GetLabels()), k.Fields(o), nil
	}
	return labels.Set(o.GetLabels()), fieldsets.Meta(o, k.Namespaced), nil
}

// Predicate matches the kind's objects against label and field selectors.
func (k Kind[T]) Predicate(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: k.Attrs, IndexFields: k.IndexFields}
}

// Typed is the strategy of a Kind's resource: the status set on create and
// kept on update, the generation counted, the kind's own steps run, and
// its validation and warnings.
type Typed[T Object] struct {
	Strategy
	Kind Kind[T]
}

var (
	_ rest.RESTCreateStrategy              = Typed[*metav1.PartialObjectMetadata]{}
	_ rest.RESTUpdateStrategy              = Typed[*metav1.PartialObjectMetadata]{}
	_ rest.GarbageCollectionDeleteStrategy = Typed[*metav1.PartialObjectMetadata]{}
	_ rest.RESTUpdateStrategy              = TypedStatus[*metav1.PartialObjectMetadata]{}
)

// Strategy returns the strategy of the kind's resource; typer is berth's
// scheme.
func (kind Kind[T]) Strategy(typer runtime.ObjectTyper) Typed[T] {
	if kind.Status {
		mustHave[T]("Spec", "Status")
	}
	if kind.SpecGeneration {
		mustHave[T]("Spec")
		kind.Generation = func(obj T) any { return half(obj, "Spec").Interface() }
	}
	s := Typed[T]{Strategy: New(typer, kind.Namespaced), Kind: kind}
	s.CreateOnUpdate, s.ConditionalUpdate = kind.CreateOnUpdate, kind.ConditionalUpdate
	if kind.NameGenerator != nil {
		s.NameGenerator = kind.NameGenerator
	}
	if kind.Status {
		s.Reset = Reset(kind.APIVersion, "status")
	}
	return s
}

// PrepareForCreate sets the status and generation 1, then runs the kind's
// own preparation.
func (s Typed[T]) PrepareForCreate(ctx context.Context, obj runtime.Object) {
	o := obj.(T)
	switch {
	case s.Kind.NewStatus != nil:
		s.Kind.NewStatus(o)
	case s.Kind.Status:
		f := half(o, "Status")
		f.Set(reflect.Zero(f.Type()))
	}
	if s.Kind.Generation != nil {
		o.SetGeneration(1)
	}
	if s.Kind.PrepareCreate != nil {
		s.Kind.PrepareCreate(ctx, o)
	}
}

// PrepareForUpdate keeps the stored status, runs the kind's own
// preparation, and bumps the generation when what it counts changed.
func (s Typed[T]) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	n, o := obj.(T), old.(T)
	if s.Kind.Status {
		copyHalf(n, o, "Status")
	}
	if s.Kind.PrepareUpdate != nil {
		s.Kind.PrepareUpdate(n, o)
	}
	if s.Kind.Generation != nil && !apiequality.Semantic.DeepEqual(s.Kind.Generation(n), s.Kind.Generation(o)) {
		n.SetGeneration(o.GetGeneration() + 1)
	}
}

// Validate validates a new object.
func (s Typed[T]) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return s.Kind.Validate(obj.(T))
}

// ValidateUpdate validates an update.
func (s Typed[T]) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return s.Kind.ValidateUpdate(obj.(T), old.(T))
}

// Canonicalize runs the kind's normalization.
func (s Typed[T]) Canonicalize(obj runtime.Object) {
	if s.Kind.Canonicalize != nil {
		s.Kind.Canonicalize(obj.(T))
	}
}

// WarningsOnCreate returns the kind's warnings for a new object.
func (s Typed[T]) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	if s.Kind.Warnings == nil {
		return nil
	}
	return s.Kind.Warnings(obj.(T))
}

// WarningsOnUpdate returns the kind's warnings for an update.
func (s Typed[T]) WarningsOnUpdate(_ context.Context, obj, old runtime.Object) []string {
	if s.Kind.UpdateWarnings == nil {
		return nil
	}
	return s.Kind.UpdateWarnings(obj.(T), old.(T))
}

// DefaultGarbageCollectionPolicy is the kind's DefaultGC.
func (s Typed[T]) DefaultGarbageCollectionPolicy(context.Context) rest.GarbageCollectionPolicy {
	return s.Kind.DefaultGC
}

// TypedStatus is the /status strategy of a Kind's resource: only the
// status (and, unless StatusKeepsMeta, the metadata) changes.
type TypedStatus[T Object] struct {
	Typed[T]
}

// StatusStrategy returns the /status strategy of the kind's resource.
func (kind Kind[T]) StatusStrategy(typer runtime.ObjectTyper) TypedStatus[T] {
	s := TypedStatus[T]{kind.Strategy(typer)}
	resets := kind.StatusResets
	if resets == nil {
		resets = []string{"spec"}
	}
	s.Reset = Reset(kind.APIVersion, resets...)
	return s
}

// PrepareForUpdate keeps the stored spec (and metadata), then runs the
// kind's own preparation.
func (s TypedStatus[T]) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	n, o := obj.(T), old.(T)
	copyHalf(n, o, "Spec")
	if s.Kind.StatusKeepsMeta {
		metav1.ResetObjectMetaForStatus(n, o)
	}
	if s.Kind.PrepareStatusUpdate != nil {
		s.Kind.PrepareStatusUpdate(n, o)
	}
}

// ValidateUpdate validates a /status write.
func (s TypedStatus[T]) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	if s.Kind.ValidateStatusUpdate == nil {
		return s.Typed.ValidateUpdate(ctx, obj, old)
	}
	return s.Kind.ValidateStatusUpdate(obj.(T), old.(T))
}

// WarningsOnUpdate returns the kind's warnings for a /status write.
func (s TypedStatus[T]) WarningsOnUpdate(_ context.Context, obj, old runtime.Object) []string {
	if s.Kind.StatusWarnings == nil {
		return nil
	}
	return s.Kind.StatusWarnings(obj.(T), old.(T))
}
