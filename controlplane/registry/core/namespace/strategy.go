// Package namespace is the registry strategy for core/v1 namespaces: the
// kubernetes finalizer and Active phase on create, spec and status kept
// apart (/status and /finalize), the metadata-name label, field selectors
// and the table (NAME STATUS AGE).
package namespace

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

// Strategy is the namespaces strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the namespaces strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	s := Strategy{base.New(typer, false)}
	s.Reset = base.Reset("v1", "status")
	return s
}

// PrepareForCreate sets phase Active and makes sure the "kubernetes"
// finalizer is in spec.finalizers.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	ns := obj.(*v1.Namespace)
	ns.Status = v1.NamespaceStatus{Phase: v1.NamespaceActive}
	for _, f := range ns.Spec.Finalizers {
		if f == v1.FinalizerKubernetes {
			return
		}
	}
	ns.Spec.Finalizers = append(ns.Spec.Finalizers, v1.FinalizerKubernetes)
}

// PrepareForUpdate keeps spec.finalizers (changed only through /finalize)
// and the status.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	n, o := obj.(*v1.Namespace), old.(*v1.Namespace)
	n.Spec.Finalizers = o.Spec.Finalizers
	n.Status = o.Status
}

// Validate validates a new namespace.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateNamespace(obj.(*v1.Namespace))
}

// ValidateUpdate validates a namespace update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateNamespaceUpdate(obj.(*v1.Namespace), old.(*v1.Namespace))
}

// Canonicalize keeps the kubernetes.io/metadata.name label equal to the name.
func (Strategy) Canonicalize(obj runtime.Object) {
	ns := obj.(*v1.Namespace)
	if ns.Name == "" {
		return
	}
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[v1.LabelMetadataName] = ns.Name
}

// StatusStrategy is the namespaces/status strategy.
type StatusStrategy struct{ Strategy }

// NewStatusStrategy returns the namespaces/status strategy.
func NewStatusStrategy(typer runtime.ObjectTyper) StatusStrategy {
	s := StatusStrategy{NewStrategy(typer)}
	s.Reset = base.Reset("v1", "spec")
	return s
}

// PrepareForUpdate keeps the spec.
func (StatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*v1.Namespace).Spec = old.(*v1.Namespace).Spec
}

// ValidateUpdate checks the phase against the deletion timestamp.
func (StatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateNamespaceStatusUpdate(obj.(*v1.Namespace), old.(*v1.Namespace))
}

// FinalizeStrategy is the namespaces/finalize strategy: only spec.finalizers
// change.
type FinalizeStrategy struct{ Strategy }

// NewFinalizeStrategy returns the namespaces/finalize strategy.
func NewFinalizeStrategy(typer runtime.ObjectTyper) FinalizeStrategy {
	return FinalizeStrategy{NewStrategy(typer)}
}

// PrepareForUpdate keeps the status.
func (FinalizeStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*v1.Namespace).Status = old.(*v1.Namespace).Status
}

// ValidateUpdate validates the new finalizers.
func (FinalizeStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateNamespaceUpdate(obj.(*v1.Namespace), old.(*v1.Namespace))
}

// GetAttrs returns a namespace's labels and selectable fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Namespace(o.(*v1.Namespace)) })

// Predicate matches namespaces against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints NAME STATUS AGE.
var Table = base.Table[*v1.Namespace]{
	Columns: []metav1.TableColumnDefinition{base.NameColumn,
		base.Col("Status", "The status of the namespace"), base.AgeColumn},
	Row: func(ns *v1.Namespace, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return []interface{}{ns.Name, string(ns.Status.Phase), base.Age(ns.CreationTimestamp, now)}, nil
	},
}
