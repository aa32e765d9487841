package volumes

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"berth/agent/volumes/atomic"
	"berth/internal/errdefs"
)

func isTrue(b *bool) bool { return b != nil && *b }

// configMapPayload is the files of a configMap volume or projection: every
// key (data and binaryData) at its own name, or only the listed items. A
// missing configMap or key is an error unless optional, with upstream's
// messages.
func (m *Manager) configMapPayload(ctx context.Context, pod *v1.Pod, name string, items []v1.KeyToPath, optional *bool, defaultMode int32) (map[string]atomic.File, error) {
	if m.cfg.Objects == nil {
		return nil, fmt.Errorf("configmap %q: no API server to read it from: %w", name, errdefs.ErrUnavailable)
	}
	cm, err := m.cfg.Objects.GetConfigMap(ctx, pod.Namespace, name)
	switch {
	case errors.Is(err, errdefs.ErrNotFound) && isTrue(optional):
		cm = &v1.ConfigMap{}
	case errors.Is(err, errdefs.ErrNotFound):
		return nil, fmt.Errorf("configmap %q not found: %w", name, errdefs.ErrNotFound)
	case err != nil:
		return nil, fmt.Errorf("configmap %q: %w", name, err)
	}
	payload := map[string]atomic.File{}
	if len(items) == 0 {
		for k, v := range cm.Data {
			payload[k] = atomic.File{Data: []byte(v), Mode: defaultMode}
		}
		for k, v := range cm.BinaryData {
			payload[k] = atomic.File{Data: v, Mode: defaultMode}
		}
		return payload, nil
	}
	for _, it := range items {
		var data []byte
		if v, ok := cm.Data[it.Key]; ok {
			data = []byte(v)
		} else if v, ok := cm.BinaryData[it.Key]; ok {
			data = v
		} else if isTrue(optional) {
			continue
		} else {
			return nil, fmt.Errorf("configmap references non-existent config key: %s: %w", it.Key, errdefs.ErrNotFound)
		}
		payload[it.Path] = atomic.File{Data: data, Mode: modeOr(it.Mode, defaultMode)}
	}
	return payload, nil
}

// secretPayload is configMapPayload for secrets.
func (m *Manager) secretPayload(ctx context.Context, pod *v1.Pod, name string, items []v1.KeyToPath, optional *bool, defaultMode int32) (map[string]atomic.File, error) {
	if m.cfg.Objects == nil {
		return nil, fmt.Errorf("secret %q: no API server to read it from: %w", name, errdefs.ErrUnavailable)
	}
	s, err := m.cfg.Objects.GetSecret(ctx, pod.Namespace, name)
	switch {
	case errors.Is(err, errdefs.ErrNotFound) && isTrue(optional):
		s = &v1.Secret{}
	case errors.Is(err, errdefs.ErrNotFound):
		return nil, fmt.Errorf("secret %q not found: %w", name, errdefs.ErrNotFound)
	case err != nil:
		return nil, fmt.Errorf("secret %q: %w", name, err)
	}
	payload := map[string]atomic.File{}
	if len(items) == 0 {
		for k, v := range s.Data {
			payload[k] = atomic.File{Data: v, Mode: defaultMode}
		}
		return payload, nil
	}
	for _, it := range items {
		data, ok := s.Data[it.Key]
		if !ok {
			if isTrue(optional) {
				continue
			}
			return nil, fmt.Errorf("references non-existent secret key: %s: %w", it.Key, errdefs.ErrNotFound)
		}
		payload[it.Path] = atomic.File{Data: data, Mode: modeOr(it.Mode, defaultMode)}
	}
	return payload, nil
}

