// Package pod describes core/v1 pods to the registry: create, update and
// graceful-delete semantics, the pods/status strategy, field selectors with
// the spec.nodeName index, and the server-side table (kubectl get pods).
package pod

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/client-go/tools/cache"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

// Kind describes pods: status changes go through pods/status; updates get
// no warnings, as upstream (pods are rewritten often and rarely by hand).
var Kind = base.Kind[*v1.Pod]{
	APIVersion: "v1", Namespaced: true,
	Status:              true,
	SpecGeneration:      true,
	NewStatus:           newStatus,
	PrepareStatusUpdate: prepareStatusUpdate,
	StatusResets:        []string{"spec", "metadata.deletionTimestamp", "metadata.ownerReferences"},
	Validate:            validation.ValidatePod,
	ValidateUpdate:      validation.ValidatePodUpdate, // only images, tolerations, activeDeadlineSeconds… may change
	// negative grace period, deprecated node labels, duplicate ports
	Warnings:             validation.WarningsForPod,
	ValidateStatusUpdate: validation.ValidatePodStatusUpdate,
	Fields:               fieldsets.Pod,
	IndexFields:          []string{"spec.nodeName"},
	Table:                Table,
}

// Strategy is the pods strategy: Kind's, with graceful deletion.
type Strategy struct{ base.Typed[*v1.Pod] }

var _ rest.RESTGracefulDeleteStrategy = Strategy{}

// NewStrategy returns the pods strategy; typer is berth's scheme.
func NewStrategy(typer runtime.ObjectTyper) Strategy { return Strategy{Kind.Strategy(typer)} }

// newStatus is a new pod's status: phase Pending, the QoS class computed
// from the spec, PodScheduled=False/SchedulingGated when the pod has
// scheduling gates.
func newStatus(pod *v1.Pod) {
	pod.Status = v1.PodStatus{Phase: v1.PodPending, QOSClass: QOSClass(pod)}
	if len(pod.Spec.SchedulingGates) > 0 {
		pod.Status.Conditions = []v1.PodCondition{{
			Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonSchedulingGated,
			Message: "Scheduling is blocked due to non-empty scheduling gates",
		}}
	}
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

// prepareStatusUpdate drops, on a pods/status write, a deletion timestamp
// the writer sent (the store keeps the stored one), keeps the stored owner
// references, and backfills the immutable QoS class, the observed
// generations and the single or list form of the IPs.
func prepareStatusUpdate(newPod, oldPod *v1.Pod) {
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
