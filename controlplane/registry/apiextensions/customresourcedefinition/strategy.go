// Package customresourcedefinition is the registry strategy for
// apiextensions.k8s.io/v1 CustomResourceDefinitions (cluster-scoped, with
// /status) and their table (NAME CREATED AT).
//
// berth stores and serves the v1 type; the rules are upstream's own
// (k8s.io/apiextensions-apiserver/pkg/registry/customresourcedefinition,
// written over the internal type): each strategy call converts to the
// internal type, runs upstream's strategy, and converts the result back, so
// defaulting of status, generation, stored versions and every validation
// message are upstream's.
package customresourcedefinition

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	upstream "k8s.io/apiextensions-apiserver/pkg/registry/customresourcedefinition"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"berth/controlplane/registry/base"
)

// internalScheme converts between the v1 and internal CRD types.
var internalScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	install.Install(s)
	return s
}()

// ToInternal converts a v1 CRD to the internal type upstream's libraries
// (validation, strategies) take.
func ToInternal(in *apiextensionsv1.CustomResourceDefinition) (*apiextensions.CustomResourceDefinition, error) {
	out := &apiextensions.CustomResourceDefinition{}
	if err := internalScheme.Convert(in, out, nil); err != nil {
		return nil, fmt.Errorf("converting CustomResourceDefinition %s to the internal type: %w", in.Name, err)
	}
	return out, nil
}

// fromInternal writes in back into out (a v1 CRD).
func fromInternal(in *apiextensions.CustomResourceDefinition, out *apiextensionsv1.CustomResourceDefinition) error {
	converted := &apiextensionsv1.CustomResourceDefinition{}
	if err := internalScheme.Convert(in, converted, nil); err != nil {
		return fmt.Errorf("converting CustomResourceDefinition %s from the internal type: %w", in.Name, err)
	}
	converted.TypeMeta = out.TypeMeta
	*out = *converted
	return nil
}

// inner is what upstream's strategies implement over the internal type.
type inner interface {
	PrepareForUpdate(ctx context.Context, obj, old runtime.Object)
	ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList
	WarningsOnUpdate(ctx context.Context, obj, old runtime.Object) []string
	AllowUnconditionalUpdate(ctx context.Context) bool
	GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set
}

// innerCreate is what upstream's main strategy adds.
type innerCreate interface {
	inner
	PrepareForCreate(ctx context.Context, obj runtime.Object)
	Validate(ctx context.Context, obj runtime.Object) field.ErrorList
	WarningsOnCreate(ctx context.Context, obj runtime.Object) []string
}

// Strategy is the customresourcedefinitions strategy; StatusStrategy the
// /status one.
type Strategy struct {
	base.Strategy
	inner innerCreate
}

// NewStrategy returns the customresourcedefinitions strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	return Strategy{Strategy: base.New(typer, false), inner: upstream.NewStrategy(internalScheme)}
}

// convertPair converts obj and old; a conversion failure is a bug of the
// scheme, reported as a field error by the callers that can.
func convertPair(obj, old runtime.Object) (*apiextensions.CustomResourceDefinition, *apiextensions.CustomResourceDefinition, error) {
	n, err := ToInternal(obj.(*apiextensionsv1.CustomResourceDefinition))
	if err != nil {
		return nil, nil, err
	}
	o, err := ToInternal(old.(*apiextensionsv1.CustomResourceDefinition))
	if err != nil {
		return nil, nil, err
	}
	return n, o, nil
}

// PrepareForCreate clears status, sets generation 1 and the stored version.
func (s Strategy) PrepareForCreate(ctx context.Context, obj runtime.Object) {
	crd := obj.(*apiextensionsv1.CustomResourceDefinition)
	in, err := ToInternal(crd)
	if err != nil {
		return // Validate reports it
	}
	s.inner.PrepareForCreate(ctx, in)
	_ = fromInternal(in, crd)
}

// PrepareForUpdate keeps status and bumps generation on spec changes.
func (s Strategy) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	prepareForUpdate(ctx, s.inner, obj, old)
}