// downwardAPIPayload is the files of a downwardAPI volume or projection.
func (m *Manager) downwardAPIPayload(pod *v1.Pod, items []v1.DownwardAPIVolumeFile, defaultMode int32) (map[string]atomic.File, error) {
	payload := map[string]atomic.File{}
	var errs []error
	for _, it := range items {
		var value string
		var err error
		switch {
		case it.FieldRef != nil:
			value, err = podFieldValue(pod, it.FieldRef.FieldPath)
		case it.ResourceFieldRef != nil:
			value, err = containerResourceValue(pod, it.ResourceFieldRef, m.cfg.NodeAllocatable)
		default:
			err = fmt.Errorf("downwardAPI item %q: one of fieldRef and resourceFieldRef is required: %w", it.Path, errdefs.ErrInvalidArgument)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		payload[filepath.Clean(it.Path)] = atomic.File{Data: []byte(value), Mode: modeOr(it.Mode, defaultMode)}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return payload, nil
}

// projectedPayload merges the projected sources, in order.
func (m *Manager) projectedPayload(ctx context.Context, pod *v1.Pod, src *v1.ProjectedVolumeSource) (map[string]atomic.File, error) {
	defaultMode := modeOr(src.DefaultMode, v1.ProjectedVolumeSourceDefaultMode)
	fsGroup, _ := podFSGroup(pod)
	fsUser := podFSUser(pod)
	payload := map[string]atomic.File{}
	var errs []error
	for i, s := range src.Sources {
		var part map[string]atomic.File
		var err error
		switch {
		case s.ConfigMap != nil:
			part, err = m.configMapPayload(ctx, pod, s.ConfigMap.Name, s.ConfigMap.Items, s.ConfigMap.Optional, defaultMode)
		case s.Secret != nil:
			part, err = m.secretPayload(ctx, pod, s.Secret.Name, s.Secret.Items, s.Secret.Optional, defaultMode)
		case s.DownwardAPI != nil:
			part, err = m.downwardAPIPayload(pod, s.DownwardAPI.Items, defaultMode)
		case s.ServiceAccountToken != nil:
			part, err = m.tokenPayload(ctx, pod, s.ServiceAccountToken, defaultMode, fsUser, fsGroup)
		default:
			err = fmt.Errorf("projected source %d: source type not supported by berth's agent: %w", i, errdefs.ErrUnimplemented)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for p, f := range part {
			payload[p] = f
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return payload, nil
}

// tokenPayload is a serviceAccountToken projection: a token bound to the
// pod, for the source's audience and lifetime. The file is 0600 (owned by
// the pods' common runAsUser, if any) when fsUser or fsGroup is set, as
// upstream; fsGroup then makes it 0640.
func (m *Manager) tokenPayload(ctx context.Context, pod *v1.Pod, src *v1.ServiceAccountTokenProjection, defaultMode int32, fsUser, fsGroup *int64) (map[string]atomic.File, error) {
	if m.cfg.Tokens == nil {
		return nil, fmt.Errorf("serviceAccountToken %q: no token getter configured (the agent needs an API server to request service account tokens): %w", src.Path, errdefs.ErrUnavailable)
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	var audiences []string
	if src.Audience != "" {
		audiences = []string{src.Audience}
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		Audiences:         audiences,
		ExpirationSeconds: src.ExpirationSeconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID},
	}}
	tr, err := m.tokens.get(ctx, m.cfg.Tokens, pod.Namespace, sa, req)
	if err != nil {
		return nil, fmt.Errorf("serviceAccountToken %q: token for service account %s/%s: %w", src.Path, pod.Namespace, sa, err)
	}
	mode := defaultMode
	if fsUser != nil || fsGroup != nil {
		mode = 0o600
	}
	return map[string]atomic.File{src.Path: {Data: []byte(tr.Status.Token), Mode: mode, FsUser: fsUser}}, nil
}

// podFSUser is the runAsUser every container of the pod shares, if they
// all have one and it is the same.
func podFSUser(pod *v1.Pod) *int64 {
	var uid *int64
	var podUser *int64
	if pod.Spec.SecurityContext != nil {
		podUser = pod.Spec.SecurityContext.RunAsUser
	}
	all := append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	if len(all) == 0 {
		return nil
	}
	for _, c := range all {
		u := podUser
		if c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil {
			u = c.SecurityContext.RunAsUser
		}
		if u == nil || (uid != nil && *uid != *u) {
			return nil
		}
		uid = u
	}
	return uid
}

// podFieldValue is the downward API value of a pod field a volume may
// project: metadata.name, namespace, uid, labels, annotations, and one
// label or annotation by key.
func podFieldValue(pod *v1.Pod, fieldPath string) (string, error) {
	if path, key, ok := splitSubscript(fieldPath); ok {
		switch path {
		case "metadata.annotations":
			if errs := validation.IsQualifiedName(strings.ToLower(key)); len(errs) > 0 {
				return "", fmt.Errorf("invalid key subscript in %s: %s: %w", fieldPath, strings.Join(errs, ";"), errdefs.ErrInvalidArgument)
			}
			return pod.Annotations[key], nil
		case "metadata.labels":
			if errs := validation.IsQualifiedName(key); len(errs) > 0 {
				return "", fmt.Errorf("invalid key subscript in %s: %s: %w", fieldPath, strings.Join(errs, ";"), errdefs.ErrInvalidArgument)
			}
			return pod.Labels[key], nil
		}
		return "", fmt.Errorf("fieldPath %q does not support subscript: %w", fieldPath, errdefs.ErrInvalidArgument)
	}
	switch fieldPath {
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	}
	return "", fmt.Errorf("unsupported fieldPath: %v: %w", fieldPath, errdefs.ErrInvalidArgument)
}

// splitSubscript splits "path['key']" into path and key.
func splitSubscript(fieldPath string) (path, key string, ok bool) {
	if !strings.HasSuffix(fieldPath, "']") {
		return "", "", false
	}
	path, rest, found := strings.Cut(fieldPath, "['")
	if !found {
		return "", "", false
	}
	return path, strings.TrimSuffix(rest, "']"), true
}

// formatMap renders labels or annotations as key="value" lines (Go-quoted
// values), sorted by key, as the downward API does.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s=%q", k, m[k])
	}
	return b.String()
}

// containerResourceValue is a resourceFieldRef's value: the named
// container's limit or request divided by the divisor (default 1), rounded
// up. Unset cpu, memory and ephemeral-storage limits read as the node's
// allocatable amount, as the kubelet does.
func containerResourceValue(pod *v1.Pod, ref *v1.ResourceFieldSelector, allocatable v1.ResourceList) (string, error) {
	if ref.ContainerName == "" {
		return "", fmt.Errorf("resourceFieldRef %s: containerName is required in volumes: %w", ref.Resource, errdefs.ErrInvalidArgument)
	}
	var c *v1.Container
	for _, list := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == ref.ContainerName {
				c = &list[i]
			}
		}
	}
	if c == nil {
		return "", fmt.Errorf("resourceFieldRef %s: container %q not found in the pod: %w", ref.Resource, ref.ContainerName, errdefs.ErrNotFound)
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	rn := v1.ResourceName(name)
	var q resource.Quantity
	switch {
	case ok && kind == "limits":
		q = c.Resources.Limits[rn]
		if q.IsZero() && (rn == v1.ResourceCPU || rn == v1.ResourceMemory || rn == v1.ResourceEphemeralStorage) {
			q = allocatable[rn]
		}
	case ok && kind == "requests":
		q = c.Resources.Requests[rn]
	default:
		return "", fmt.Errorf("unsupported container resource : %v: %w", ref.Resource, errdefs.ErrInvalidArgument)
	}
	switch {
	case rn == v1.ResourceCPU:
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	case rn == v1.ResourceMemory || rn == v1.ResourceEphemeralStorage || strings.HasPrefix(name, v1.ResourceHugePagesPrefix):
		return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
	}
	return "", fmt.Errorf("unsupported container resource : %v: %w", ref.Resource, errdefs.ErrInvalidArgument)
}

// memoryVolumeSize is the size of a memory-backed volume, as the kubelet
// computes it: the node's allocatable memory, lowered to the pod's memory
// limit (when every container has one) and to the volume's sizeLimit,
// whichever are positive and smaller. 0 means no size option.
func memoryVolumeSize(pod *v1.Pod, sizeLimit *resource.Quantity, allocatable v1.ResourceList) int64 {
	var size int64
	if a, ok := allocatable[v1.ResourceMemory]; ok && a.Value() > 0 {
		size = a.Value()
	}
	lower := func(v int64) {
		if v > 0 && (size == 0 || v <= size) {
			size = v
		}
	}
	lower(podMemoryLimit(pod))
	if sizeLimit != nil {
		lower(sizeLimit.Value())
	}
	return size
}

// podMemoryLimit is the pod's memory limit for its cgroup: the sum of the
// containers' limits (at least the largest init container's) plus the
// overhead, or 0 when a container has no limit.
func podMemoryLimit(pod *v1.Pod) int64 {
	var sum int64
	for _, c := range pod.Spec.Containers {
		q, ok := c.Resources.Limits[v1.ResourceMemory]
		if !ok || q.IsZero() {
			return 0
		}
		sum += q.Value()
	}
	for _, c := range pod.Spec.InitContainers {
		q, ok := c.Resources.Limits[v1.ResourceMemory]
		if !ok || q.IsZero() {
			return 0
		}
		if q.Value() > sum {
			sum = q.Value()
		}
	}
	if q, ok := pod.Spec.Overhead[v1.ResourceMemory]; ok {
		sum += q.Value()
	}
	return sum
}
