package scheme

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"berth/internal/errdefs"
)

func TestDecodePodYAMLAppliesDefaults(t *testing.T) {
	pod, err := DecodePod([]byte(`
apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  unknownField: ignored
  containers:
  - name: c
    image: busybox
    ports:
    - containerPort: 80
`))
	if err != nil {
		t.Fatalf("DecodePod: %v", err)
	}
	if pod.Name != "web" {
		t.Errorf("name = %q, want web", pod.Name)
	}
	if pod.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Errorf("restartPolicy = %q, want Always", pod.Spec.RestartPolicy)
	}
	c := pod.Spec.Containers[0]
	if c.ImagePullPolicy != corev1.PullAlways {
		t.Errorf("imagePullPolicy = %q, want Always for an untagged image", c.ImagePullPolicy)
	}
	if c.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("port protocol = %q, want TCP", c.Ports[0].Protocol)
	}
	if pod.Spec.TerminationGracePeriodSeconds == nil || *pod.Spec.TerminationGracePeriodSeconds != 30 {
		t.Errorf("terminationGracePeriodSeconds = %v, want 30", pod.Spec.TerminationGracePeriodSeconds)
	}
}

func TestDecodePodJSON(t *testing.T) {
	pod, err := DecodePod([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"j"},"spec":{"containers":[{"name":"c","image":"busybox:1.36"}]}}`))
	if err != nil {
		t.Fatalf("DecodePod: %v", err)
	}
	if got := pod.Spec.Containers[0].ImagePullPolicy; got != corev1.PullIfNotPresent {
		t.Errorf("imagePullPolicy = %q, want IfNotPresent for a tagged image", got)
	}
}

func TestDecodePodRejects(t *testing.T) {
	for name, manifest := range map[string]string{
		"not yaml":     "a: [",
		"no kind":      `{"apiVersion":"v1","metadata":{"name":"x"}}`,
		"wrong kind":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
		"other group":  "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\n",
		"no name":      "apiVersion: v1\nkind: Pod\nspec:\n  containers: []\n",
		"unknown kind": "apiVersion: v1\nkind: Blob\nmetadata:\n  name: x\n",
	} {
		t.Run(name, func(t *testing.T) {
			pod, err := DecodePod([]byte(manifest))
			if err == nil {
				t.Fatalf("DecodePod accepted %q: %+v", manifest, pod)
			}
			if !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Errorf("error %v does not wrap ErrInvalidArgument", err)
			}
			t.Logf("%s: %v", name, err)
		})
	}
}

func TestDecodePodsAcceptsPodAndPodList(t *testing.T) {
	one, err := DecodePods([]byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\nspec:\n  containers:\n  - name: c\n    image: busybox\n"))
	if err != nil || len(one) != 1 || one[0].Name != "a" {
		t.Fatalf("single pod: %v %v", one, err)
	}
	list, err := DecodePods([]byte(`{"apiVersion":"v1","kind":"PodList","items":[
		{"metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"busybox"}]}},
		{"metadata":{"name":"b"},"spec":{"containers":[{"name":"c","image":"busybox:1"}]}}]}`))
	if err != nil || len(list) != 2 || list[1].Name != "b" {
		t.Fatalf("pod list: %v %v", list, err)
	}
	if list[0].Spec.RestartPolicy != corev1.RestartPolicyAlways || list[1].Spec.Containers[0].ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("list items not defaulted: %+v", list[0].Spec)
	}
	if _, err := DecodePods([]byte(`{"apiVersion":"v1","kind":"PodList","items":[{"spec":{}}]}`)); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("nameless list item: %v", err)
	}
	if _, err := DecodePods([]byte("apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n")); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("service accepted: %v", err)
	}
}