func prepareForUpdate(ctx context.Context, st inner, obj, old runtime.Object) {
	n, o, err := convertPair(obj, old)
	if err != nil {
		return
	}
	st.PrepareForUpdate(ctx, n, o)
	_ = fromInternal(n, obj.(*apiextensionsv1.CustomResourceDefinition))
}

// Validate validates a new CRD with upstream's rules.
func (s Strategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	in, err := ToInternal(obj.(*apiextensionsv1.CustomResourceDefinition))
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return s.inner.Validate(ctx, in)
}

// ValidateUpdate validates a CRD update with upstream's rules.
func (s Strategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return validateUpdate(ctx, s.inner, obj, old)
}

func validateUpdate(ctx context.Context, st inner, obj, old runtime.Object) field.ErrorList {
	n, o, err := convertPair(obj, old)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return st.ValidateUpdate(ctx, n, o)
}

// WarningsOnCreate returns upstream's warnings (unrecognized formats, ...).
func (s Strategy) WarningsOnCreate(ctx context.Context, obj runtime.Object) []string {
	in, err := ToInternal(obj.(*apiextensionsv1.CustomResourceDefinition))
	if err != nil {
		return nil
	}
	return s.inner.WarningsOnCreate(ctx, in)
}

// WarningsOnUpdate returns upstream's warnings.
func (s Strategy) WarningsOnUpdate(ctx context.Context, obj, old runtime.Object) []string {
	n, o, err := convertPair(obj, old)
	if err != nil {
		return nil
	}
	return s.inner.WarningsOnUpdate(ctx, n, o)
}

// AllowUnconditionalUpdate is upstream's answer.
func (s Strategy) AllowUnconditionalUpdate(ctx context.Context) bool {
	return s.inner.AllowUnconditionalUpdate(ctx)
}

// GetResetFields: status is reset by writes to the main resource.
func (s Strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return servedOnly(s.inner.GetResetFields())
}

// servedOnly keeps upstream's reset fields of the served version, v1
// (upstream also lists v1beta1, which berth does not serve).
func servedOnly(in map[fieldpath.APIVersion]*fieldpath.Set) map[fieldpath.APIVersion]*fieldpath.Set {
	v1 := fieldpath.APIVersion(apiextensionsv1.SchemeGroupVersion.String())
	return map[fieldpath.APIVersion]*fieldpath.Set{v1: in[v1]}
}

// StatusStrategy is the customresourcedefinitions/status strategy.
type StatusStrategy struct {
	Strategy
	status inner
}

// NewStatusStrategy returns the /status strategy: spec is kept.
func NewStatusStrategy(typer runtime.ObjectTyper) StatusStrategy {
	return StatusStrategy{Strategy: NewStrategy(typer), status: upstream.NewStatusStrategy(internalScheme)}
}

// PrepareForUpdate keeps the old spec.
func (s StatusStrategy) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	prepareForUpdate(ctx, s.status, obj, old)
}

// ValidateUpdate validates the status update.
func (s StatusStrategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return validateUpdate(ctx, s.status, obj, old)
}

// WarningsOnUpdate returns none.
func (StatusStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// AllowUnconditionalUpdate is upstream's answer for /status.
func (s StatusStrategy) AllowUnconditionalUpdate(ctx context.Context) bool {
	return s.status.AllowUnconditionalUpdate(ctx)
}

// GetResetFields: spec is reset by writes to /status.
func (s StatusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return servedOnly(s.status.GetResetFields())
}

// GetAttrs returns a CRD's labels and metadata fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&o.(*apiextensionsv1.CustomResourceDefinition).ObjectMeta, false)
})

// Predicate matches CRDs against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints NAME CREATED AT, as upstream.
var Table = base.Table[*apiextensionsv1.CustomResourceDefinition]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
	},
	Row: func(crd *apiextensionsv1.CustomResourceDefinition, _ time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return []interface{}{crd.Name, crd.CreationTimestamp.UTC().Format(time.RFC3339)}, nil
	},
}
