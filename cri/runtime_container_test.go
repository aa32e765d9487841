package cri_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/cri"
	"berth/internal/errdefs"
)

func TestContainerLifecycle(t *testing.T) {
	srv, c := newClient(t, cri.Config{})
	ctx := testCtx(t)
	imageID := srv.AddImage("busybox:1.36")
	if _, err := c.PullImage(ctx, "busybox:1.36", nil, nil); err != nil {
		t.Fatal(err)
	}
	pc := podConfig("web")
	sb, err := c.RunPodSandbox(ctx, pc, "")
	if err != nil {
		t.Fatal(err)
	}
	id, err := c.CreateContainer(ctx, sb, containerConfig("app", "busybox:1.36"), pc)
	if err != nil {
		t.Fatal(err)
	}
	st := containerStatus(t, c, id)
	if st.GetState() != runtimeapi.ContainerState_CONTAINER_CREATED || st.GetCreatedAt() == 0 || st.GetStartedAt() != 0 ||
		st.GetImageRef() != imageID || st.GetLogPath() != pc.GetLogDirectory()+"/app/0.log" {
		t.Fatalf("status after create = %v, want CREATED with the image ID and the log path", st)
	}
	if _, err := c.CreateContainer(ctx, sb, containerConfig("app", "busybox:1.36"), pc); !errors.Is(err, errdefs.ErrAlreadyExists) {
		t.Fatalf("second CreateContainer with the same name and attempt = %v, want ErrAlreadyExists", err)
	}

	if err := c.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	st = containerStatus(t, c, id)
	if st.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING || st.GetStartedAt() < st.GetCreatedAt() {
		t.Fatalf("status after start = %v, want RUNNING with a start time", st)
	}
	if err := c.StartContainer(ctx, id); err == nil || !strings.Contains(err.Error(), "CONTAINER_RUNNING") {
		t.Fatalf("StartContainer of a running container = %v, want the runtime's state error", err)
	}

	if err := srv.ExitContainer(id, 2, ""); err != nil {
		t.Fatal(err)
	}
	st = containerStatus(t, c, id)
	if st.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED || st.GetExitCode() != 2 || st.GetReason() != "Error" || st.GetFinishedAt() < st.GetStartedAt() {
		t.Fatalf("status after exit 2 = %v, want EXITED, code 2, reason Error", st)
	}

	if err := c.RemoveContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ContainerStatus(ctx, id, false); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("ContainerStatus after remove = %v, want ErrNotFound", err)
	}
	stops, removes := srv.Calls("StopContainer"), srv.Calls("RemoveContainer")
	if err := c.StopContainer(ctx, id, time.Second); err != nil {
		t.Fatalf("StopContainer of a removed container = %v, want nil", err)
	}
	if err := c.RemoveContainer(ctx, id); err != nil {
		t.Fatalf("RemoveContainer of a removed container = %v, want nil", err)
	}
	if srv.Calls("StopContainer") != stops+1 || srv.Calls("RemoveContainer") != removes+1 {
		t.Fatal("idempotent stop/remove must still ask the runtime")
	}
}

func TestStopContainerKillsARunningContainer(t *testing.T) {
	srv, c := newClient(t, cri.Config{})
	srv.AddImage("busybox")
	ctx := testCtx(t)
	_, id := runPod(t, ctx, c, "p", "busybox")
	if err := c.StopContainer(ctx, id, 0); err != nil {
		t.Fatal(err)
	}
	if st := containerStatus(t, c, id); st.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED || st.GetExitCode() != 137 {
		t.Fatalf("status after stop = %v, want EXITED with 137", st)
	}
	// Stopping an exited container is done already.
	if err := c.StopContainer(ctx, id, 0); err != nil {
		t.Fatalf("StopContainer of an exited container = %v", err)
	}

	srv.SetStopResult(0, "")
	_, id2 := runPod(t, ctx, c, "q", "busybox")
	if err := c.StopContainer(ctx, id2, 1500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if got, ok := srv.LastStopTimeout(id2); !ok || got != 2 {
		t.Fatalf("runtime got StopContainer timeout %d (%v), want 2 (1.5s rounded up)", got, ok)
	}
	if st := containerStatus(t, c, id2); st.GetExitCode() != 0 || st.GetReason() != "Completed" {
		t.Fatalf("status after a graceful stop = %v, want exit 0, Completed", st)
	}
}

func TestStopPodSandboxStopsItsContainers(t *testing.T) {
	srv, c := newClient(t, cri.Config{})
	srv.AddImage("busybox")
	ctx := testCtx(t)
	sb, id := runPod(t, ctx, c, "p", "busybox")
	if err := c.StopPodSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	if st := containerStatus(t, c, id); st.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Fatalf("container after StopPodSandbox = %v, want EXITED", st.GetState())
	}
	if _, err := c.CreateContainer(ctx, sb, containerConfig("late", "busybox"), podConfig("p")); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("CreateContainer in a stopped sandbox = %v, want ErrNotFound (containerd 1.6 finds no sandbox task)", err)
	}
	if err := c.RemovePodSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ContainerStatus(ctx, id, false); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("container after RemovePodSandbox = %v, want ErrNotFound", err)
	}
}

