// Package pod is the registry strategy for core/v1 pods: create, update and
// graceful-delete semantics, the pods/status strategy, field selectors with
// the spec.nodeName index, and the server-side table (kubectl get pods).
package pod

import (
	"context"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/client-go/tools/cache"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

// Strategy is the pods strategy.
type Strategy struct{ base.Strategy }

var (
	_ rest.RESTCreateStrategy         = Strategy{}
	_ rest.RESTUpdateStrategy         = Strategy{}
	_ rest.RESTDeleteStrategy         = Strategy{}
	_ rest.RESTGracefulDeleteStrategy = Strategy{}
)

// NewStrategy returns the pods strategy; typer is berth's scheme.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	s := Strategy{base.New(typer, true)}
	s.Reset = base.Reset("v1", "status")
	return s
}

// PrepareForCreate clears the status (phase Pending, QoS class computed from
// the spec, PodScheduled=False/SchedulingGated when the pod has scheduling
// gates) and sets metadata.generation to 1.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	pod := obj.(*v1.Pod)
	pod.Status = v1.PodStatus{Phase: v1.PodPending, QOSClass: QOSClass(pod)}
	if len(pod.Spec.SchedulingGates) > 0 {
		pod.Status.Conditions = []v1.PodCondition{{
			Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonSchedulingGated,
			Message: "Scheduling is blocked due to non-empty scheduling gates",
		}}
	}
	pod.Generation = 1
}

// PrepareForUpdate keeps the stored status (status changes go through
// pods/status) and bumps metadata.generation when the spec changed.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newPod, oldPod := obj.(*v1.Pod), old.(*v1.Pod)
	newPod.Status = oldPod.Status
	if !apiequality.Semantic.DeepEqual(newPod.Spec, oldPod.Spec) {
		newPod.Generation = oldPod.Generation + 1
	}
}

// WarningsOnCreate returns upstream's warnings for a new pod (negative
// grace period, deprecated node labels, duplicate ports). Updates get none,
// as upstream: pods are rewritten often and rarely by hand.
func (Strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	return validation.WarningsForPod(obj.(*v1.Pod))
}

// Validate validates a new pod.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidatePod(obj.(*v1.Pod))
}

// ValidateUpdate validates a pod update (only images, tolerations,
// activeDeadlineSeconds… may change).
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidatePodUpdate(obj.(*v1.Pod), old.(*v1.Pod))
}

// CheckGracefulDelete sets the grace period of a pod deletion as upstream:
// the request's value, else the pod's terminationGracePeriodSeconds; zero
// (immediate) for pods not bound to a node or already terminated; a
// negative value becomes 1.
func (Strategy) CheckGracefulDelete(_ context.Context, obj runtime.Object, options *metav1.DeleteOptions) bool {
	if options == nil {
		return false
	}
	pod := obj.(*v1.Pod)
	period := int64(0)
	if options.GracePeriodSeconds != nil {
		period = *options.GracePeriodSeconds
	} else if pod.Spec.TerminationGracePeriodSeconds != nil {
		period = *pod.Spec.TerminationGracePeriodSeconds
	}
	if pod.Spec.NodeName == "" {
		period = 0
	}
	if pod.Status.Phase == v1.PodFailed || pod.Status.Phase == v1.PodSucceeded {
		period = 0
	}
	if period < 0 {
		period = 1
	}
	options.GracePeriodSeconds = &period
	return true
}

// StatusStrategy is the pods/status strategy: only status (and metadata) may
// change.
type StatusStrategy struct{ Strategy }

// NewStatusStrategy returns the pods/status strategy.
func NewStatusStrategy(typer runtime.ObjectTyper) StatusStrategy {
	s := StatusStrategy{NewStrategy(typer)}
	s.Reset = base.Reset("v1", "spec", "metadata.deletionTimestamp", "metadata.ownerReferences")
	return s
}

// PrepareForUpdate keeps the stored spec, deletion timestamp and owner
// references, and backfills the immutable QoS class.
func (StatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newPod, oldPod := obj.(*v1.Pod), old.(*v1.Pod)
	newPod.Spec = oldPod.Spec
	newPod.DeletionTimestamp = nil
	newPod.OwnerReferences = oldPod.OwnerReferences
	if newPod.Status.QOSClass == "" {
		newPod.Status.QOSClass = oldPod.Status.QOSClass
	}
	keepObservedGenerations(&newPod.Status, &oldPod.Status)
	SyncIPs(&newPod.Status)
}

// keepObservedGenerations keeps the stored observedGeneration of the status
// and of each condition when a writer leaves them 0 (older clients drop
// them), matching conditions of the same type in order.
func keepObservedGenerations(s, old *v1.PodStatus) {
	if s.ObservedGeneration == 0 {
		s.ObservedGeneration = old.ObservedGeneration
	}
	oldGens := map[v1.PodConditionType][]int64{}
	for _, c := range old.Conditions {
		oldGens[c.Type] = append(oldGens[c.Type], c.ObservedGeneration)
	}
	for i := range s.Conditions {
		c := &s.Conditions[i]
		gens := oldGens[c.Type]
		prev := int64(0)
		if len(gens) > 0 {
			prev, oldGens[c.Type] = gens[0], gens[1:]
		}
		if c.ObservedGeneration == 0 {
			c.ObservedGeneration = prev
		}
	}
}

// SyncIPs keeps status.podIP and status.podIPs (and hostIP/hostIPs)
// consistent when a writer set only one of them, as upstream's v1
// conversion does: the single field is the first of the list.
func SyncIPs(s *v1.PodStatus) {
	if len(s.PodIPs) == 0 && s.PodIP != "" {
		s.PodIPs = []v1.PodIP{{IP: s.PodIP}}
	}
	if s.PodIP == "" && len(s.PodIPs) > 0 {
		s.PodIP = s.PodIPs[0].IP
	}
	if len(s.HostIPs) == 0 && s.HostIP != "" {
		s.HostIPs = []v1.HostIP{{IP: s.HostIP}}
	}
	if s.HostIP == "" && len(s.HostIPs) > 0 {
		s.HostIP = s.HostIPs[0].IP
	}
}

// ValidateUpdate validates a status update.
func (StatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidatePodStatusUpdate(obj.(*v1.Pod), old.(*v1.Pod))
}

// GetAttrs returns a pod's labels and selectable fields.
var GetAttrs = base.Attrs(func(obj runtime.Object) fields.Set { return fieldsets.Pod(obj.(*v1.Pod)) })

// Predicate matches pods against label and field selectors; the watch cache
// indexes spec.nodeName.
func Predicate(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return base.Predicate(GetAttrs, "spec.nodeName")(label, field)
}

// NodeNameIndexFunc is the spec.nodeName value of a pod, for the watch
// cache's trigger functions.
func NodeNameIndexFunc(obj runtime.Object) string {
	return obj.(*v1.Pod).Spec.NodeName
}

// TriggerFuncs lets the watch cache deliver events for a spec.nodeName
// selector only to the watchers of that node.
func TriggerFuncs() storage.IndexerFuncs {
	return storage.IndexerFuncs{"spec.nodeName": NodeNameIndexFunc}
}

// Indexers indexes cached pods by spec.nodeName, so lists with that field
// selector are served from the index.
func Indexers() *cache.Indexers {
	return &cache.Indexers{
		storage.FieldIndex("spec.nodeName"): func(obj interface{}) ([]string, error) {
			pod, ok := obj.(*v1.Pod)
			if !ok {
				return nil, nil
			}
			return []string{pod.Spec.NodeName}, nil
		},
	}
}
