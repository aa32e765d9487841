package kubeletapi_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/agent/kubeletapi"
	"berth/cri"
)

// t0 is the time of the first record in the test logs.
var t0 = time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)

// writeLog writes lines as CRI records one second apart from start into
// <logDir>/<ns>_<name>_<uid>/<container>/<attempt>.log.
func writeLog(t *testing.T, logDir string, pod *v1.Pod, container string, attempt int, start time.Time, lines ...string) {
	t.Helper()
	dir := filepath.Join(logDir, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID), container)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i, l := range lines {
		stream := "stdout"
		if strings.HasPrefix(l, "ERR ") {
			stream = "stderr"
		}
		fmt.Fprintf(&b, "%s %s F %s\n", start.Add(time.Duration(i)*time.Second).Format(time.RFC3339Nano), stream, l)
	}
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.log", attempt)), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func webPod(status v1.ContainerStatus) v1.Pod {
	status.Name = "app"
	return v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "uid-1"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app"}}, InitContainers: []v1.Container{{Name: "setup"}}},
		Status: v1.PodStatus{
			ContainerStatuses:     []v1.ContainerStatus{status},
			InitContainerStatuses: []v1.ContainerStatus{{Name: "setup", ContainerID: "containerd://init0", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ContainerID: "containerd://init0"}}}},
		},
	}
}

var (
	running    = v1.ContainerState{Running: &v1.ContainerStateRunning{}}
	terminated = v1.ContainerStateTerminated{ExitCode: 1, ContainerID: "containerd://old"}
)

func TestContainerLogsQueryParameters(t *testing.T) {
	h := newHarness(t)
	pod := webPod(v1.ContainerStatus{ContainerID: "containerd://cur", State: running, RestartCount: 1,
		LastTerminationState: v1.ContainerState{Terminated: &terminated}})
	h.setPods(pod)
	writeLog(t, h.logDir, &pod, "app", 0, t0, "old one", "old two")
	writeLog(t, h.logDir, &pod, "app", 1, t0.Add(time.Minute), "one", "two", "ERR three", "four")
	writeLog(t, h.logDir, &pod, "setup", 0, t0, "init done")
	base := "/containerLogs/default/web/app"
	for _, tc := range []struct {
		query, want string
	}{
		{"", "one\ntwo\nERR three\nfour\n"},
		{"?tailLines=2", "ERR three\nfour\n"},
		{"?tail=1", "four\n"},
		{"?tail=all", "one\ntwo\nERR three\nfour\n"},
		{"?tailLines=0", ""},
		{"?limitBytes=6", "one\ntw"},
		{"?timestamps=true&tailLines=1", t0.Add(time.Minute+3*time.Second).Format("2006-01-02T15:04:05.000000000Z07:00") + " four\n"},
		{"?sinceTime=" + t0.Add(time.Minute+2*time.Second).Format(time.RFC3339), "ERR three\nfour\n"},
		{"?stream=Stderr", "ERR three\n"},
		{"?stream=Stdout&limitBytes=100", "one\ntwo\nfour\n"},
		{"?previous=true", "old one\nold two\n"},
		{"?previous=1&tailLines=1", "old two\n"},
	} {
		code, body := h.get(base + tc.query)
		if code != http.StatusOK || body != tc.want {
			t.Errorf("GET %s%s = %d %q, want 200 %q", base, tc.query, code, body, tc.want)
		}
	}
	if code, body := h.get("/containerLogs/default/web/setup"); code != http.StatusOK || body != "init done\n" {
		t.Errorf("init container log = %d %q", code, body)
	}
}

func TestContainerLogsSinceSecondsUsesTheClock(t *testing.T) {
	now := t0.Add(10 * time.Second)
	h := newHarness(t, withClock(func() time.Time { return now }))
	pod := webPod(v1.ContainerStatus{ContainerID: "containerd://cur", State: running})
	h.setPods(pod)
	writeLog(t, h.logDir, &pod, "app", 0, t0, "a", "b", "c", "d", "e", "f", "g", "h", "i", "j")
	// Records at t0+0s … t0+9s; since 3 s before t0+10s keeps t0+7s onwards.
	if code, body := h.get("/containerLogs/default/web/app?sinceSeconds=3"); code != http.StatusOK || body != "h\ni\nj\n" {
		t.Fatalf("sinceSeconds=3 = %d %q", code, body)
	}
}

