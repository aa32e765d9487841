package critest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/cri/crilog"
)

func TestAppendLogWritesCRIRecords(t *testing.T) {
	srv := NewServer(t)
	srv.PreloadImage("busybox")
	rt, _ := dial(t, srv)
	ctx := context.Background()
	logDir := t.TempDir()
	sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "n", Uid: "u"}, LogDirectory: logDir,
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(logDir, "c"), 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.GetPodSandboxId(), Config: &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: &runtimeapi.ImageSpec{Image: "busybox"}, LogPath: "c/0.log",
	}})
	if err != nil {
		t.Fatal(err)
	}
	id := c.GetContainerId()
	if err := srv.AppendLog(id, runtimeapi.Stdout, "hello\nwor"); err != nil {
		t.Fatal(err)
	}
	if err := srv.AppendLog(id, runtimeapi.Stdout, "ld\n"); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := crilog.ReadFile(ctx, filepath.Join(logDir, "c", "0.log"), crilog.Options{}, &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "hello\nworld\n" {
		t.Fatalf("log read back = %q, want %q", out.String(), "hello\nworld\n")
	}
	if err := srv.AppendLog("nope", runtimeapi.Stdout, "x"); err == nil {
		t.Fatal("AppendLog to an unknown container succeeded")
	}
}
