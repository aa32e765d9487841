package podstate

import (
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/cri"
)

func TestContainerFromCRIReadsKubeletAnnotations(t *testing.T) {
	c := &runtimeapi.Container{
		Id: "c1", PodSandboxId: "s1", Metadata: &runtimeapi.ContainerMetadata{Name: "meta-name"},
		State: runtimeapi.ContainerState_CONTAINER_RUNNING, CreatedAt: 100,
		Labels: map[string]string{cri.LabelContainerName: "app"},
		Annotations: map[string]string{
			cri.AnnotationContainerHash: "ff", cri.AnnotationContainerRestartCount: "3",
			cri.AnnotationPodTerminationGracePeriod: "7", cri.AnnotationContainerTerminationMessagePath: "/dev/termination-log",
		},
	}
	got := ContainerFromCRI(c, nil)
	if got.Name != "app" || got.Hash != 0xff || got.RestartCount != 3 || got.State != ContainerRunning ||
		got.GracePeriod == nil || *got.GracePeriod != 7 || got.TerminationMessagePath != "/dev/termination-log" || !got.CreatedAt.Equal(time.Unix(0, 100)) {
		t.Fatalf("from list: %+v", got)
	}
	st := &runtimeapi.ContainerStatus{
		State: runtimeapi.ContainerState_CONTAINER_EXITED, StartedAt: 200, FinishedAt: 300, ExitCode: 137, Reason: "OOMKilled",
		Labels: c.Labels, Annotations: c.Annotations, ImageRef: "sha256:x", LogPath: "/logs/app/3.log",
	}
	got = ContainerFromCRI(c, st)
	if got.State != ContainerExited || got.ExitCode != 137 || got.Reason != "OOMKilled" || got.ImageRef != "sha256:x" ||
		!got.FinishedAt.Equal(time.Unix(0, 300)) || got.LogPath != "/logs/app/3.log" {
		t.Fatalf("from status: %+v", got)
	}
}

func TestSandboxFromCRI(t *testing.T) {
	s := &runtimeapi.PodSandbox{Id: "s1", Metadata: &runtimeapi.PodSandboxMetadata{Attempt: 2}, State: runtimeapi.PodSandboxState_SANDBOX_READY}
	if got := SandboxFromCRI(s, nil); !got.Ready || got.Attempt != 2 || len(got.IPs) != 0 {
		t.Fatalf("from list: %+v", got)
	}
	st := &runtimeapi.PodSandboxStatus{
		State:   runtimeapi.PodSandboxState_SANDBOX_NOTREADY,
		Network: &runtimeapi.PodSandboxNetworkStatus{Ip: "10.0.0.2", AdditionalIps: []*runtimeapi.PodIP{{Ip: "fd00::2"}}},
		Linux:   &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}}},
	}
	got := SandboxFromCRI(s, st)
	if got.Ready || !got.HostNetwork || len(got.IPs) != 2 || got.IPs[0] != "10.0.0.2" {
		t.Fatalf("from status: %+v", got)
	}
}

func TestLatestAndPrevious(t *testing.T) {
	p := &Pod{Containers: []Container{
		{ID: "a0", Name: "a", CreatedAt: time.Unix(1, 0), State: ContainerExited},
		{ID: "b0", Name: "b", CreatedAt: time.Unix(2, 0), State: ContainerUnknown},
		{ID: "a1", Name: "a", CreatedAt: time.Unix(3, 0), State: ContainerRunning},
	}, Sandboxes: []Sandbox{{ID: "s0", CreatedAt: time.Unix(1, 0)}, {ID: "s1", CreatedAt: time.Unix(2, 0)}}}
	p.Sort()
	if p.Latest("a").ID != "a1" || p.Previous("a").ID != "a0" || p.Previous("b") != nil || p.Latest("c") != nil {
		t.Fatalf("Latest/Previous wrong: %+v", p.Containers)
	}
	if p.LatestSandbox().ID != "s1" {
		t.Fatalf("LatestSandbox %s", p.LatestSandbox().ID)
	}
	if r := p.Running(); len(r) != 2 {
		t.Fatalf("Running = %v, want the running and the unknown one", r)
	}
	var nilPod *Pod
	if nilPod.Latest("a") != nil || nilPod.LatestSandbox() != nil {
		t.Fatal("nil pod")
	}
}
