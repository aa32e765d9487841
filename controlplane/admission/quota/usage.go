// Package quota computes ResourceQuota usage: what one object adds
// (Usage), whether a quota applies to it (Matches), and resource-list
// arithmetic with upstream's formatting. Controller keeps quotas'
// status.used in step with the objects that exist.
package quota

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	resourcehelper "k8s.io/component-helpers/resource"
)

// ObjectCountName is the generic object-count resource of a group/resource:
// "count/pods", "count/deployments.apps".
func ObjectCountName(gr schema.GroupResource) corev1.ResourceName {
	if gr.Group == "" {
		return corev1.ResourceName("count/" + gr.Resource)
	}
	return corev1.ResourceName("count/" + gr.Resource + "." + gr.Group)
}

// legacyCounts are the core resources with a bare object-count name.
var legacyCounts = map[string]corev1.ResourceName{
	"pods":                   corev1.ResourcePods,
	"services":               corev1.ResourceServices,
	"configmaps":             corev1.ResourceConfigMaps,
	"secrets":                corev1.ResourceSecrets,
	"persistentvolumeclaims": corev1.ResourcePersistentVolumeClaims,
	"replicationcontrollers": corev1.ResourceReplicationControllers,
	"resourcequotas":         corev1.ResourceQuotas,
}

// Usage is what creating obj (of group/resource gr) adds to a namespace's
// usage: one object count (both the generic count/… name and, for core
// kinds, the legacy name), and for pods their compute requests and limits,
// for PVCs their storage request, for services their load balancers and
// node ports.
func Usage(gr schema.GroupResource, obj runtime.Object) corev1.ResourceList {
	out := corev1.ResourceList{ObjectCountName(gr): *resource.NewQuantity(1, resource.DecimalSI)}
	if gr.Group == "" {
		if name, ok := legacyCounts[gr.Resource]; ok {
			out[name] = *resource.NewQuantity(1, resource.DecimalSI)
		}
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		if gr.Group == "" && gr.Resource == "pods" {
			return PodUsage(o)
		}
	case *corev1.PersistentVolumeClaim:
		if q, ok := o.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
			out[corev1.ResourceRequestsStorage] = q.DeepCopy()
		}
	case *corev1.Service:
		switch o.Spec.Type {
		case corev1.ServiceTypeLoadBalancer:
			out[corev1.ResourceServicesLoadBalancers] = *resource.NewQuantity(1, resource.DecimalSI)
			out[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(int64(len(o.Spec.Ports)), resource.DecimalSI)
		case corev1.ServiceTypeNodePort:
			out[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(int64(len(o.Spec.Ports)), resource.DecimalSI)
		}
	}
	return out
}

// ChargedOnUpdate reports whether an update of gr's objects can change
// their usage, and is charged, as upstream's evaluators: Services (type,
// ports) and PersistentVolumeClaims (a resize).
func ChargedOnUpdate(gr schema.GroupResource) bool {
	return gr.Group == "" && (gr.Resource == "services" || gr.Resource == "persistentvolumeclaims")
}

// SubtractNonNegative is a - b keeping only what stays above zero: what an
// update adds beyond what the object already used.
func SubtractNonNegative(a, b corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range a {
		d := q.DeepCopy()
		if old, ok := b[name]; ok {
			d.Sub(old)
		}
		if d.Sign() > 0 {
			out[name] = d
		}
	}
	return out
}

// PodUsage is a pod's usage: nothing once it has terminated; otherwise one
// pod, and its effective requests (init containers' peak, sidecars and
// overhead counted as the scheduler does) and limits, under both the
// "requests.cpu" and bare "cpu" names.
func PodUsage(pod *corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{}
	if IsTerminal(pod) {
		return out
	}
	one := *resource.NewQuantity(1, resource.DecimalSI)
	out[corev1.ResourcePods] = one.DeepCopy()
	out[ObjectCountName(schema.GroupResource{Resource: "pods"})] = one.DeepCopy()
	req := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	lim := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
	for name, q := range req {
		switch name {
		case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
			out[name] = q.DeepCopy()
			out[corev1.ResourceName("requests."+string(name))] = q.DeepCopy()
		default:
			if !strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) && strings.Contains(string(name), "/") {
				out[corev1.ResourceName("requests."+string(name))] = q.DeepCopy()
			}
		}
	}
	for name, q := range lim {
		switch name {
		case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
			out[corev1.ResourceName("limits."+string(name))] = q.DeepCopy()
		}
	}
	return out
}

