package cri_test

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/cri"
	"berth/cri/critest"
	"berth/internal/errdefs"
)

func TestNewHandshakeKeepsRuntimeVersion(t *testing.T) {
	_, c := newClient(t, cri.Config{}, critest.WithRuntime("containerd", "v1.6.20"))
	v := c.RuntimeVersion()
	if v.GetRuntimeName() != "containerd" || v.GetRuntimeVersion() != "v1.6.20" || v.GetRuntimeApiVersion() != "v1" {
		t.Fatalf("RuntimeVersion() = %v, want containerd v1.6.20 speaking v1", v)
	}
	again, err := c.Version(testCtx(t))
	if err != nil || again.GetRuntimeName() != "containerd" {
		t.Fatalf("Version() = %v, %v", again, err)
	}
}

func TestNewAcceptsBareSocketPath(t *testing.T) {
	srv := critest.NewServer(t)
	path := strings.TrimPrefix(srv.Endpoint(), "unix://")
	c, err := cri.New(testCtx(t), cri.Config{Endpoint: path})
	if err != nil {
		t.Fatalf("cri.New(%q): %v", path, err)
	}
	defer c.Close()
	if _, err := c.Status(testCtx(t), false); err != nil {
		t.Fatalf("Status over a bare path endpoint: %v", err)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  cri.Config
		want string
	}{
		{"no endpoint", cri.Config{}, "Endpoint: must be set"},
		{"tcp endpoint", cri.Config{Endpoint: "tcp://127.0.0.1:1234"}, "only unix sockets"},
		{"empty unix path", cri.Config{Endpoint: "unix://"}, "no socket path"},
		{"negative connect timeout", cri.Config{Endpoint: "/x.sock", ConnectTimeout: -time.Second}, "ConnectTimeout"},
		{"negative call timeout", cri.Config{Endpoint: "/x.sock", CallTimeout: -time.Second}, "CallTimeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cri.New(testCtx(t), tc.cfg)
			if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("cri.New(%+v) = %v, want ErrInvalidArgument mentioning %q", tc.cfg, err, tc.want)
			}
		})
	}
}

// A gRPC server that serves only the image service does not speak CRI v1's runtime service.
func TestNewRejectsRuntimeNotSpeakingV1(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "old.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	runtimeapi.RegisterImageServiceServer(gs, runtimeapi.UnimplementedImageServiceServer{})
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)

	_, err = cri.New(testCtx(t), cri.Config{Endpoint: "unix://" + sock})
	if !errors.Is(err, errdefs.ErrUnimplemented) {
		t.Fatalf("cri.New against a non-v1 runtime = %v, want ErrUnimplemented", err)
	}
	if !strings.Contains(err.Error(), "does not speak CRI v1") || !strings.Contains(err.Error(), sock) {
		t.Fatalf("error %q should say the runtime at %s does not speak CRI v1", err, sock)
	}
}

func TestNewFailsWhenNobodyListens(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "absent.sock")
	_, err := cri.New(testCtx(t), cri.Config{Endpoint: sock, ConnectTimeout: 200 * time.Millisecond})
	if !errors.Is(err, errdefs.ErrDeadlineExceeded) && !errors.Is(err, errdefs.ErrUnavailable) {
		t.Fatalf("cri.New with no listener = %v, want ErrDeadlineExceeded or ErrUnavailable", err)
	}
	if !strings.Contains(err.Error(), "cri Version") {
		t.Fatalf("error %q should name the Version handshake", err)
	}
}

func TestStatusReportsConditions(t *testing.T) {
	srv, c := newClient(t, cri.Config{})
	ctx := testCtx(t)
	srv.SetCondition(runtimeapi.NetworkReady, false, "NetworkPluginNotReady", "cni config uninitialized")
	st, err := c.Status(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*runtimeapi.RuntimeCondition{}
	for _, cond := range st.GetStatus().GetConditions() {
		got[cond.GetType()] = cond
	}
	if !got[runtimeapi.RuntimeReady].GetStatus() {
		t.Errorf("RuntimeReady = %v, want true", got[runtimeapi.RuntimeReady])
	}
	if n := got[runtimeapi.NetworkReady]; n.GetStatus() || n.GetReason() != "NetworkPluginNotReady" || n.GetMessage() != "cni config uninitialized" {
		t.Errorf("NetworkReady = %v, want false with the reason and message set", n)
	}
	if len(st.GetInfo()) == 0 {
		t.Errorf("verbose Status returned no info")
	}
}

func TestUpdateRuntimeConfigSetsPodCIDR(t *testing.T) {
	srv, c := newClient(t, cri.Config{})
	if err := c.UpdateRuntimeConfig(testCtx(t), "10.244.1.0/24"); err != nil {
		t.Fatal(err)
	}
	if got := srv.PodCIDR(); got != "10.244.1.0/24" {
		t.Fatalf("runtime pod CIDR = %q, want 10.244.1.0/24", got)
	}
}

func TestCallTimeoutBoundsUnaryCalls(t *testing.T) {
	srv, c := newClient(t, cri.Config{CallTimeout: 100 * time.Millisecond})
	release := make(chan struct{})
	defer close(release)
	arrived := srv.Delay("Status", release)
	_, err := c.Status(testCtx(t), false)
	if !errors.Is(err, errdefs.ErrDeadlineExceeded) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Status held past CallTimeout = %v, want ErrDeadlineExceeded", err)
	}
	select {
	case <-arrived:
	default:
		t.Fatal("the delayed Status call never reached the runtime")
	}
}