func TestContainerLogsErrors(t *testing.T) {
	h := newHarness(t)
	waiting := webPod(v1.ContainerStatus{State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}})
	pulling := webPod(v1.ContainerStatus{State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}})
	pulling.Name = "pulling"
	fresh := webPod(v1.ContainerStatus{ContainerID: "containerd://cur", State: running})
	fresh.Name = "fresh"
	nostatus := webPod(v1.ContainerStatus{})
	nostatus.Name, nostatus.Status.ContainerStatuses = "nostatus", nil
	h.setPods(waiting, pulling, fresh, nostatus)
	writeLog(t, h.logDir, &fresh, "app", 0, t0, "hello")
	for _, tc := range []struct {
		path string
		code int
		want string
	}{
		{"/containerLogs/default/missing/app", 404, `pod "missing" does not exist`},
		{"/containerLogs/default/web/nope", 404, `container "nope" not found in pod "web"`},
		{"/containerLogs/default/web/app", 400, `container "app" in pod "web" is waiting to start: ContainerCreating`},
		{"/containerLogs/default/pulling/app", 400, `container "app" in pod "pulling" is waiting to start: trying and failing to pull image`},
		{"/containerLogs/default/nostatus/app", 400, `container "app" in pod "nostatus" is not available`},
		{"/containerLogs/default/fresh/app?previous=true", 400, `previous terminated container "app" in pod "fresh" not found`},
		{"/containerLogs/default/fresh/app?tailLines=x", 400, `query parameter tailLines="x": not an integer`},
		{"/containerLogs/default/fresh/app?follow=maybe", 400, `query parameter follow="maybe": not a boolean`},
		{"/containerLogs/default/fresh/app?sinceTime=yesterday", 400, `query parameter sinceTime="yesterday": not an RFC 3339 time`},
		{"/containerLogs/default/fresh/app?tailLines=-1", 422, "tailLines: Invalid value: -1"},
		{"/containerLogs/default/fresh/app?limitBytes=0", 422, "limitBytes: Invalid value: 0"},
		{"/containerLogs/default/fresh/app?sinceSeconds=0", 422, "sinceSeconds: Invalid value: 0"},
		{"/containerLogs/default/fresh/app?sinceSeconds=5&sinceTime=2026-01-01T00:00:00Z", 422, "at most one of sinceTime or sinceSeconds"},
		{"/containerLogs/default/fresh/app?stream=Both", 422, `stream: Unsupported value: "Both"`},
	} {
		code, body := h.get(tc.path)
		if code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("GET %s = %d %q, want %d containing %q", tc.path, code, body, tc.code, tc.want)
		}
	}
	// A restarting container (waiting after a crash) serves its last run,
	// both as the current log and as the previous one.
	crashed := webPod(v1.ContainerStatus{RestartCount: 1, State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: v1.ContainerState{Terminated: &terminated}})
	crashed.Name = "crashed"
	h.setPods(crashed)
	writeLog(t, h.logDir, &crashed, "app", 0, t0, "first run")
	writeLog(t, h.logDir, &crashed, "app", 1, t0, "second run, crashed")
	for _, q := range []string{"", "?previous=true"} {
		if code, body := h.get("/containerLogs/default/crashed/app" + q); code != 200 || body != "second run, crashed\n" {
			t.Errorf("crash-looping GET %s = %d %q, want the last run's log", q, code, body)
		}
	}
}

func TestContainerLogsFollowEndsWhenTheContainerExits(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	pod := v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "uid-f"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}}
	podLogDir := filepath.Join(h.logDir, "default_web_uid-f")
	if err := os.MkdirAll(filepath.Join(podLogDir, "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	h.rt.PreloadImage("busybox:1")
	sbCfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-f"},
		Labels:       cri.SandboxLabels(&pod),
		LogDirectory: podLogDir,
	}
	sb, err := h.client.RunPodSandbox(ctx, sbCfg, "")
	if err != nil {
		t.Fatal(err)
	}
	id, err := h.client.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: &runtimeapi.ImageSpec{Image: "busybox:1"},
		Labels: cri.ContainerLabels(&pod, &pod.Spec.Containers[0]), LogPath: "app/0.log",
	}, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.client.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := h.rt.AppendLog(id, runtimeapi.Stdout, "before\n"); err != nil {
		t.Fatal(err)
	}
	pod.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "app", ContainerID: "containerd://" + id, State: running}}
	h.setPods(pod)

	c := h.httpClient(h.ca.Client(t, "admin"))
	resp, err := c.Get(h.url + "/containerLogs/default/web/app?follow=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("follow = %d", resp.StatusCode)
	}
	br := bufio.NewReader(resp.Body)
	expectLine := func(want string) {
		t.Helper()
		line, err := br.ReadString('\n')
		if err != nil || line != want+"\n" {
			t.Fatalf("followed line = %q, %v; want %q", line, err, want)
		}
	}
	expectLine("before")
	if err := h.rt.AppendLog(id, runtimeapi.Stdout, "after\n"); err != nil {
		t.Fatal(err)
	}
	expectLine("after")
	if err := h.rt.AppendLog(id, runtimeapi.Stderr, "last words\n"); err != nil {
		t.Fatal(err)
	}
	if err := h.rt.ExitContainer(id, 0, "Completed"); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(br)
	if err != nil || string(rest) != "last words\n" {
		t.Fatalf("rest of the followed log = %q, %v; want the last line, then the end", rest, err)
	}
}

func withClock(now func() time.Time) harnessOption {
	return func(cfg *kubeletapi.Config) { cfg.Now = now }
}

func TestNodeLogsServesTheNodeLogDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "syslog"), []byte("a node log line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(c *kubeletapi.Config) { c.NodeLogDir = dir })
	if code, body := h.get("/logs/"); code != 200 || !strings.Contains(body, `<a href="sub/">sub/</a>`) {
		t.Errorf("/logs/ = %d %q, want the directory listing", code, body)
	}
	if code, body := h.get("/logs/sub/syslog"); code != 200 || body != "a node log line\n" {
		t.Errorf("/logs/sub/syslog = %d %q", code, body)
	}
	if code, _ := h.get("/logs/../../etc/passwd"); code == 200 {
		t.Errorf("/logs/../../etc/passwd served")
	}
	if code, _ := h.get("/logs/missing"); code != 404 {
		t.Errorf("/logs/missing = %d, want 404", code)
	}
}
