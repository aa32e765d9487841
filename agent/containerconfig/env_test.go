package containerconfig

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/internal/errdefs"
)

func fieldEnv(name, path string) v1.EnvVar {
	return v1.EnvVar{Name: name, ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: path}}}
}

func resourceEnv(name, container, res, divisor string) v1.EnvVar {
	sel := &v1.ResourceFieldSelector{ContainerName: container, Resource: res}
	if divisor != "" {
		sel.Divisor = resource.MustParse(divisor)
	}
	return v1.EnvVar{Name: name, ValueFrom: &v1.EnvVarSource{ResourceFieldRef: sel}}
}

func envPod(env ...v1.EnvVar) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web", Namespace: "shop", UID: "uid-1",
			Labels:      map[string]string{"app": "web", "tier": "front"},
			Annotations: map[string]string{"note": "say \"hi\""},
		},
		Spec: v1.PodSpec{
			ServiceAccountName: "sa",
			Containers: []v1.Container{{
				Name: "app", Image: "busybox", Env: env,
				Resources: v1.ResourceRequirements{
					Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("64Mi")},
					Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1500m"), v1.ResourceMemory: resource.MustParse("128Mi"), "hugepages-2Mi": resource.MustParse("4Mi")},
				},
			}, {
				Name: "side", Image: "busybox",
				Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")}},
			}},
		},
	}
}

func TestEnv(t *testing.T) {
	optional := true
	p := envPod(
		v1.EnvVar{Name: "A", Value: "a"},
		v1.EnvVar{Name: "B", Value: "$(A)-b"},
		v1.EnvVar{Name: "C", Value: "$(LATER)/$(FROM_CM)/$(SVC_HOST)/$$(A)"},
		v1.EnvVar{Name: "EMPTY"},
		v1.EnvVar{Name: "FROM_CM", Value: "overridden"},
		fieldEnv("POD_NAME", "metadata.name"),
		fieldEnv("POD_NS", "metadata.namespace"),
		fieldEnv("POD_UID", "metadata.uid"),
		fieldEnv("LABEL_APP", "metadata.labels['app']"),
		fieldEnv("LABEL_MISSING", "metadata.labels['nope']"),
		fieldEnv("ANNOTATION", `metadata.annotations["note"]`),
		fieldEnv("LABELS", "metadata.labels"),
		fieldEnv("NODE", "spec.nodeName"),
		fieldEnv("SA", "spec.serviceAccountName"),
		fieldEnv("POD_IP", "status.podIP"),
		fieldEnv("POD_IPS", "status.podIPs"),
		fieldEnv("HOST_IP", "status.hostIP"),
		fieldEnv("HOST_IPS", "status.hostIPs"),
		resourceEnv("CPU_LIMIT", "", "limits.cpu", ""),
		resourceEnv("CPU_LIMIT_M", "", "limits.cpu", "1m"),
		resourceEnv("CPU_REQUEST", "", "requests.cpu", ""),
		resourceEnv("MEM_LIMIT_MI", "", "limits.memory", "1Mi"),
		resourceEnv("MEM_REQUEST", "", "requests.memory", ""),
		resourceEnv("HUGE", "", "limits.hugepages-2Mi", "1Mi"),
		resourceEnv("SIDE_CPU_LIMIT", "side", "limits.cpu", ""),
		resourceEnv("SIDE_MEM_REQUEST_GI", "side", "requests.memory", "1Gi"),
		resourceEnv("SIDE_STORAGE", "side", "limits.ephemeral-storage", "1G"),
		v1.EnvVar{Name: "SECRET", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{
			LocalObjectReference: v1.LocalObjectReference{Name: "s"}, Key: "k"}}},
		v1.EnvVar{Name: "OPTIONAL_MISSING", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
			LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, Key: "k", Optional: &optional}}},
		v1.EnvVar{Name: "LATER", Value: "late"},
		v1.EnvVar{Name: "A", Value: "again-$(A)"},
	)
	opts := Options{
		EnvFrom:    []EnvVar{{"FROM_CM", "cm"}, {"CM_ONLY", "x"}},
		EnvValues:  map[string]string{"SECRET": "s3cret"},
		ServiceEnv: map[string]string{"SVC_HOST": "10.0.0.1", "SVC_PORT": "80", "A": "service-a"},
		PodIPs:     []string{"10.1.0.5", "fd00::5"},
		HostIPs:    []string{"192.0.2.10", "2001:db8::10"},
		NodeName:   "node1",
		NodeAllocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"),
			v1.ResourceMemory: resource.MustParse("8Gi"), v1.ResourceEphemeralStorage: resource.MustParse("100G")},
	}
	got, err := Env(p, &p.Spec.Containers[0], opts)
	if err != nil {
		t.Fatal(err)
	}
	want := []EnvVar{
		{"FROM_CM", "overridden"},
		{"CM_ONLY", "x"},
		{"A", "again-a"},
		{"B", "a-b"},
		// LATER is not defined yet; FROM_CM is (from envFrom); services resolve; $$ escapes.
		{"C", "$(LATER)/cm/10.0.0.1/$(A)"},
		{"EMPTY", ""},
		{"POD_NAME", "web"},
		{"POD_NS", "shop"},
		{"POD_UID", "uid-1"},
		{"LABEL_APP", "web"},
		{"LABEL_MISSING", ""},
		{"ANNOTATION", `say "hi"`},
		{"LABELS", "app=\"web\"\ntier=\"front\""},
		{"NODE", "node1"},
		{"SA", "sa"},
		{"POD_IP", "10.1.0.5"},
		{"POD_IPS", "10.1.0.5,fd00::5"},
		{"HOST_IP", "192.0.2.10"},
		{"HOST_IPS", "192.0.2.10,2001:db8::10"},
		{"CPU_LIMIT", "2"}, // 1.5 rounded up
		{"CPU_LIMIT_M", "1500"},
		{"CPU_REQUEST", "1"},
		{"MEM_LIMIT_MI", "128"},
		{"MEM_REQUEST", "67108864"},
		{"HUGE", "4"},
		{"SIDE_CPU_LIMIT", "4"},      // no limit: node allocatable
		{"SIDE_MEM_REQUEST_GI", "1"}, // request defaults to the limit
		{"SIDE_STORAGE", "100"},
		{"SECRET", "s3cret"},
		{"LATER", "late"},
		// Service variables come last, only those not defined already.
		{"SVC_HOST", "10.0.0.1"},
		{"SVC_PORT", "80"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("env mismatch:\n got %v\nwant %v", got, want)
	}
}

