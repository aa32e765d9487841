package containerconfig

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"berth/internal/errdefs"
	"berth/internal/expansion"
)

// EnvVar is one resolved environment variable.
type EnvVar struct {
	Name  string
	Value string
}

// envList keeps variables in first-definition order, a later definition of
// a name replacing the value in place.
type envList struct {
	names  []string
	values map[string]string
}

func (l *envList) set(name, value string) {
	if l.values == nil {
		l.values = map[string]string{}
	}
	if _, ok := l.values[name]; !ok {
		l.names = append(l.names, name)
	}
	l.values[name] = value
}

func (l *envList) vars() []EnvVar {
	out := make([]EnvVar, 0, len(l.names))
	for _, n := range l.names {
		out = append(out, EnvVar{Name: n, Value: l.values[n]})
	}
	return out
}

// Env resolves the container's environment as the kubelet does: first the
// envFrom variables (opts.EnvFrom, resolved by the caller), then each env
// entry in order — a literal value with $(VAR) references expanded against
// the variables defined so far and then the service variables, or a valueFrom
// (fieldRef and resourceFieldRef resolved here, configMap/secret/file keys
// taken from opts.EnvValues) — and last the service variables
// (opts.ServiceEnv) that no other source defined. A name defined twice keeps
// its first position and its last value.
func Env(pod *v1.Pod, c *v1.Container, opts Options) ([]EnvVar, error) {
	path := containerPath(pod, c)
	var env envList
	for _, e := range opts.EnvFrom {
		env.set(e.Name, e.Value)
	}
	for i := range c.Env {
		e := &c.Env[i]
		field := fmt.Sprintf("%s.env[%d]", path, i)
		if e.Name == "" {
			return nil, fmt.Errorf("%s.name: required: %w", field, errdefs.ErrInvalidArgument)
		}
		switch {
		case e.Value != "":
			env.set(e.Name, expansion.Expand(e.Value, expansion.Lookup(env.values, opts.ServiceEnv)))
		case e.ValueFrom == nil:
			env.set(e.Name, "")
		default:
			value, ok, err := valueFrom(pod, c, e, field, opts)
			if err != nil {
				return nil, err
			}
			if ok {
				env.set(e.Name, value)
			}
		}
	}
	serviceNames := make([]string, 0, len(opts.ServiceEnv))
	for name := range opts.ServiceEnv {
		serviceNames = append(serviceNames, name)
	}
	sort.Strings(serviceNames)
	for _, name := range serviceNames {
		if _, ok := env.values[name]; !ok {
			env.set(name, opts.ServiceEnv[name])
		}
	}
	return env.vars(), nil
}

// valueFrom resolves one env entry's valueFrom; ok is false for an optional
// key the caller could not resolve (the variable is then left out).
func valueFrom(pod *v1.Pod, c *v1.Container, e *v1.EnvVar, field string, opts Options) (value string, ok bool, err error) {
	src := e.ValueFrom
	switch {
	case src.FieldRef != nil:
		v, err := fieldRefValue(pod, src.FieldRef, opts)
		if err != nil {
			return "", false, fmt.Errorf("%s.valueFrom.fieldRef: %w", field, err)
		}
		return v, true, nil
	case src.ResourceFieldRef != nil:
		v, err := resourceFieldRefValue(pod, c, src.ResourceFieldRef, opts.NodeAllocatable)
		if err != nil {
			return "", false, fmt.Errorf("%s.valueFrom.resourceFieldRef: %w", field, err)
		}
		return v, true, nil
	}
	var kind, what string
	var optional *bool
	switch {
	case src.ConfigMapKeyRef != nil:
		kind, optional = "configMapKeyRef", src.ConfigMapKeyRef.Optional
		what = fmt.Sprintf("key %q of ConfigMap %s/%s", src.ConfigMapKeyRef.Key, pod.Namespace, src.ConfigMapKeyRef.Name)
	case src.SecretKeyRef != nil:
		kind, optional = "secretKeyRef", src.SecretKeyRef.Optional
		what = fmt.Sprintf("key %q of Secret %s/%s", src.SecretKeyRef.Key, pod.Namespace, src.SecretKeyRef.Name)
	case src.FileKeyRef != nil:
		kind, optional = "fileKeyRef", src.FileKeyRef.Optional
		what = fmt.Sprintf("key %q of file %q in volume %q", src.FileKeyRef.Key, src.FileKeyRef.Path, src.FileKeyRef.VolumeName)
	default:
		return "", false, fmt.Errorf("%s.valueFrom: no source set: %w", field, errdefs.ErrInvalidArgument)
	}
	if v, found := opts.EnvValues[e.Name]; found {
		return v, true, nil
	}
	if optional != nil && *optional {
		return "", false, nil
	}
	return "", false, fmt.Errorf("%s.valueFrom.%s: %s not found (env %s): %w", field, kind, what, e.Name, errdefs.ErrNotFound)
}

