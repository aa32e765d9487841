package cri_test

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"berth/cri"
	"berth/internal/errdefs"
)

func int64p(v int64) *int64 { return &v }

func testPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web", Namespace: "shop", UID: "1234-abcd",
			Labels:      map[string]string{"app": "web", "tier": "front"},
			Annotations: map[string]string{"note": "hello"},
		},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: int64p(30),
			InitContainers:                []v1.Container{{Name: "setup", Image: "busybox"}},
			Containers: []v1.Container{{
				Name: "app", Image: "nginx:1.25",
				TerminationMessagePath:   "/dev/termination-log",
				TerminationMessagePolicy: v1.TerminationMessageReadFile,
				Ports:                    []v1.ContainerPort{{Name: "http", ContainerPort: 80, Protocol: v1.ProtocolTCP}},
				Lifecycle: &v1.Lifecycle{PreStop: &v1.LifecycleHandler{
					Exec: &v1.ExecAction{Command: []string{"sh", "-c", "sleep 1"}},
				}},
			}},
			EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}},
		},
	}
}

func TestSandboxLabelsAndAnnotations(t *testing.T) {
	pod := testPod()
	labels := cri.SandboxLabels(pod)
	want := map[string]string{
		"app": "web", "tier": "front",
		"io.kubernetes.pod.name": "web", "io.kubernetes.pod.namespace": "shop", "io.kubernetes.pod.uid": "1234-abcd",
	}
	if !reflect.DeepEqual(labels, want) {
		t.Fatalf("SandboxLabels = %v, want %v", labels, want)
	}
	labels["app"] = "changed"
	if pod.Labels["app"] != "web" {
		t.Fatal("SandboxLabels must not alias the pod's labels")
	}
	if got := cri.SandboxAnnotations(pod); !reflect.DeepEqual(got, map[string]string{"note": "hello"}) {
		t.Fatalf("SandboxAnnotations = %v", got)
	}

	info := cri.ParseSandboxLabels(cri.SandboxLabels(pod))
	if info.PodName != "web" || info.PodNamespace != "shop" || info.PodUID != "1234-abcd" ||
		!reflect.DeepEqual(info.Labels, pod.Labels) {
		t.Fatalf("ParseSandboxLabels = %+v, want the pod's identity and its own labels back", info)
	}
}

func TestContainerLabelsAndAnnotationsRoundTrip(t *testing.T) {
	pod := testPod()
	pod.DeletionGracePeriodSeconds = int64p(5)
	app := &pod.Spec.Containers[0]
	labels := cri.ContainerLabels(pod, app)
	wantLabels := map[string]string{
		"io.kubernetes.pod.name": "web", "io.kubernetes.pod.namespace": "shop",
		"io.kubernetes.pod.uid": "1234-abcd", "io.kubernetes.container.name": "app",
	}
	if !reflect.DeepEqual(labels, wantLabels) {
		t.Fatalf("ContainerLabels = %v, want %v", labels, wantLabels)
	}
	ann := cri.ContainerAnnotations(pod, app, 3)
	for key, want := range map[string]string{
		"io.kubernetes.container.hash":                     strconv.FormatUint(cri.ContainerHash(app), 16),
		"io.kubernetes.container.restartCount":             "3",
		"io.kubernetes.container.terminationMessagePath":   "/dev/termination-log",
		"io.kubernetes.container.terminationMessagePolicy": "File",
		"io.kubernetes.pod.terminationGracePeriod":         "30",
		"io.kubernetes.pod.deletionGracePeriod":            "5",
		"io.kubernetes.container.type":                     "container",
		"io.kubernetes.container.ports":                    `[{"name":"http","containerPort":80,"protocol":"TCP"}]`,
		"io.kubernetes.container.preStopHandler":           `{"exec":{"command":["sh","-c","sleep 1"]}}`,
	} {
		if ann[key] != want {
			t.Errorf("annotation %s = %q, want %q", key, ann[key], want)
		}
	}

	info, err := cri.ParseContainerInfo(labels, ann)
	if err != nil {
		t.Fatal(err)
	}
	want := cri.ContainerInfo{
		PodName: "web", PodNamespace: "shop", PodUID: "1234-abcd", ContainerName: "app",
		Hash: cri.ContainerHash(app), RestartCount: 3,
		TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: v1.TerminationMessageReadFile,
		PodDeletionGracePeriod: int64p(5), PodTerminationGracePeriod: int64p(30),
		PreStopHandler: app.Lifecycle.PreStop, Ports: app.Ports, Type: cri.ContainerTypeRegular,
	}
	if !reflect.DeepEqual(info, want) {
		t.Fatalf("ParseContainerInfo =\n%+v\nwant\n%+v", info, want)
	}
}

func TestContainerTypeAnnotation(t *testing.T) {
	pod := testPod()
	for _, tc := range []struct {
		container v1.Container
		want      string
	}{
		{pod.Spec.InitContainers[0], "init"},
		{pod.Spec.Containers[0], "container"},
		{v1.Container(pod.Spec.EphemeralContainers[0].EphemeralContainerCommon), "ephemeral"},
		{v1.Container{Name: "stranger"}, ""},
	} {
		got, ok := cri.ContainerAnnotations(pod, &tc.container, 0)["io.kubernetes.container.type"]
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("type of %s = %q (present %v), want %q", tc.container.Name, got, ok, tc.want)
		}
	}
}

