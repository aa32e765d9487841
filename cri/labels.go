package cri

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"berth/internal/errdefs"
)

// Label keys the kubelet puts on sandboxes and containers, so that crictl and
// other CRI tools see berth's pods as Kubernetes pods.
const (
	LabelPodName       = "io.kubernetes.pod.name"
	LabelPodNamespace  = "io.kubernetes.pod.namespace"
	LabelPodUID        = "io.kubernetes.pod.uid"
	LabelContainerName = "io.kubernetes.container.name"
)

// Annotation keys the kubelet puts on containers.
const (
	AnnotationContainerHash                     = "io.kubernetes.container.hash"
	AnnotationContainerRestartCount             = "io.kubernetes.container.restartCount"
	AnnotationContainerTerminationMessagePath   = "io.kubernetes.container.terminationMessagePath"
	AnnotationContainerTerminationMessagePolicy = "io.kubernetes.container.terminationMessagePolicy"
	AnnotationContainerPreStopHandler           = "io.kubernetes.container.preStopHandler"
	AnnotationContainerPorts                    = "io.kubernetes.container.ports"
	AnnotationContainerType                     = "io.kubernetes.container.type"
	AnnotationPodDeletionGracePeriod            = "io.kubernetes.pod.deletionGracePeriod"
	AnnotationPodTerminationGracePeriod         = "io.kubernetes.pod.terminationGracePeriod"
)

// ContainerType is the value of the io.kubernetes.container.type annotation.
type ContainerType string

// The container types, as the kubelet writes them.
const (
	ContainerTypeInit      ContainerType = "init"
	ContainerTypeRegular   ContainerType = "container"
	ContainerTypeEphemeral ContainerType = "ephemeral"
)

// SandboxLabels returns the labels for a pod's sandbox: the pod's own labels
// plus its name, namespace and UID.
func SandboxLabels(pod *v1.Pod) map[string]string {
	labels := make(map[string]string, len(pod.Labels)+3)
	maps.Copy(labels, pod.Labels)
	labels[LabelPodName] = pod.Name
	labels[LabelPodNamespace] = pod.Namespace
	labels[LabelPodUID] = string(pod.UID)
	return labels
}

// SandboxAnnotations returns the annotations for a pod's sandbox: a copy of the
// pod's annotations.
func SandboxAnnotations(pod *v1.Pod) map[string]string {
	return maps.Clone(pod.Annotations)
}

// ContainerLabels returns the labels for a container of pod: the pod's name,
// namespace and UID and the container's name (the pod's own labels stay on the
// sandbox, as the kubelet does).
func ContainerLabels(pod *v1.Pod, c *v1.Container) map[string]string {
	return map[string]string{
		LabelPodName:       pod.Name,
		LabelPodNamespace:  pod.Namespace,
		LabelPodUID:        string(pod.UID),
		LabelContainerName: c.Name,
	}
}

// ContainerAnnotations returns the annotations for a container of pod: its
// spec hash, restart count, termination message path and policy, the pod's
// grace periods, the preStop handler and ports (JSON) and the container type.
func ContainerAnnotations(pod *v1.Pod, c *v1.Container, restartCount int) map[string]string {
	a := map[string]string{
		AnnotationContainerHash:                     strconv.FormatUint(ContainerHash(c), 16),
		AnnotationContainerRestartCount:             strconv.Itoa(restartCount),
		AnnotationContainerTerminationMessagePath:   c.TerminationMessagePath,
		AnnotationContainerTerminationMessagePolicy: string(c.TerminationMessagePolicy),
	}
	if pod.DeletionGracePeriodSeconds != nil {
		a[AnnotationPodDeletionGracePeriod] = strconv.FormatInt(*pod.DeletionGracePeriodSeconds, 10)
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		a[AnnotationPodTerminationGracePeriod] = strconv.FormatInt(*pod.Spec.TerminationGracePeriodSeconds, 10)
	}
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		// Marshalling API types cannot fail: they hold no channels, funcs or cycles.
		raw, _ := json.Marshal(c.Lifecycle.PreStop)
		a[AnnotationContainerPreStopHandler] = string(raw)
	}
	if len(c.Ports) > 0 {
		raw, _ := json.Marshal(c.Ports)
		a[AnnotationContainerPorts] = string(raw)
	}
	if t := containerType(pod, c.Name); t != "" {
		a[AnnotationContainerType] = string(t)
	}
	return a
}

// containerType finds which list of the pod's spec holds the named container.
func containerType(pod *v1.Pod, name string) ContainerType {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return ContainerTypeInit
		}
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return ContainerTypeRegular
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			return ContainerTypeEphemeral
		}
	}
	return ""
}

