package cri_test

import (
	"bytes"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/cri"
	"berth/cri/crilog"
	"berth/internal/errdefs"
)

func TestContainerLifecycle(t *testing.T) {
	c, _ := newClient(t)
	ctx := testContext(t)
	pullBusybox(t, c)
	pod := newPod(t, "main")
	sb, sbCfg := runSandbox(t, c, pod)
	cfg := containerConfig(pod, "main", "sh", "-c", "echo hello-out; echo hello-err >&2; exec sleep 3600")
	id := createContainer(t, c, sb, sbCfg, cfg)

	st, err := c.ContainerStatus(ctx, id, false)
	if err != nil {
		t.Fatal(err)
	}
	if st.GetStatus().GetState() != runtimeapi.ContainerState_CONTAINER_CREATED {
		t.Errorf("state after create = %v", st.GetStatus().GetState())
	}
	if err := c.StartContainer(ctx, id); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}
	running := waitContainerState(t, c, id, runtimeapi.ContainerState_CONTAINER_RUNNING)
	if running.GetStartedAt() == 0 {
		t.Errorf("running container has no start time")
	}
	info, err := cri.ParseContainerInfo(running.GetLabels(), running.GetAnnotations())
	if err != nil {
		t.Fatal(err)
	}
	if info.ContainerName != "main" || info.PodUID != pod.UID || info.RestartCount != 0 ||
		info.Hash != cri.ContainerHash(&pod.Spec.Containers[0]) {
		t.Errorf("labels read back as %+v", info)
	}

	// ExecSync: stdout, stderr and the exit code.
	stdout, stderr, code, err := c.ExecSync(ctx, id, []string{"sh", "-c", "echo out; echo err >&2; exit 3"}, 10*time.Second)
	if err != nil {
		t.Fatalf("ExecSync: %v", err)
	}
	if string(stdout) != "out\n" || string(stderr) != "err\n" || code != 3 {
		t.Errorf("ExecSync = %q, %q, %d; want \"out\\n\", \"err\\n\", 3", stdout, stderr, code)
	}
	stdout, _, code, err = c.ExecSync(ctx, id, []string{"hostname"}, 10*time.Second)
	if err != nil || strings.TrimSpace(string(stdout)) != pod.Name || code != 0 {
		t.Errorf("hostname in the pod = %q (exit %d, %v), want %s", stdout, code, err, pod.Name)
	}
	// The pod's interface carries the sandbox's CNI address.
	sst, err := c.PodSandboxStatus(ctx, sb, false)
	if err != nil {
		t.Fatal(err)
	}
	stdout, _, _, err = c.ExecSync(ctx, id, []string{"ip", "-4", "-o", "addr", "show", "eth0"}, 10*time.Second)
	if err != nil || !strings.Contains(string(stdout), sst.GetStatus().GetNetwork().GetIp()+"/") {
		t.Errorf("eth0 in the pod = %q (%v), want %s", stdout, err, sst.GetStatus().GetNetwork().GetIp())
	}

	// The streaming server answers on loopback with a real port.
	ex, err := c.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"true"}, Stdout: true})
	if err != nil {
		t.Fatalf("Exec: %v", err)
	}
	u, err := url.Parse(ex.GetUrl())
	if err != nil || u.Hostname() != "127.0.0.1" || u.Port() == "" || u.Port() == "0" {
		t.Errorf("exec URL %q: want http://127.0.0.1:<port>/…", ex.GetUrl())
	}

	// The log file, in CRI format, read back with crilog.
	logPath := filepath.Join(sbCfg.LogDirectory, cfg.LogPath)
	if running.GetLogPath() != logPath {
		t.Errorf("status log path %q, want %q", running.GetLogPath(), logPath)
	}
	all := readLogUntil(t, logPath, crilog.Options{}, "hello-out", "hello-err")
	if strings.Count(all, "\n") != 2 {
		t.Errorf("log = %q, want exactly two lines", all)
	}
	var out bytes.Buffer
	if err := crilog.ReadFile(ctx, logPath, crilog.Options{Stream: runtimeapi.Stdout}, &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "hello-out\n" {
		t.Errorf("stdout log = %q, want \"hello-out\\n\"", out.String())
	}
	out.Reset()
	if err := crilog.ReadFile(ctx, logPath, crilog.Options{Stream: runtimeapi.Stderr, Timestamps: true}, &out); err != nil {
		t.Fatal(err)
	}
	ts, text, _ := strings.Cut(strings.TrimSuffix(out.String(), "\n"), " ")
	when, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil || text != "hello-err" || time.Since(when) > time.Hour || time.Since(when) < -time.Minute {
		t.Errorf("stderr log with timestamps = %q (%v)", out.String(), err)
	}
	raw, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n") {
		if _, err := crilog.ParseLine([]byte(line)); err != nil {
			t.Errorf("log record %q is not CRI format: %v", line, err)
		}
	}

	// Stop: SIGTERM, then SIGKILL after the timeout; either way the exit
	// code says a signal ended it.
	if err := c.StopContainer(ctx, id, time.Second); err != nil {
		t.Fatalf("StopContainer: %v", err)
	}
	exited := waitContainerState(t, c, id, runtimeapi.ContainerState_CONTAINER_EXITED)
	if code := exited.GetExitCode(); (code != 128+15 && code != 128+9) || exited.GetFinishedAt() == 0 {
		t.Errorf("after stop: exit code %d finished %d, want 143 (SIGTERM) or 137 (SIGKILL)", code, exited.GetFinishedAt())
	}
	if err := c.RemoveContainer(ctx, id); err != nil {
		t.Fatalf("RemoveContainer: %v", err)
	}
	if _, err := c.ContainerStatus(ctx, id, false); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("ContainerStatus after removal = %v, want ErrNotFound", err)
	}
	if err := c.StopContainer(ctx, id, time.Second); err != nil {
		t.Errorf("StopContainer of a removed container: %v", err)
	}
	if err := c.RemoveContainer(ctx, id); err != nil {
		t.Errorf("RemoveContainer of a removed container: %v", err)
	}
}

