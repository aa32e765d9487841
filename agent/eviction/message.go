package eviction

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"berth/agent/node"
	"berth/agent/source"
)

// Reason is the reason of an evicted pod's status and event, upstream's.
const Reason = "Evicted"

// Annotation keys of the Evicted event, upstream's.
const (
	OffendingContainersKey      = "offending_containers"
	OffendingContainersUsageKey = "offending_containers_usage"
	StarvedResourceKey          = "starved_resource"
)

// Message is the evicted pod's status message and the Evicted event's
// annotations, in the kubelet's words: the resource the node was low on,
// the threshold met, and each container using more of it than it
// requests.
func Message(res v1.ResourceName, pod *v1.Pod, stats *statsapi.PodStats, met []Threshold, observed map[node.Signal]Observation) (string, map[string]string) {
	msg := fmt.Sprintf("The node was low on resource: %v. ", res) + ThresholdMetMessage(res, met, observed)
	annotations := map[string]string{}
	if stats == nil {
		return msg, annotations
	}
	containers := append(append([]v1.Container(nil), pod.Spec.Containers...), pod.Spec.InitContainers...)
	var names, usages []string
	for _, cs := range stats.Containers {
		for _, c := range containers {
			if c.Name != cs.Name {
				continue
			}
			request := c.Resources.Requests[res]
			var usage *resource.Quantity
			switch res {
			case v1.ResourceEphemeralStorage:
				if cs.Rootfs != nil && cs.Rootfs.UsedBytes != nil && cs.Logs != nil && cs.Logs.UsedBytes != nil {
					usage = quantity(*cs.Rootfs.UsedBytes + *cs.Logs.UsedBytes)
				}
			case v1.ResourceMemory:
				if cs.Memory != nil && cs.Memory.WorkingSetBytes != nil {
					usage = quantity(*cs.Memory.WorkingSetBytes)
				}
			}
			if usage != nil && usage.Cmp(request) > 0 {
				msg += fmt.Sprintf("Container %s was using %s, request is %s, has larger consumption of %v. ", c.Name, usage.String(), request.String(), res)
				names, usages = append(names, c.Name), append(usages, usage.String())
			}
			break
		}
	}
	annotations[OffendingContainersKey] = strings.Join(names, ",")
	annotations[OffendingContainersUsageKey] = strings.Join(usages, ",")
	annotations[StarvedResourceKey] = string(res)
	return msg, annotations
}

// SystemCriticalPriority is the lowest priority of a critical pod
// (system-cluster-critical's and above).
const SystemCriticalPriority = 2000000000

// Critical reports a pod the node never evicts and admits under pressure,
// as the kubelet's IsCriticalPod: a static or mirror pod, or one of
// critical priority.
func Critical(pod *v1.Pod) bool {
	return source.IsStatic(pod) || source.IsMirror(pod) || (pod.Spec.Priority != nil && *pod.Spec.Priority >= SystemCriticalPriority)
}