// ContainerHash hashes a container's spec for change detection: a running
// container whose hash annotation differs from the hash of the desired spec
// was made from a different spec. The hash covers the whole spec except
// Resources and ResizePolicy, which change in place (pod resize) without a
// restart; it is stable across processes (FNV-64a of the JSON encoding, which
// orders fields and map keys deterministically).
func ContainerHash(c *v1.Container) uint64 {
	cc := *c
	cc.Resources = v1.ResourceRequirements{}
	cc.ResizePolicy = nil
	h := fnv.New64a()
	// Encoding a v1.Container cannot fail, see ContainerAnnotations.
	_ = json.NewEncoder(h).Encode(&cc)
	return h.Sum64()
}

// SandboxInfo is what ParseSandboxLabels reads back from a sandbox's labels.
type SandboxInfo struct {
	PodName      string
	PodNamespace string
	PodUID       types.UID
	// Labels are the pod's own labels (the kubelet keys removed).
	Labels map[string]string
}

// ParseSandboxLabels reads the kubelet labels back from a sandbox's labels.
// Missing keys leave their fields empty (the sandbox was not made by a kubelet).
func ParseSandboxLabels(labels map[string]string) SandboxInfo {
	info := SandboxInfo{
		PodName:      labels[LabelPodName],
		PodNamespace: labels[LabelPodNamespace],
		PodUID:       types.UID(labels[LabelPodUID]),
		Labels:       make(map[string]string, len(labels)),
	}
	for k, v := range labels {
		if k != LabelPodName && k != LabelPodNamespace && k != LabelPodUID {
			info.Labels[k] = v
		}
	}
	return info
}

// ContainerInfo is what ParseContainerInfo reads back from a container's
// labels and annotations.
type ContainerInfo struct {
	PodName       string
	PodNamespace  string
	PodUID        types.UID
	ContainerName string

	Hash                      uint64
	RestartCount              int
	TerminationMessagePath    string
	TerminationMessagePolicy  v1.TerminationMessagePolicy
	PodDeletionGracePeriod    *int64
	PodTerminationGracePeriod *int64
	PreStopHandler            *v1.LifecycleHandler
	Ports                     []v1.ContainerPort
	Type                      ContainerType
}

// ParseContainerInfo reads the kubelet labels and annotations back from a
// container. Missing keys leave their fields zero. A malformed value leaves
// its field zero and is reported in the error, which names the key and the
// value; the other fields are still filled in.
func ParseContainerInfo(labels, annotations map[string]string) (ContainerInfo, error) {
	info := ContainerInfo{
		PodName:                  labels[LabelPodName],
		PodNamespace:             labels[LabelPodNamespace],
		PodUID:                   types.UID(labels[LabelPodUID]),
		ContainerName:            labels[LabelContainerName],
		TerminationMessagePath:   annotations[AnnotationContainerTerminationMessagePath],
		TerminationMessagePolicy: v1.TerminationMessagePolicy(annotations[AnnotationContainerTerminationMessagePolicy]),
		Type:                     ContainerType(annotations[AnnotationContainerType]),
	}
	var problems []string
	bad := func(key string, err error) {
		problems = append(problems, fmt.Sprintf("annotation %s=%q: %v", key, annotations[key], err))
	}
	if v, ok := annotations[AnnotationContainerHash]; ok {
		h, err := strconv.ParseUint(v, 16, 64)
		if err != nil {
			bad(AnnotationContainerHash, err)
		}
		info.Hash = h
	}
	if v, ok := annotations[AnnotationContainerRestartCount]; ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			bad(AnnotationContainerRestartCount, err)
			n = 0
		} else if n < 0 {
			bad(AnnotationContainerRestartCount, fmt.Errorf("must not be negative"))
			n = 0
		}
		info.RestartCount = n
	}
	for _, gp := range []struct {
		key string
		dst **int64
	}{
		{AnnotationPodDeletionGracePeriod, &info.PodDeletionGracePeriod},
		{AnnotationPodTerminationGracePeriod, &info.PodTerminationGracePeriod},
	} {
		key, dst := gp.key, gp.dst
		if v, ok := annotations[key]; ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				bad(key, err)
				continue
			}
			*dst = &n
		}
	}
	if v, ok := annotations[AnnotationContainerPreStopHandler]; ok {
		h := &v1.LifecycleHandler{}
		if err := json.Unmarshal([]byte(v), h); err != nil {
			bad(AnnotationContainerPreStopHandler, err)
		} else {
			info.PreStopHandler = h
		}
	}
	if v, ok := annotations[AnnotationContainerPorts]; ok {
		var ports []v1.ContainerPort
		if err := json.Unmarshal([]byte(v), &ports); err != nil {
			bad(AnnotationContainerPorts, err)
		} else {
			info.Ports = ports
		}
	}
	if len(problems) > 0 {
		return info, fmt.Errorf("container %q of pod %s/%s: %s: %w", info.ContainerName, info.PodNamespace, info.PodName, strings.Join(problems, "; "), errdefs.ErrInvalidArgument)
	}
	return info, nil
}