func TestExitedContainerKeepsExitCodeAndLog(t *testing.T) {
	c, _ := newClient(t)
	ctx := testContext(t)
	pullBusybox(t, c)
	pod := newPod(t, "job")
	sb, sbCfg := runSandbox(t, c, pod)
	cfg := containerConfig(pod, "job", "sh", "-c", "printf 'no newline at the end'; exit 7")
	id := createContainer(t, c, sb, sbCfg, cfg)
	if err := c.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	st := waitContainerState(t, c, id, runtimeapi.ContainerState_CONTAINER_EXITED)
	if st.GetExitCode() != 7 {
		t.Errorf("exit code = %d, want 7", st.GetExitCode())
	}
	// Output without a final newline is a partial (P) record; the reader
	// gives it back as is, as `kubectl logs` shows it.
	logPath := filepath.Join(sbCfg.LogDirectory, cfg.LogPath)
	got := readLogUntil(t, logPath, crilog.Options{}, "no newline at the end")
	if got != "no newline at the end" {
		t.Errorf("log = %q", got)
	}
	raw, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := crilog.ParseLine(raw)
	if err != nil || !rec.Partial || rec.Stream != runtimeapi.Stdout || string(rec.Content) != "no newline at the end" {
		t.Errorf("record %q parsed as %+v, %v; want a partial stdout record", raw, rec, err)
	}
	// ExecSync into an exited container is refused, not hung.
	if _, _, _, err := c.ExecSync(ctx, id, []string{"true"}, 5*time.Second); err == nil {
		t.Errorf("ExecSync into an exited container succeeded")
	}
}

func TestListContainersByLabel(t *testing.T) {
	c, _ := newClient(t)
	ctx := testContext(t)
	pullBusybox(t, c)
	pod := newPod(t, "a", "b")
	sb, sbCfg := runSandbox(t, c, pod)
	idA := createContainer(t, c, sb, sbCfg, containerConfig(pod, "a", "sleep", "3600"))
	idB := createContainer(t, c, sb, sbCfg, containerConfig(pod, "b", "sleep", "3600"))
	if err := c.StartContainer(ctx, idA); err != nil {
		t.Fatal(err)
	}

	byPod, err := c.ListContainers(ctx, &runtimeapi.ContainerFilter{
		LabelSelector: map[string]string{cri.LabelPodUID: string(pod.UID)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(byPod) != 2 {
		t.Fatalf("containers of pod %s: %d, want 2", pod.UID, len(byPod))
	}
	byName, err := c.ListContainers(ctx, &runtimeapi.ContainerFilter{
		LabelSelector: map[string]string{cri.LabelPodUID: string(pod.UID), cri.LabelContainerName: "b"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(byName) != 1 || byName[0].Id != idB || byName[0].GetMetadata().GetName() != "b" {
		t.Errorf("container b by label: %v", byName)
	}
	running, err := c.ListContainers(ctx, &runtimeapi.ContainerFilter{
		PodSandboxId: sb,
		State:        &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(running) != 1 || running[0].Id != idA {
		t.Errorf("running containers of the sandbox: %v, want only %s", running, idA)
	}
	none, err := c.ListContainers(ctx, &runtimeapi.ContainerFilter{
		LabelSelector: map[string]string{cri.LabelPodUID: "no-such-uid"},
	})
	if err != nil || len(none) != 0 {
		t.Errorf("unknown UID: %v, %v", none, err)
	}
}

// readLogUntil reads the CRI log at path with opts until it holds every
// wanted text (the runtime writes it asynchronously) and returns it.
func readLogUntil(t *testing.T, path string, opts crilog.Options, want ...string) string {
	t.Helper()
	ctx := testContext(t)
	for {
		var buf bytes.Buffer
		err := crilog.ReadFile(ctx, path, opts, &buf)
		if err == nil {
			complete := true
			for _, w := range want {
				complete = complete && strings.Contains(buf.String(), w)
			}
			if complete {
				return buf.String()
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("log %s never held %q (last: %q, %v)", path, want, buf.String(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
