package flowcontrol

import (
	"strconv"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"berth/internal/api/defaults"
)

// object is a FlowSchema or a PriorityLevelConfiguration.
type object interface {
	comparable
	runtime.Object
	metav1.Object
}

// verb is what the ensurer does to one object.
type verb string

const (
	create verb = "create"
	update verb = "update"
	remove verb = "delete"
)

// step is one planned write.
type step[T object] struct {
	verb verb
	obj  T
}

// kindOps are the kind-specific parts of planning.
type kindOps[T object] struct {
	copy func(T) T
	// specEqual reports whether have's spec is what want (a bootstrap
	// object, not yet defaulted) asks for.
	specEqual func(want, have T) bool
	// withSpec returns a copy of into with the spec of from.
	withSpec func(into, from T) T
}

// plan decides, as upstream's bootstrap-configuration ensurer, what to
// write so the cluster holds the bootstrap objects: a missing object is
// created; a mandatory one always gets its bootstrap spec back; a suggested
// one only while it is auto-updated (annotation
// apf.kubernetes.io/autoupdate-spec "true", or absent on an object never
// changed since creation, generation 1), and its annotation records the
// decision; an object no longer in the bootstrap set is deleted if it is
// auto-updated.
func plan[T object](current map[string]T, mandatory, suggested []T, ops kindOps[T]) []step[T] {
	var steps []step[T]
	wanted := map[string]bool{}
	ensure := func(boot T, always bool) {
		wanted[boot.GetName()] = true
		have, ok := current[boot.GetName()]
		if !ok {
			steps = append(steps, step[T]{create, ops.copy(boot)})
			return
		}
		auto := always || autoUpdate(have)
		annotate := !annotated(have, auto)
		respec := auto && !ops.specEqual(boot, have)
		if !annotate && !respec {
			return
		}
		revised := ops.copy(have)
		if respec {
			revised = ops.withSpec(have, boot)
		}
		if annotate {
			a := map[string]string{}
			for k, v := range revised.GetAnnotations() {
				a[k] = v
			}
			a[flowcontrolv1.AutoUpdateAnnotationKey] = strconv.FormatBool(auto)
			revised.SetAnnotations(a)
		}
		steps = append(steps, step[T]{update, revised})
	}
	for _, b := range suggested {
		ensure(b, false)
	}
	for _, b := range mandatory {
		ensure(b, true)
	}
	for name, have := range current {
		if wanted[name] {
			continue
		}
		if v, err := strconv.ParseBool(have.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey]); err == nil && v {
			steps = append(steps, step[T]{remove, have})
		}
	}
	return steps
}

// autoUpdate reports whether a suggested object follows the bootstrap spec.
func autoUpdate(o metav1.Object) bool {
	if v, err := strconv.ParseBool(o.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey]); err == nil {
		return v
	}
	return o.GetGeneration() == 1
}

// annotated reports whether o's annotation already says auto.
func annotated(o metav1.Object, auto bool) bool {
	v, err := strconv.ParseBool(o.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey])
	return err == nil && v == auto
}

var flowSchemaOps = kindOps[*flowcontrolv1.FlowSchema]{
	copy: (*flowcontrolv1.FlowSchema).DeepCopy,
	specEqual: func(want, have *flowcontrolv1.FlowSchema) bool {
		w := want.DeepCopy()
		defaults.FlowSchema(w)
		return apiequality.Semantic.DeepEqual(w.Spec, have.Spec)
	},
	withSpec: func(into, from *flowcontrolv1.FlowSchema) *flowcontrolv1.FlowSchema {
		c := into.DeepCopy()
		c.Spec = *from.Spec.DeepCopy()
		return c
	},
}

var priorityLevelOps = kindOps[*flowcontrolv1.PriorityLevelConfiguration]{
	copy: (*flowcontrolv1.PriorityLevelConfiguration).DeepCopy,
	specEqual: func(want, have *flowcontrolv1.PriorityLevelConfiguration) bool {
		w := want.DeepCopy()
		defaults.PriorityLevelConfiguration(w)
		// The exempt level's concurrency settings are the administrator's.
		if w.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt {
			if have.Spec.Exempt == nil || w.Spec.Exempt == nil {
				return false
			}
			w.Spec.Exempt.NominalConcurrencyShares = have.Spec.Exempt.NominalConcurrencyShares
			w.Spec.Exempt.LendablePercent = have.Spec.Exempt.LendablePercent
		}
		return apiequality.Semantic.DeepEqual(w.Spec, have.Spec)
	},
	withSpec: func(into, from *flowcontrolv1.PriorityLevelConfiguration) *flowcontrolv1.PriorityLevelConfiguration {
		c := into.DeepCopy()
		c.Spec = *from.Spec.DeepCopy()
		return c
	},
}
