package critest

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// dial connects a raw CRI client to srv: the fake is tested on the wire.
func dial(t *testing.T, srv *Server) (runtimeapi.RuntimeServiceClient, runtimeapi.ImageServiceClient) {
	t.Helper()
	conn, err := grpc.NewClient(srv.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return runtimeapi.NewRuntimeServiceClient(conn), runtimeapi.NewImageServiceClient(conn)
}

func TestInjectN(t *testing.T) {
	srv := NewServer(t)
	rt, _ := dial(t, srv)
	ctx := context.Background()
	srv.InjectN("Version", status.Error(codes.Unavailable, "starting"), 2)
	for i := range 2 {
		if _, err := rt.Version(ctx, &runtimeapi.VersionRequest{}); status.Code(err) != codes.Unavailable || status.Convert(err).Message() != "starting" {
			t.Fatalf("call %d = %v, want the injected Unavailable", i, err)
		}
	}
	if _, err := rt.Version(ctx, &runtimeapi.VersionRequest{}); err != nil {
		t.Fatalf("third call = %v, want success after two injected failures", err)
	}
	if got := srv.Calls("Version"); got != 3 {
		t.Fatalf("Calls(Version) = %d, want 3", got)
	}
}

func TestInjectUntilClear(t *testing.T) {
	srv := NewServer(t)
	rt, _ := dial(t, srv)
	ctx := context.Background()
	srv.Inject("ListContainers", errors.New("plain error"))
	for range 3 {
		if _, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{}); status.Code(err) != codes.Unknown {
			t.Fatalf("ListContainers = %v, want Unknown for a non-status error", err)
		}
	}
	srv.Clear("ListContainers")
	if _, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{}); err != nil {
		t.Fatalf("after Clear: %v", err)
	}
}

func TestInjectUnknownMethodPanics(t *testing.T) {
	srv := NewServer(t)
	defer func() {
		if recover() == nil {
			t.Fatal("Inject of a method the CRI does not have did not panic")
		}
	}()
	srv.Inject("StopContainers", errors.New("typo"))
}

func TestDelayHoldsUntilReleased(t *testing.T) {
	srv := NewServer(t)
	rt, _ := dial(t, srv)
	release := make(chan struct{})
	arrived := srv.Delay("Status", release)
	done := make(chan error, 1)
	go func() {
		_, err := rt.Status(context.Background(), &runtimeapi.StatusRequest{})
		done <- err
	}()
	<-arrived
	select {
	case err := <-done:
		t.Fatalf("Status returned (%v) while held", err)
	default:
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestDelayEndsWithTheCallersContext(t *testing.T) {
	srv := NewServer(t)
	rt, _ := dial(t, srv)
	release := make(chan struct{})
	defer close(release)
	srv.Delay("Status", release)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := rt.Status(ctx, &runtimeapi.StatusRequest{}); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("held Status with a deadline = %v, want DeadlineExceeded", err)
	}
}

func TestExitContainerErrors(t *testing.T) {
	srv := NewServer(t)
	srv.PreloadImage("busybox")
	rt, _ := dial(t, srv)
	ctx := context.Background()
	if err := srv.ExitContainer("nope", 0, ""); err == nil {
		t.Fatal("ExitContainer of an unknown container succeeded")
	}
	sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "n", Uid: "u"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.GetPodSandboxId(), Config: &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: &runtimeapi.ImageSpec{Image: "busybox"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.ExitContainer(c.GetContainerId(), 1, ""); err == nil {
		t.Fatal("ExitContainer of a created (not running) container succeeded")
	}
	if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.GetContainerId()}); err != nil {
		t.Fatal(err)
	}
	if err := srv.ExitContainer(c.GetContainerId(), 137, "OOMKilled"); err != nil {
		t.Fatal(err)
	}
	st, err := rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.GetContainerId()})
	if err != nil || st.GetStatus().GetReason() != "OOMKilled" || st.GetStatus().GetExitCode() != 137 {
		t.Fatalf("status = %v, %v; want OOMKilled 137", st.GetStatus(), err)
	}
}

// Every unknown ID is NotFound, with containerd's words, on every call taking one.
func TestUnknownIDsAreNotFound(t *testing.T) {
	srv := NewServer(t)
	rt, _ := dial(t, srv)
	ctx := context.Background()
	for name, call := range map[string]func() error{
		"StopPodSandbox": func() error {
			_, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: "x"})
			return err
		},
		"RemovePodSandbox": func() error {
			_, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: "x"})
			return err
		},
		"PodSandboxStatus": func() error {
			_, err := rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: "x"})
			return err
		},
		"StartContainer": func() error {
			_, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: "x"})
			return err
		},
		"StopContainer": func() error {
			_, err := rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: "x"})
			return err
		},
		"RemoveContainer": func() error {
			_, err := rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: "x"})
			return err
		},
		"ContainerStatus": func() error {
			_, err := rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: "x"})
			return err
		},
		"ContainerStats": func() error {
			_, err := rt.ContainerStats(ctx, &runtimeapi.ContainerStatsRequest{ContainerId: "x"})
			return err
		},
		"ExecSync": func() error {
			_, err := rt.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: "x", Cmd: []string{"true"}})
			return err
		},
	} {
		if err := call(); status.Code(err) != codes.NotFound {
			t.Errorf("%s of an unknown ID = %v, want NotFound", name, err)
		}
	}
}

func TestNormalize(t *testing.T) {
	for _, tc := range []struct {
		in, name, digest string
		bad              bool
	}{
		{in: "busybox", name: "docker.io/library/busybox:latest"},
		{in: "busybox:1.36", name: "docker.io/library/busybox:1.36"},
		{in: "library/busybox", name: "docker.io/library/busybox:latest"},
		{in: "someone/tool:v2", name: "docker.io/someone/tool:v2"},
		{in: "127.0.0.1:5000/busybox", name: "127.0.0.1:5000/busybox:latest"},
		{in: "localhost/pause:3.9", name: "localhost/pause:3.9"},
		{in: "registry.k8s.io/pause@sha256:" + sixtyFour, name: "registry.k8s.io/pause", digest: "sha256:" + sixtyFour},
		{in: "", bad: true},
		{in: "Busybox", bad: true},
		{in: "busybox@sha256:short", bad: true},
		{in: "bad name", bad: true},
	} {
		name, digest, err := normalize(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("normalize(%q) = %q, want an error", tc.in, name)
			}
			continue
		}
		if err != nil || name != tc.name || digest != tc.digest {
			t.Errorf("normalize(%q) = %q, %q, %v; want %q, %q", tc.in, name, digest, err, tc.name, tc.digest)
		}
	}
}

const sixtyFour = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestEventsReachEverySubscriber(t *testing.T) {
	srv := NewServer(t)
	rt, _ := dial(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var streams []grpc.ServerStreamingClient[runtimeapi.ContainerEventResponse]
	for range 2 {
		s, err := rt.GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Header(); err != nil { // the fake registers the subscriber before sending headers
			t.Fatal(err)
		}
		streams = append(streams, s)
	}
	sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "n", Uid: "u"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range streams {
		ev, err := s.Recv()
		if err != nil || ev.GetContainerId() != sb.GetPodSandboxId() || ev.GetContainerEventType() != runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT {
			t.Fatalf("subscriber %d got %v, %v; want the sandbox's CREATED event", i, ev, err)
		}
	}
}
