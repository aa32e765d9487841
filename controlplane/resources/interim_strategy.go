package resources

import (
	"context"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/storage/names"

	"berth/internal/api/validation"
)

// interimStrategy is the stand-in create/update/delete strategy for the
// resources whose strategy package (controlplane/registry/<group>/<resource>,
// engineer C2) does not exist yet. TO BE REPLACED by those packages; it only
// does what every resource needs: metadata validation, generation bumps on
// spec changes, and status kept apart from the main resource (and the
// reverse for the status subresource).
type interimStrategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	namespaced bool
	// status: this is the /status strategy (spec changes are dropped).
	status bool
	// validate / validateUpdate are resource-specific checks, when known.
	validate       func(obj runtime.Object) field.ErrorList
	validateUpdate func(obj, old runtime.Object) field.ErrorList
	// name checks names; default DNS-1123 subdomain.
	name apimachineryvalidation.ValidateNameFunc
}

func newInterimStrategy(typer runtime.ObjectTyper, namespaced bool) *interimStrategy {
	return &interimStrategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator, namespaced: namespaced,
		name: apimachineryvalidation.NameIsDNSSubdomain}
}

// statusStrategy returns the matching /status strategy.
func (s *interimStrategy) statusStrategy() *interimStrategy {
	c := *s
	c.status = true
	return &c
}

func (s *interimStrategy) NamespaceScoped() bool                         { return s.namespaced }
func (s *interimStrategy) AllowCreateOnUpdate(context.Context) bool      { return false }
func (s *interimStrategy) AllowUnconditionalUpdate(context.Context) bool { return true }
func (s *interimStrategy) Canonicalize(runtime.Object)                   {}

func (s *interimStrategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }
func (s *interimStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// PrepareForCreate sets generation 1 on objects with a spec, and the
// "kubernetes" finalizer on namespaces (as upstream's namespace strategy).
func (s *interimStrategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	if _, ok := field_(obj, "Spec"); ok {
		if m, err := meta.Accessor(obj); err == nil {
			m.SetGeneration(1)
		}
	}
	if ns, ok := obj.(*corev1.Namespace); ok {
		ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
		if !hasFinalizer(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
			ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
		}
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		pod.Status = corev1.PodStatus{Phase: corev1.PodPending}
	}
}

// PrepareForUpdate keeps the part the request may not change: the status
// (main resource) or the spec (status subresource); generation follows spec.
func (s *interimStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	keep := "Status"
	if s.status {
		keep = "Spec"
	}
	if ov, ok := field_(old, keep); ok {
		if nv, ok := field_(obj, keep); ok && nv.CanSet() {
			nv.Set(ov)
		}
	}
	nm, err1 := meta.Accessor(obj)
	om, err2 := meta.Accessor(old)
	if err1 != nil || err2 != nil {
		return
	}
	nm.SetGeneration(om.GetGeneration())
	if s.status {
		return
	}
	if ns, ok := field_(obj, "Spec"); ok {
		os, _ := field_(old, "Spec")
		if !reflect.DeepEqual(ns.Interface(), os.Interface()) {
			nm.SetGeneration(om.GetGeneration() + 1)
		}
	}
}

// Validate runs the resource's own rules when known (they include the
// metadata's), else the metadata rules.
func (s *interimStrategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	if s.validate != nil {
		return s.validate(obj) // includes metadata
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return apimachineryvalidation.ValidateObjectMetaAccessor(m, s.namespaced, s.name, field.NewPath("metadata"))
}

// ValidateUpdate runs the resource's own update rules when known, else the
// metadata update rules.
func (s *interimStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	if s.validateUpdate != nil {
		return s.validateUpdate(obj, old) // includes metadata
	}
	nm, err1 := meta.Accessor(obj)
	om, err2 := meta.Accessor(old)
	if err1 != nil || err2 != nil {
		return field.ErrorList{field.InternalError(nil, err1)}
	}
	return apimachineryvalidation.ValidateObjectMetaAccessorUpdate(nm, om, field.NewPath("metadata"))
}

// CheckGracefulDelete gives pods bound to a node a grace period (the agent
// completes their deletion); everything else is deleted at once.
func (s *interimStrategy) CheckGracefulDelete(_ context.Context, obj runtime.Object, options *metav1.DeleteOptions) bool {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return false
	}
	if options.GracePeriodSeconds != nil {
		// Explicit grace period: honoured as given (0 = now).
	} else {
		grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
		if pod.Spec.TerminationGracePeriodSeconds != nil {
			grace = *pod.Spec.TerminationGracePeriodSeconds
		}
		options.GracePeriodSeconds = &grace
	}
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		zero := int64(0)
		options.GracePeriodSeconds = &zero
	}
	return true
}

// podValidation wires berth/internal/api/validation's pod rules.
func podValidation(s *interimStrategy) {
	if s.status {
		s.validateUpdate = func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidatePodStatusUpdate(obj.(*corev1.Pod), old.(*corev1.Pod))
		}
		return
	}
	s.validate = func(obj runtime.Object) field.ErrorList { return validation.ValidatePod(obj.(*corev1.Pod)) }
	s.validateUpdate = func(obj, old runtime.Object) field.ErrorList {
		return validation.ValidatePodUpdate(obj.(*corev1.Pod), old.(*corev1.Pod))
	}
}

// field_ returns the named top-level struct field of an object.
func field_(obj runtime.Object, name string) (reflect.Value, bool) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return reflect.Value{}, false
	}
	v = v.Elem()
	if v.Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	f := v.FieldByName(name)
	return f, f.IsValid()
}

func hasFinalizer(list []corev1.FinalizerName, f corev1.FinalizerName) bool {
	for _, x := range list {
		if x == f {
			return true
		}
	}
	return false
}