func TestEnvNodeNameFromPod(t *testing.T) {
	p := envPod(fieldEnv("NODE", "spec.nodeName"))
	p.Spec.NodeName = "from-spec"
	got, err := Env(p, &p.Spec.Containers[0], Options{NodeName: "from-options"})
	if err != nil || len(got) != 1 || got[0].Value != "from-spec" {
		t.Fatalf("Env = %v, %v; want NODE=from-spec", got, err)
	}
}

func TestEnvErrors(t *testing.T) {
	tests := []struct {
		name  string
		env   v1.EnvVar
		opts  Options
		is    error
		field string
	}{
		{"unsupported field path", fieldEnv("X", "spec.hostname"), Options{}, errdefs.ErrInvalidArgument, "spec.containers[0].env[0].valueFrom.fieldRef"},
		{"bad api version", v1.EnvVar{Name: "X", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v2", FieldPath: "metadata.name"}}},
			Options{}, errdefs.ErrInvalidArgument, "apiVersion"},
		{"host IP unknown", fieldEnv("X", "status.hostIP"), Options{}, errdefs.ErrUnavailable, "Options.HostIPs"},
		{"unsupported resource", resourceEnv("X", "", "limits.nvidia.com/gpu", ""), Options{}, errdefs.ErrInvalidArgument, "resourceFieldRef"},
		{"unknown container", resourceEnv("X", "ghost", "limits.cpu", ""), Options{}, errdefs.ErrNotFound, `containerName "ghost"`},
		{"secret not resolved", v1.EnvVar{Name: "X", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{
			LocalObjectReference: v1.LocalObjectReference{Name: "s"}, Key: "k"}}}, Options{}, errdefs.ErrNotFound, `spec.containers[0].env[0].valueFrom.secretKeyRef: key "k" of Secret shop/s`},
		{"configmap not resolved", v1.EnvVar{Name: "X", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
			LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, Key: "k"}}}, Options{}, errdefs.ErrNotFound, "configMapKeyRef"},
		{"empty valueFrom", v1.EnvVar{Name: "X", ValueFrom: &v1.EnvVarSource{}}, Options{}, errdefs.ErrInvalidArgument, "no source"},
		{"no name", v1.EnvVar{Value: "v"}, Options{}, errdefs.ErrInvalidArgument, "spec.containers[0].env[0].name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := envPod(tt.env)
			_, err := Env(p, &p.Spec.Containers[0], tt.opts)
			if !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("err = %v, want %v mentioning %q", err, tt.is, tt.field)
			}
		})
	}
}

func TestEnvInitContainerFieldPath(t *testing.T) {
	p := envPod()
	p.Spec.InitContainers = []v1.Container{{Name: "init", Image: "busybox", Env: []v1.EnvVar{fieldEnv("X", "bogus")}}}
	_, err := Env(p, &p.Spec.InitContainers[0], Options{})
	if err == nil || !strings.Contains(err.Error(), "spec.initContainers[0].env[0]") {
		t.Fatalf("err = %v, want it to name spec.initContainers[0].env[0]", err)
	}
}
