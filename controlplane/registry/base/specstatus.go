package base

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// SpecStatusKind describes a cluster-scoped kind with a spec and a status
// written only through /status (admission policies, flow schemas, priority
// levels): how to reach both halves and how to validate.
type SpecStatusKind[T interface {
	runtime.Object
	metav1.Object
}] struct {
	// APIVersion is the served group/version ("flowcontrol.apiserver.k8s.io/v1").
	APIVersion string
	// Spec returns the spec (compared to bump the generation); SetSpec
	// copies the spec of from into to.
	Spec    func(T) any
	SetSpec func(to, from T)
	// ClearStatus empties the status; SetStatus copies the status of from
	// into to. Both nil for a kind without status.
	ClearStatus func(T)
	SetStatus   func(to, from T)
	// Validate, ValidateUpdate and ValidateStatusUpdate validate.
	Validate             func(T) field.ErrorList
	ValidateUpdate       func(obj, old T) field.ErrorList
	ValidateStatusUpdate func(obj, old T) field.ErrorList
}

// SpecStatusStrategy is the strategy of a SpecStatusKind: generation 1 on
// create and bumped when the spec changes; the status is cleared on create
// and kept on update.
type SpecStatusStrategy[T interface {
	runtime.Object
	metav1.Object
}] struct {
	Strategy
	Kind SpecStatusKind[T]
}

// NewSpecStatus returns the main strategy of kind.
func NewSpecStatus[T interface {
	runtime.Object
	metav1.Object
}](typer runtime.ObjectTyper, kind SpecStatusKind[T]) SpecStatusStrategy[T] {
	s := SpecStatusStrategy[T]{Strategy: New(typer, false), Kind: kind}
	if kind.ClearStatus != nil {
		s.Reset = Reset(kind.APIVersion, "status")
	}
	return s
}

// PrepareForCreate sets generation 1 and clears the status.
func (s SpecStatusStrategy[T]) PrepareForCreate(_ context.Context, obj runtime.Object) {
	o := obj.(T)
	o.SetGeneration(1)
	if s.Kind.ClearStatus != nil {
		s.Kind.ClearStatus(o)
	}
}

// PrepareForUpdate keeps the stored status and bumps the generation when
// the spec changed.
func (s SpecStatusStrategy[T]) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	n, o := obj.(T), old.(T)
	if s.Kind.SetStatus != nil {
		s.Kind.SetStatus(n, o)
	}
	if !apiequality.Semantic.DeepEqual(s.Kind.Spec(n), s.Kind.Spec(o)) {
		n.SetGeneration(o.GetGeneration() + 1)
	}
}

// Validate validates a new object.
func (s SpecStatusStrategy[T]) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return s.Kind.Validate(obj.(T))
}

// ValidateUpdate validates an update.
func (s SpecStatusStrategy[T]) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return s.Kind.ValidateUpdate(obj.(T), old.(T))
}

// SpecStatusStatusStrategy is the /status strategy of a SpecStatusKind:
// only the status changes.
type SpecStatusStatusStrategy[T interface {
	runtime.Object
	metav1.Object
}] struct {
	SpecStatusStrategy[T]
}

// NewSpecStatusStatus returns the /status strategy of kind.
func NewSpecStatusStatus[T interface {
	runtime.Object
	metav1.Object
}](typer runtime.ObjectTyper, kind SpecStatusKind[T]) SpecStatusStatusStrategy[T] {
	s := SpecStatusStatusStrategy[T]{NewSpecStatus(typer, kind)}
	s.Reset = Reset(kind.APIVersion, "metadata", "spec")
	return s
}

// PrepareForUpdate keeps the stored spec and metadata.
func (s SpecStatusStatusStrategy[T]) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	n, o := obj.(T), old.(T)
	s.Kind.SetSpec(n, o)
	resetMetaForStatus(n, o)
}

// ValidateUpdate validates the status.
func (s SpecStatusStatusStrategy[T]) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return s.Kind.ValidateStatusUpdate(obj.(T), old.(T))
}

// resetMetaForStatus keeps what a /status write may not change of the
// metadata (as metav1.ResetObjectMetaForStatus, through the accessor).
func resetMetaForStatus(n, o metav1.Object) {
	n.SetDeletionTimestamp(o.GetDeletionTimestamp())
	n.SetGeneration(o.GetGeneration())
	n.SetSelfLink(o.GetSelfLink())
	n.SetLabels(o.GetLabels())
	n.SetAnnotations(o.GetAnnotations())
	n.SetFinalizers(o.GetFinalizers())
	n.SetOwnerReferences(o.GetOwnerReferences())
}