func TestCallerDeadlineShorterThanCallTimeoutWins(t *testing.T) {
	srv, c := newClient(t, cri.Config{CallTimeout: time.Hour})
	release := make(chan struct{})
	defer close(release)
	srv.Delay("ListContainers", release)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.ListContainers(ctx, nil)
	if !errors.Is(err, errdefs.ErrDeadlineExceeded) {
		t.Fatalf("ListContainers with a short ctx = %v, want ErrDeadlineExceeded", err)
	}
}

// PullImage is bounded by its context only: a pull outlasting CallTimeout succeeds.
func TestPullImageIsNotBoundByCallTimeout(t *testing.T) {
	srv, c := newClient(t, cri.Config{CallTimeout: 100 * time.Millisecond})
	srv.AddImage("busybox")
	release := make(chan struct{})
	pullArrived := srv.Delay("PullImage", release)
	done := make(chan error, 1)
	go func() {
		_, err := c.PullImage(context.Background(), "busybox", nil, nil)
		done <- err
	}()
	<-pullArrived
	// Use a call that times out as the clock: once it has, more than
	// CallTimeout has passed since the pull reached the runtime.
	statusRelease := make(chan struct{})
	defer close(statusRelease)
	srv.Delay("Status", statusRelease)
	if _, err := c.Status(context.Background(), false); !errors.Is(err, errdefs.ErrDeadlineExceeded) {
		t.Fatalf("Status used as a clock = %v, want ErrDeadlineExceeded", err)
	}
	select {
	case err := <-done:
		t.Fatalf("PullImage ended (%v) before it was released: CallTimeout cut it", err)
	default:
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("PullImage after release: %v", err)
	}
}

// Many pods at once through one client: the fake and the client are safe for concurrent use.
func TestConcurrentPods(t *testing.T) {
	srv, c := newClient(t, cri.Config{})
	srv.AddImage("busybox")
	ctx := testCtx(t)
	const n = 40
	errs := make(chan error, n)
	for i := range n {
		go func() {
			name := "pod-" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)
			if _, err := c.PullImage(ctx, "busybox", nil, nil); err != nil {
				errs <- err
				return
			}
			pc := podConfig(name)
			sb, err := c.RunPodSandbox(ctx, pc, "")
			if err != nil {
				errs <- err
				return
			}
			ct, err := c.CreateContainer(ctx, sb, containerConfig("main", "busybox"), pc)
			if err == nil {
				err = c.StartContainer(ctx, ct)
			}
			if err == nil {
				err = c.StopPodSandbox(ctx, sb)
			}
			if err == nil {
				err = c.RemovePodSandbox(ctx, sb)
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if got, err := c.ListContainers(ctx, nil); err != nil || len(got) != 0 {
		t.Fatalf("after removing every pod ListContainers = %d containers, %v; want none", len(got), err)
	}
}

func BenchmarkPodLifecycle(b *testing.B) {
	srv := critest.NewServer(b)
	srv.AddImage("busybox")
	ctx := context.Background()
	c, err := cri.New(ctx, cri.Config{Endpoint: srv.Endpoint()})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.ResetTimer()
	for i := range b.N {
		pc := podConfig("bench")
		pc.Metadata.Attempt = uint32(i)
		if _, err := c.PullImage(ctx, "busybox", nil, nil); err != nil {
			b.Fatal(err)
		}
		sb, err := c.RunPodSandbox(ctx, pc, "")
		if err != nil {
			b.Fatal(err)
		}
		ct, err := c.CreateContainer(ctx, sb, containerConfig("main", "busybox"), pc)
		if err != nil {
			b.Fatal(err)
		}
		if err := c.StartContainer(ctx, ct); err != nil {
			b.Fatal(err)
		}
		if _, err := c.ContainerStatus(ctx, ct, false); err != nil {
			b.Fatal(err)
		}
		if err := c.StopPodSandbox(ctx, sb); err != nil {
			b.Fatal(err)
		}
		if err := c.RemovePodSandbox(ctx, sb); err != nil {
			b.Fatal(err)
		}
	}
}
