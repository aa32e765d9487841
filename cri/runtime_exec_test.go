package cri_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/cri"
	"berth/internal/errdefs"
)

func TestExecSyncReturnsOutputAndExitCode(t *testing.T) {
	srv, c := newClient(t, cri.Config{})
	srv.AddImage("busybox")
	ctx := testCtx(t)
	_, id := runPod(t, ctx, c, "p", "busybox")
	var gotID string
	var gotCmd []string
	srv.SetExecHandler(func(_ context.Context, cid string, cmd []string) ([]byte, []byte, int32, error) {
		gotID, gotCmd = cid, cmd
		return []byte("out\n"), []byte("err\n"), 3, nil
	})
	stdout, stderr, code, err := c.ExecSync(ctx, id, []string{"sh", "-c", "exit 3"}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if string(stdout) != "out\n" || string(stderr) != "err\n" || code != 3 {
		t.Fatalf("ExecSync = %q, %q, %d; want out, err, 3", stdout, stderr, code)
	}
	if gotID != id || strings.Join(gotCmd, " ") != "sh -c exit 3" {
		t.Fatalf("runtime got exec %q in %s", gotCmd, gotID)
	}
}

func TestExecSyncTimeout(t *testing.T) {
	srv, c := newClient(t, cri.Config{})
	srv.AddImage("busybox")
	ctx := testCtx(t)
	_, id := runPod(t, ctx, c, "p", "busybox")
	srv.SetExecHandler(func(ctx context.Context, _ string, _ []string) ([]byte, []byte, int32, error) {
		<-ctx.Done() // a command that never ends by itself
		return nil, nil, 0, ctx.Err()
	})
	_, _, _, err := c.ExecSync(ctx, id, []string{"sleep", "1000"}, time.Second)
	if !errors.Is(err, errdefs.ErrDeadlineExceeded) || !strings.Contains(err.Error(), "timeout 1s exceeded") {
		t.Fatalf("ExecSync past its timeout = %v, want ErrDeadlineExceeded with the runtime's message", err)
	}
}

func TestExecSyncInStoppedContainer(t *testing.T) {
	srv, c := newClient(t, cri.Config{})
	srv.AddImage("busybox")
	ctx := testCtx(t)
	_, id := runPod(t, ctx, c, "p", "busybox")
	if err := srv.ExitContainer(id, 0, ""); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := c.ExecSync(ctx, id, []string{"true"}, 0); err == nil || !strings.Contains(err.Error(), "CONTAINER_EXITED") {
		t.Fatalf("ExecSync in an exited container = %v, want the runtime's state error", err)
	}
	if _, _, _, err := c.ExecSync(ctx, "nope", []string{"true"}, 0); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("ExecSync in an unknown container = %v, want ErrNotFound", err)
	}
}

func TestStreamingCallsReturnURLs(t *testing.T) {
	srv, c := newClient(t, cri.Config{})
	srv.AddImage("busybox")
	ctx := testCtx(t)
	sb, id := runPod(t, ctx, c, "p", "busybox")
	ex, err := c.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"sh"}, Stdout: true})
	if err != nil || !strings.HasPrefix(ex.GetUrl(), "http://") {
		t.Fatalf("Exec = %v, %v; want a URL", ex, err)
	}
	at, err := c.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: id, Stdout: true})
	if err != nil || !strings.HasPrefix(at.GetUrl(), "http://") {
		t.Fatalf("Attach = %v, %v; want a URL", at, err)
	}
	pf, err := c.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: sb, Port: []int32{80}})
	if err != nil || !strings.HasPrefix(pf.GetUrl(), "http://") {
		t.Fatalf("PortForward = %v, %v; want a URL", pf, err)
	}
	if _, err := c.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"sh"}}); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("Exec with no stream = %v, want ErrInvalidArgument", err)
	}
	if _, err := c.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: "nope"}); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("PortForward to an unknown sandbox = %v, want ErrNotFound", err)
	}
}