func TestContainerAnnotationsOmitUnsetOptionalKeys(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "n", UID: "u"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "i"}}}}
	ann := cri.ContainerAnnotations(pod, &pod.Spec.Containers[0], 0)
	for _, key := range []string{cri.AnnotationPodDeletionGracePeriod, cri.AnnotationPodTerminationGracePeriod, cri.AnnotationContainerPreStopHandler, cri.AnnotationContainerPorts} {
		if v, ok := ann[key]; ok {
			t.Errorf("annotation %s = %q, want it absent", key, v)
		}
	}
	info, err := cri.ParseContainerInfo(cri.ContainerLabels(pod, &pod.Spec.Containers[0]), ann)
	if err != nil || info.PodTerminationGracePeriod != nil || info.PreStopHandler != nil || info.Ports != nil {
		t.Fatalf("ParseContainerInfo = %+v, %v; want unset optional fields", info, err)
	}
}

func TestParseContainerInfoMalformed(t *testing.T) {
	labels := map[string]string{cri.LabelContainerName: "app", cri.LabelPodName: "web", cri.LabelPodNamespace: "shop"}
	for _, tc := range []struct {
		key, value string
	}{
		{cri.AnnotationContainerHash, "not-hex"},
		{cri.AnnotationContainerRestartCount, "three"},
		{cri.AnnotationContainerRestartCount, "-1"},
		{cri.AnnotationPodTerminationGracePeriod, "30s"},
		{cri.AnnotationPodDeletionGracePeriod, "x"},
		{cri.AnnotationContainerPreStopHandler, "{not json"},
		{cri.AnnotationContainerPorts, `{"not":"a list"}`},
	} {
		t.Run(tc.key+"="+tc.value, func(t *testing.T) {
			ann := map[string]string{tc.key: tc.value, cri.AnnotationContainerTerminationMessagePath: "/dev/termination-log"}
			info, err := cri.ParseContainerInfo(labels, ann)
			if !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Fatalf("ParseContainerInfo = %v, want ErrInvalidArgument", err)
			}
			if !strings.Contains(err.Error(), tc.key) || !strings.Contains(err.Error(), strconv.Quote(tc.value)) || !strings.Contains(err.Error(), `container "app" of pod shop/web`) {
				t.Fatalf("error %q should name the container, the key and the value", err)
			}
			if info.ContainerName != "app" || info.TerminationMessagePath != "/dev/termination-log" {
				t.Fatalf("the well-formed fields should still be filled: %+v", info)
			}
		})
	}
}

func TestContainerHash(t *testing.T) {
	base := v1.Container{
		Name: "app", Image: "nginx:1.25", Command: []string{"nginx"}, Args: []string{"-g", "daemon off;"},
		Env:            []v1.EnvVar{{Name: "A", Value: "1"}},
		Ports:          []v1.ContainerPort{{ContainerPort: 80}},
		Resources:      v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}},
		ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt32(80)}}},
	}
	h := cri.ContainerHash(&base)
	if h != cri.ContainerHash(base.DeepCopy()) {
		t.Fatal("hash differs for an equal spec")
	}
	for _, tc := range []struct {
		name    string
		mutate  func(c *v1.Container)
		changes bool
	}{
		{"image", func(c *v1.Container) { c.Image = "nginx:1.26" }, true},
		{"command", func(c *v1.Container) { c.Command = []string{"httpd"} }, true},
		{"env", func(c *v1.Container) { c.Env[0].Value = "2" }, true},
		{"probe", func(c *v1.Container) { c.ReadinessProbe.PeriodSeconds = 3 }, true},
		{"resources (resized in place)", func(c *v1.Container) { c.Resources.Limits[v1.ResourceCPU] = resource.MustParse("2") }, false},
		{"resize policy", func(c *v1.Container) {
			c.ResizePolicy = []v1.ContainerResizePolicy{{ResourceName: v1.ResourceCPU, RestartPolicy: v1.NotRequired}}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base.DeepCopy()
			tc.mutate(c)
			if got := cri.ContainerHash(c) != h; got != tc.changes {
				t.Fatalf("hash changed = %v, want %v", got, tc.changes)
			}
		})
	}
	// The hash is of the spec only: computing it leaves the spec untouched.
	if _, ok := base.Resources.Limits[v1.ResourceCPU]; !ok {
		t.Fatal("ContainerHash modified the container's resources")
	}
}

// The hash must not change between berth versions for the same spec, or an
// upgraded agent would restart every container it finds.
func TestContainerHashIsStableAcrossVersions(t *testing.T) {
	c := v1.Container{Name: "app", Image: "nginx:1.25"}
	if got, want := strconv.FormatUint(cri.ContainerHash(&c), 16), "808f6e997bed7c09"; got != want {
		t.Fatalf("ContainerHash = %s, want %s (changing the hash restarts every running container)", got, want)
	}
}
