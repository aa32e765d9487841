package kubeletapi_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/agent/kubeletapi"
	"berth/cri"
	"berth/internal/errdefs"
)

// runPod creates pod's sandbox and a running container "app" in the fake
// runtime, labelled as the kubelet labels them, and returns their IDs.
func runPod(t *testing.T, h *harness, pod *v1.Pod, attempt uint32) (sandboxID, containerID string) {
	t.Helper()
	ctx := context.Background()
	h.rt.PreloadImage("busybox:1")
	sbCfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID), Attempt: attempt},
		Labels:   cri.SandboxLabels(pod),
	}
	sb, err := h.client.RunPodSandbox(ctx, sbCfg, "")
	if err != nil {
		t.Fatal(err)
	}
	id, err := h.client.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "app", Attempt: attempt}, Image: &runtimeapi.ImageSpec{Image: "busybox:1"},
		Labels: cri.ContainerLabels(pod, &v1.Container{Name: "app"}),
	}, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.client.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	return sb, id
}

func TestStreamingRequestsReachTheProxy(t *testing.T) {
	h := newHarness(t)
	pod := v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "uid-1"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}}
	h.setPods(pod)
	runPod(t, h, &pod, 0)
	// Resolved all the way to the runtime's streaming URL, a plain GET is
	// refused by the proxy: streams need a connection upgrade.
	for _, path := range []string{
		"/exec/default/web/app?command=ls&output=1",
		"/exec/default/web/uid-1/app?command=ls&command=-l&input=1&output=1&error=1",
		"/exec/default/web/app?command=sh&input=true&tty=true",
		"/attach/default/web/app?output=1",
		"/attach/default/web/uid-1/app?input=1&output=1&tty=1",
		"/portForward/default/web",
		"/portForward/default/web/uid-1?port=80&port=8080",
		// The API's parameter names, as a proxy passing them through sends them.
		"/exec/default/web/app?command=ls&stdout=true&stderr=true",
		"/attach/default/web/app?stdin=true&stdout=true&tty=true",
		"/portForward/default/web?ports=8080",
	} {
		code, body := h.get(path)
		if code != http.StatusBadRequest || !strings.Contains(body, "Upgrade request required") {
			t.Errorf("GET %s = %d %q, want 400 Upgrade request required", path, code, body)
		}
	}
}

func TestStreamingRequestErrors(t *testing.T) {
	h := newHarness(t)
	pod := v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "uid-1"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}}
	idle := v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "idle", UID: "uid-2"}}
	h.setPods(pod, idle)
	runPod(t, h, &pod, 0)
	for _, tc := range []struct {
		path string
		code int
		want string
	}{
		{"/exec/default/web/app?command=ls", 400, "you must specify at least 1 of stdin, stdout, stderr"},
		{"/exec/default/web/app?command=ls&tty=1&error=1", 400, "you must specify at least 1 of stdin, stdout, stderr"},
		{"/exec/default/web/app?output=1", 400, "query parameter command: required"},
		{"/exec/default/web/app?command=ls&output=yes", 400, `query parameter output="yes": not a boolean`},
		{"/exec/default/missing/app?command=ls&output=1", 404, "pod does not exist"},
		{"/exec/default/web/uid-other/app?command=ls&output=1", 404, "pod not found"},
		{"/exec/default/web/sidecar?command=ls&output=1", 404, `container "sidecar" in pod default/web is not running`},
		{"/attach/default/idle/app?output=1", 404, `container "app" in pod default/idle is not running`},
		{"/attach/default/web/app", 400, "you must specify at least 1 of stdin, stdout, stderr"},
		{"/portForward/default/idle", 404, "pod default/idle has no ready sandbox"},
		{"/portForward/default/web?port=0", 400, `query parameter port="0": must be a port number between 1 and 65535`},
		{"/portForward/default/web?port=70000", 400, `query parameter port="70000"`},
		{"/portForward/default/web?ports=x", 400, `query parameter ports="x"`},
		{"/exec/default/web/app?command=ls&stdout=maybe", 400, `query parameter stdout="maybe": not a boolean`},
		{"/exec/default/web", 404, "404 page not found"},
		{"/containerLogs/default/web", 404, "404 page not found"},
	} {
		code, body := h.get(tc.path)
		if code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("GET %s = %d %q, want %d containing %q", tc.path, code, body, tc.code, tc.want)
		}
	}
	// Only GET and POST stream.
	req, _ := http.NewRequest(http.MethodPut, h.url+"/exec/default/web/app?command=ls&output=1", nil)
	resp, err := h.httpClient(h.ca.Client(t, "admin")).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("PUT /exec = %d, want 405", resp.StatusCode)
	}
}

func TestCRILocator(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	pod := v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "p", UID: "u1"}}
	sb0, c0 := runPod(t, h, &pod, 0)
	loc := kubeletapi.CRILocator{Runtime: h.client}
	ref := kubeletapi.PodRef{Namespace: "ns1", Name: "p"}
	if got, err := loc.SandboxID(ctx, ref); err != nil || got != sb0 {
		t.Fatalf("SandboxID = %q, %v; want %q", got, err, sb0)
	}
	if got, err := loc.ContainerID(ctx, ref, "app"); err != nil || got != c0 {
		t.Fatalf("ContainerID = %q, %v; want %q", got, err, c0)
	}
	// A newer sandbox attempt and container replace the old ones once those stop.
	if err := h.client.StopPodSandbox(ctx, sb0); err != nil {
		t.Fatal(err)
	}
	sb1, c1 := runPod(t, h, &pod, 1)
	if got, err := loc.SandboxID(ctx, ref); err != nil || got != sb1 {
		t.Fatalf("SandboxID after restart = %q, %v; want %q", got, err, sb1)
	}
	if got, err := loc.ContainerID(ctx, ref, "app"); err != nil || got != c1 {
		t.Fatalf("ContainerID after restart = %q, %v; want %q", got, err, c1)
	}
	// The UID must match when given.
	if _, err := loc.ContainerID(ctx, kubeletapi.PodRef{Namespace: "ns1", Name: "p", UID: "other"}, "app"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("ContainerID with another UID = %v, want not found", err)
	}
	if _, err := loc.SandboxID(ctx, kubeletapi.PodRef{Namespace: "ns2", Name: "p"}); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("SandboxID of an unknown pod = %v, want not found", err)
	}
	h.rt.Inject("ListContainers", errors.New("runtime down"))
	if _, err := loc.ContainerID(ctx, ref, "app"); err == nil || errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("ContainerID with a failing runtime = %v, want a non-not-found error", err)
	}
}