func TestCreateContainerErrors(t *testing.T) {
	srv, c := newClient(t, cri.Config{})
	srv.AddImage("busybox")
	ctx := testCtx(t)
	pc := podConfig("p")
	sb, err := c.RunPodSandbox(ctx, pc, "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.CreateContainer(ctx, sb, containerConfig("app", "busybox"), pc)
	if !errors.Is(err, errdefs.ErrNotFound) || !strings.Contains(err.Error(), `cri CreateContainer "`+sb+`/app"`) {
		t.Fatalf("CreateContainer before the image is pulled = %v, want ErrNotFound naming the sandbox and container", err)
	}
	if _, err := c.CreateContainer(ctx, "nosuchsandbox", containerConfig("app", "busybox"), pc); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("CreateContainer in an unknown sandbox = %v, want ErrNotFound", err)
	}
	if _, err := c.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{}, pc); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("CreateContainer without metadata = %v, want ErrInvalidArgument", err)
	}
	if err := c.StartContainer(ctx, "nosuchcontainer"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("StartContainer of an unknown container = %v, want ErrNotFound", err)
	}
}

func TestRemoveContainerKillsARunningOne(t *testing.T) {
	srv, c := newClient(t, cri.Config{})
	srv.AddImage("busybox")
	ctx := testCtx(t)
	_, id := runPod(t, ctx, c, "p", "busybox")
	if err := c.RemoveContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.ListContainers(ctx, &runtimeapi.ContainerFilter{Id: id}); len(got) != 0 {
		t.Fatalf("container still listed after RemoveContainer: %v", got)
	}
}

func TestListContainersFilters(t *testing.T) {
	srv, c := newClient(t, cri.Config{})
	srv.AddImage("busybox")
	ctx := testCtx(t)
	sbA, running := runPod(t, ctx, c, "a", "busybox")
	pcB := podConfig("b")
	sbB, err := c.RunPodSandbox(ctx, pcB, "")
	if err != nil {
		t.Fatal(err)
	}
	created, err := c.CreateContainer(ctx, sbB, containerConfig("side", "busybox"), pcB)
	if err != nil {
		t.Fatal(err)
	}
	state := func(s runtimeapi.ContainerState) *runtimeapi.ContainerStateValue {
		return &runtimeapi.ContainerStateValue{State: s}
	}
	for _, tc := range []struct {
		name   string
		filter *runtimeapi.ContainerFilter
		want   []string
	}{
		{"all", nil, []string{running, created}},
		{"by id", &runtimeapi.ContainerFilter{Id: created}, []string{created}},
		{"unknown id", &runtimeapi.ContainerFilter{Id: "nope"}, nil},
		{"running", &runtimeapi.ContainerFilter{State: state(runtimeapi.ContainerState_CONTAINER_RUNNING)}, []string{running}},
		{"created", &runtimeapi.ContainerFilter{State: state(runtimeapi.ContainerState_CONTAINER_CREATED)}, []string{created}},
		{"exited", &runtimeapi.ContainerFilter{State: state(runtimeapi.ContainerState_CONTAINER_EXITED)}, nil},
		{"by sandbox", &runtimeapi.ContainerFilter{PodSandboxId: sbA}, []string{running}},
		{"by label", &runtimeapi.ContainerFilter{LabelSelector: map[string]string{cri.LabelContainerName: "side"}}, []string{created}},
		{"sandbox and label disagree", &runtimeapi.ContainerFilter{PodSandboxId: sbA, LabelSelector: map[string]string{cri.LabelContainerName: "side"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			items, err := c.ListContainers(ctx, tc.filter)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(items); !sameSet(got, tc.want) {
				t.Fatalf("ListContainers(%v) = %v, want %v", tc.filter, got, tc.want)
			}
		})
	}
}

func TestUpdateResourcesReopenLogAndStats(t *testing.T) {
	srv, c := newClient(t, cri.Config{})
	srv.AddImage("busybox")
	ctx := testCtx(t)
	_, id := runPod(t, ctx, c, "p", "busybox")
	res := &runtimeapi.LinuxContainerResources{CpuShares: 512, MemoryLimitInBytes: 64 << 20}
	if err := c.UpdateContainerResources(ctx, id, res); err != nil {
		t.Fatal(err)
	}
	if got := containerStatus(t, c, id).GetResources().GetLinux(); got.GetCpuShares() != 512 || got.GetMemoryLimitInBytes() != 64<<20 {
		t.Fatalf("resources after update = %v", got)
	}
	if err := c.ReopenContainerLog(ctx, id); err != nil {
		t.Fatal(err)
	}
	st, err := c.ContainerStats(ctx, id)
	if err != nil || st.GetAttributes().GetId() != id {
		t.Fatalf("ContainerStats = %v, %v", st, err)
	}
	all, err := c.ListContainerStats(ctx, nil)
	if err != nil || len(all) != 1 {
		t.Fatalf("ListContainerStats = %v, %v; want one", all, err)
	}
	if err := c.StopContainer(ctx, id, 0); err != nil {
		t.Fatal(err)
	}
	if err := c.ReopenContainerLog(ctx, id); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("ReopenContainerLog of a stopped container = %v, want the runtime's 'not running'", err)
	}
	if err := c.UpdateContainerResources(ctx, "nope", res); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("UpdateContainerResources of an unknown container = %v, want ErrNotFound", err)
	}
}

func containerStatus(t *testing.T, c *cri.Client, id string) *runtimeapi.ContainerStatus {
	t.Helper()
	resp, err := c.ContainerStatus(testCtx(t), id, false)
	if err != nil {
		t.Fatalf("ContainerStatus(%s): %v", id, err)
	}
	return resp.GetStatus()
}
