// Package base holds the parts every berth resource strategy shares: the
// scope and name generation, the default answers of the optional strategy
// methods, field-selector attributes and predicates, and a table convertor
// built from column definitions and a row function.
package base

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/names"
)

// Strategy is embedded by every resource strategy. It answers ObjectKinds
// (through the typer), GenerateName, NamespaceScoped, and the optional
// strategy methods most resources answer the same way: no create on
// update (unless CreateOnUpdate), unconditional updates allowed (unless
// ConditionalUpdate), no warnings, nothing to canonicalize.
type Strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	// Namespaced reports whether objects live in a namespace.
	Namespaced bool
	// CreateOnUpdate allows a PUT to create a missing object (services,
	// leases, events and RBAC objects upstream).
	CreateOnUpdate bool
	// ConditionalUpdate refuses an update that names no resourceVersion
	// (runtime classes, volume attachments, APIServices… upstream).
	ConditionalUpdate bool
	// Reset are the fields every write resets (see GetResetFields).
	Reset ResetFields
}

// New returns a base strategy using typer (berth's scheme) and the simple
// random-suffix name generator.
func New(typer runtime.ObjectTyper, namespaced bool) Strategy {
	return Strategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator, Namespaced: namespaced}
}

// NamespaceScoped reports whether objects live in a namespace.
func (s Strategy) NamespaceScoped() bool { return s.Namespaced }

// AllowCreateOnUpdate reports whether a PUT may create the object.
func (s Strategy) AllowCreateOnUpdate(context.Context) bool { return s.CreateOnUpdate }

// AllowUnconditionalUpdate allows updates without a resourceVersion,
// unless ConditionalUpdate.
func (s Strategy) AllowUnconditionalUpdate(context.Context) bool { return !s.ConditionalUpdate }

// WarningsOnCreate returns no warnings.
func (Strategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

// WarningsOnUpdate returns no warnings.
func (Strategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// Canonicalize leaves the object as it is.
func (Strategy) Canonicalize(runtime.Object) {}

// FieldsFunc returns the selectable fields of an object.
type FieldsFunc func(obj runtime.Object) fields.Set

// Attrs returns a storage.AttrFunc giving an object's labels and the
// fields fieldsOf selects.
func Attrs(fieldsOf FieldsFunc) storage.AttrFunc {
	return func(obj runtime.Object) (labels.Set, fields.Set, error) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, nil, fmt.Errorf("not an object with metadata: %T", obj)
		}
		return labels.Set(m.GetLabels()), fieldsOf(obj), nil
	}
}

// Predicate returns the storage predicate matching label and field with
// attrs; indexFields names the fields the watch cache indexes.
func Predicate(attrs storage.AttrFunc, indexFields ...string) func(labels.Selector, fields.Selector) storage.SelectionPredicate {
	return func(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
		return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: attrs, IndexFields: indexFields}
	}
}
