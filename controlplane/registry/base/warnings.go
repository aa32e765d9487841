package base

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth/internal/api/validation"
)

// PodSpecWarnings returns the warnings of the pod spec an object of a
// workload kind carries (spec finds it, nil when there is none); path
// names it in the messages ("spec.template.spec").
func PodSpecWarnings[T Object](path string, spec func(T) *v1.PodSpec) func(T) []string {
	p := field.NewPath(path)
	return func(obj T) []string {
		s := spec(obj)
		if s == nil {
			return nil
		}
		return validation.WarningsForPodSpec(s, p)
	}
}

// WithPodNameWarning adds, to warn's warnings, one about a name that is
// not a DNS label, for kinds whose pods' names and hostnames derive from
// their own.
func WithPodNameWarning[T Object](warn func(T) []string) func(T) []string {
	return func(obj T) []string {
		var warnings []string
		if msgs := utilvalidation.IsDNS1123Label(obj.GetName()); len(msgs) != 0 {
			warnings = append(warnings, fmt.Sprintf("metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: %v", msgs))
		}
		return append(warnings, warn(obj)...)
	}
}

// WhenChanged returns warn's warnings of an update that changed what of
// returns, none for any other update.
func WhenChanged[T Object](of func(T) any, warn func(T) []string) func(obj, old T) []string {
	return func(obj, old T) []string {
		if apiequality.Semantic.DeepEqual(of(obj), of(old)) {
			return nil
		}
		return warn(obj)
	}
}

// Generation is what WhenChanged compares to warn about an update that
// bumped the generation.
func Generation[T Object](obj T) any { return obj.GetGeneration() }