// fieldRefValue is the downward API value of a pod field.
func fieldRefValue(pod *v1.Pod, ref *v1.ObjectFieldSelector, opts Options) (string, error) {
	if ref.APIVersion != "" && ref.APIVersion != "v1" {
		return "", fmt.Errorf("apiVersion %q: unsupported (want v1): %w", ref.APIVersion, errdefs.ErrInvalidArgument)
	}
	p := ref.FieldPath
	switch p {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		if pod.Spec.NodeName != "" {
			return pod.Spec.NodeName, nil
		}
		return opts.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP":
		if len(opts.PodIPs) == 0 {
			return "", nil
		}
		return opts.PodIPs[0], nil
	case "status.podIPs":
		return strings.Join(opts.PodIPs, ","), nil
	case "status.hostIP", "status.hostIPs":
		if len(opts.HostIPs) == 0 {
			return "", fmt.Errorf("fieldPath %s: the node's IP is unknown (Options.HostIPs is empty): %w", p, errdefs.ErrUnavailable)
		}
		if p == "status.hostIP" {
			return opts.HostIPs[0], nil
		}
		return strings.Join(opts.HostIPs, ","), nil
	}
	for _, m := range []struct {
		prefix string
		values map[string]string
	}{{"metadata.labels", pod.Labels}, {"metadata.annotations", pod.Annotations}} {
		if key, ok := subscript(p, m.prefix); ok {
			return m.values[key], nil
		}
	}
	return "", fmt.Errorf("fieldPath %q: unsupported: %w", p, errdefs.ErrInvalidArgument)
}

// subscript parses prefix['key'] (or prefix["key"]).
func subscript(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix+"[")
	if !ok || !strings.HasSuffix(rest, "]") {
		return "", false
	}
	key := strings.TrimSuffix(rest, "]")
	if len(key) >= 2 && (key[0] == '\'' || key[0] == '"') && key[len(key)-1] == key[0] {
		return key[1 : len(key)-1], true
	}
	return "", false
}

// formatMap renders a label or annotation map as the downward API does:
// key="value" lines (values quoted Go-style), sorted by key.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	lines := make([]string, 0, len(keys))
	for _, k := range keys {
		lines = append(lines, fmt.Sprintf("%s=%q", k, m[k]))
	}
	return strings.Join(lines, "\n")
}

// resourceFieldRefValue is the downward API value of a container resource:
// the named container's (this one when unnamed) request or limit, divided by
// the divisor (1 when unset) and rounded up. Unset CPU, memory and
// ephemeral-storage limits read as the node's allocatable amount, as the
// kubelet does; unset requests default to the limit set in the spec, as the
// API server would have.
func resourceFieldRefValue(pod *v1.Pod, c *v1.Container, ref *v1.ResourceFieldSelector, allocatable v1.ResourceList) (string, error) {
	target := c
	if ref.ContainerName != "" {
		target = findContainer(pod, ref.ContainerName)
		if target == nil {
			return "", fmt.Errorf("containerName %q: no such container in the pod: %w", ref.ContainerName, errdefs.ErrNotFound)
		}
	}
	requests := v1.ResourceList{}
	limits := v1.ResourceList{}
	for n, q := range target.Resources.Limits {
		limits[n] = q
		requests[n] = q
	}
	for n, q := range target.Resources.Requests {
		requests[n] = q
	}
	for _, n := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage} {
		if q, ok := limits[n]; !ok || q.IsZero() {
			if a, ok := allocatable[n]; ok {
				limits[n] = a
			}
		}
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	var list v1.ResourceList
	switch kind {
	case "limits":
		list = limits
	case "requests":
		list = requests
	}
	rn := v1.ResourceName(name)
	if !ok || list == nil || !(rn == v1.ResourceCPU || rn == v1.ResourceMemory || rn == v1.ResourceEphemeralStorage ||
		strings.HasPrefix(name, v1.ResourceHugePagesPrefix)) {
		return "", fmt.Errorf("resource %q: unsupported: %w", ref.Resource, errdefs.ErrInvalidArgument)
	}
	q := list[rn]
	if divisor.Sign() <= 0 {
		return "", fmt.Errorf("divisor %s: must be positive: %w", divisor.String(), errdefs.ErrInvalidArgument)
	}
	var v float64
	if rn == v1.ResourceCPU {
		v = math.Ceil(float64(q.MilliValue()) / float64(divisor.MilliValue()))
	} else {
		v = math.Ceil(float64(q.Value()) / float64(divisor.Value()))
	}
	return strconv.FormatInt(int64(v), 10), nil
}

// findContainer finds a container of the pod by name (app, init or ephemeral).
func findContainer(pod *v1.Pod, name string) *v1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			return (*v1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		}
	}
	return nil
}

// containerPath is the field path of c in the pod spec, for error messages.
func containerPath(pod *v1.Pod, c *v1.Container) string {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == c.Name {
			return fmt.Sprintf("spec.containers[%d]", i)
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == c.Name {
			return fmt.Sprintf("spec.initContainers[%d]", i)
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == c.Name {
			return fmt.Sprintf("spec.ephemeralContainers[%d]", i)
		}
	}
	return fmt.Sprintf("container %q", c.Name)
}