// IsTerminal reports whether the pod no longer uses quota.
func IsTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// Matches reports whether quota q applies to obj: an unscoped quota applies
// to everything; scopes and scopeSelector restrict it to pods that satisfy
// all of them (Terminating, NotTerminating, BestEffort, NotBestEffort,
// PriorityClass).
func Matches(q *corev1.ResourceQuota, obj runtime.Object) bool {
	var scopes []corev1.ScopedResourceSelectorRequirement
	for _, s := range q.Spec.Scopes {
		scopes = append(scopes, corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists})
	}
	if q.Spec.ScopeSelector != nil {
		scopes = append(scopes, q.Spec.ScopeSelector.MatchExpressions...)
	}
	if len(scopes) == 0 {
		return true
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return false
	}
	for _, s := range scopes {
		if !scopeMatches(s, pod) {
			return false
		}
	}
	return true
}

func scopeMatches(s corev1.ScopedResourceSelectorRequirement, pod *corev1.Pod) bool {
	switch s.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds >= 0
	case corev1.ResourceQuotaScopeNotTerminating:
		return pod.Spec.ActiveDeadlineSeconds == nil
	case corev1.ResourceQuotaScopeBestEffort:
		return isBestEffort(pod)
	case corev1.ResourceQuotaScopeNotBestEffort:
		return !isBestEffort(pod)
	case corev1.ResourceQuotaScopePriorityClass:
		pc := pod.Spec.PriorityClassName
		switch s.Operator {
		case corev1.ScopeSelectorOpExists:
			return pc != ""
		case corev1.ScopeSelectorOpDoesNotExist:
			return pc == ""
		case corev1.ScopeSelectorOpIn, corev1.ScopeSelectorOpNotIn:
			in := false
			for _, v := range s.Values {
				in = in || v == pc
			}
			return in == (s.Operator == corev1.ScopeSelectorOpIn)
		}
	}
	return false
}

func isBestEffort(pod *corev1.Pod) bool {
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			for _, l := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
				if _, ok := l[corev1.ResourceCPU]; ok {
					return false
				}
				if _, ok := l[corev1.ResourceMemory]; ok {
					return false
				}
			}
		}
	}
	return true
}

// Mask keeps only the names listed.
func Mask(list corev1.ResourceList, names []corev1.ResourceName) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, n := range names {
		if q, ok := list[n]; ok {
			out[n] = q.DeepCopy()
		}
	}
	return out
}

// Add returns a+b.
func Add(a, b corev1.ResourceList) corev1.ResourceList {
	out := a.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	for k, v := range b {
		q := out[k]
		q.Add(v)
		out[k] = q
	}
	return out
}

// Names returns the list's names, sorted.
func Names(list corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(list))
	for k := range list {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Intersect returns the names present in both lists, sorted.
func Intersect(a, b corev1.ResourceList) []corev1.ResourceName {
	var out []corev1.ResourceName
	for _, k := range Names(a) {
		if _, ok := b[k]; ok {
			out = append(out, k)
		}
	}
	return out
}

// PrettyPrint renders "name=value" pairs sorted by name, comma-joined, as
// upstream's quota messages do.
func PrettyPrint(list corev1.ResourceList) string {
	parts := make([]string, 0, len(list))
	for _, k := range Names(list) {
		q := list[k]
		parts = append(parts, fmt.Sprintf("%v=%v", k, q.String()))
	}
	return strings.Join(parts, ",")
}

// Producible lists the usage names objects of gr can produce.
func Producible(gr schema.GroupResource) []corev1.ResourceName {
	out := []corev1.ResourceName{ObjectCountName(gr)}
	if gr.Group == "" {
		if n, ok := legacyCounts[gr.Resource]; ok {
			out = append(out, n)
		}
		switch gr.Resource {
		case "persistentvolumeclaims":
			out = append(out, corev1.ResourceRequestsStorage)
		case "services":
			out = append(out, corev1.ResourceServicesLoadBalancers, corev1.ResourceServicesNodePorts)
		}
	}
	return out
}
