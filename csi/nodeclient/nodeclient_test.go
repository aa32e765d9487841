package nodeclient_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"

	"berth/csi/driver"
	"berth/csi/internal/csitest"
	"berth/csi/internal/mounts"
	"berth/csi/nodeclient"
	"berth/internal/errdefs"
)

func TestPathLayoutIsTheKubelets(t *testing.T) {
	sum := sha256.Sum256([]byte("vol-1"))
	want := "/var/lib/kubelet/plugins/kubernetes.io/csi/csi-local.berth.dev/" + hex.EncodeToString(sum[:]) + "/globalmount"
	if got := nodeclient.StagingPath("/var/lib/kubelet", "csi-local.berth.dev", "vol-1"); got != want {
		t.Errorf("StagingPath = %s, want %s", got, want)
	}
	want = "/var/lib/kubelet/pods/0a1b-uid/volumes/kubernetes.io~csi/pvc-123/mount"
	if got := nodeclient.TargetPath("/var/lib/kubelet", "0a1b-uid", "pvc-123"); got != want {
		t.Errorf("TargetPath = %s, want %s", got, want)
	}
}

// createVolume creates a volume through the driver's controller service.
func createVolume(t *testing.T, d *driver.Driver, name, fsType string, size int64) string {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+d.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	resp, err := csi.NewControllerClient(conn).CreateVolume(context.Background(), &csi.CreateVolumeRequest{
		Name: name,
		VolumeCapabilities: []*csi.VolumeCapability{{
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: fsType}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		}},
		CapacityRange: &csi.CapacityRange{RequiredBytes: size},
	})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetVolume().GetVolumeId()
}

func TestKubeletFlowAgainstCSILocal(t *testing.T) {
	csitest.RequireMounts(t)
	dir := t.TempDir()
	csitest.CheckNoMounts(t, dir)
	d := csitest.StartDriver(t, driver.Config{RootDir: filepath.Join(dir, "driver"), NodeID: "node-a", MaxVolumesPerNode: 7})
	c, err := nodeclient.New(nodeclient.Config{Driver: d.Name(), Endpoint: "unix://" + d.Endpoint()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()

	info, err := c.NodeGetInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.NodeID != "node-a" || info.MaxVolumesPerNode != 7 || info.AccessibleTopology[d.TopologyKey()] != "node-a" {
		t.Errorf("NodeGetInfo = %+v", info)
	}
	caps, err := c.NodeGetCapabilities(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !caps.StageUnstage || !caps.GetVolumeStats || caps.ExpandVolume {
		t.Errorf("NodeGetCapabilities = %+v, want stage/unstage and stats only", caps)
	}

	for _, tc := range []struct {
		name, fsType string
		size         int64
	}{
		{"directory", "", 0},
		{"ext4", "ext4", 24 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			agentRoot := filepath.Join(dir, "agent-"+tc.name)
			vol := nodeclient.Volume{Handle: createVolume(t, d, "pv-"+tc.name, tc.fsType, tc.size), FSType: tc.fsType}

			staging, err := c.MountDevice(ctx, agentRoot, vol)
			if err != nil {
				t.Fatalf("MountDevice: %v", err)
			}
			if staging != nodeclient.StagingPath(agentRoot, d.Name(), vol.Handle) {
				t.Errorf("staged at %s, want the kubelet's staging path", staging)
			}
			if data, err := nodeclient.ReadVolumeData(filepath.Dir(staging)); err != nil || data.VolumeHandle != vol.Handle || data.DriverName != d.Name() {
				t.Errorf("staging vol_data.json = %+v, %v", data, err)
			}
			target, err := c.SetUp(ctx, agentRoot, nodeclient.PodVolume{PodUID: "pod-uid-1", Name: "pv-" + tc.name}, vol)
			if err != nil {
				t.Fatalf("SetUp: %v", err)
			}
			if target != nodeclient.TargetPath(agentRoot, "pod-uid-1", "pv-"+tc.name) {
				t.Errorf("published at %s, want the kubelet's target path", target)
			}
			if m, ok, _ := mounts.Find(target); !ok {
				t.Fatalf("nothing mounted at %s", target)
			} else if tc.fsType == "ext4" && m.FSType != "ext4" {
				t.Errorf("target is %s, want ext4", m.FSType)
			}
			// A second pod shares the staged volume.
			target2, err := c.SetUp(ctx, agentRoot, nodeclient.PodVolume{PodUID: "pod-uid-2", Name: "pv-" + tc.name}, vol)
			if err != nil {
				t.Fatalf("SetUp second pod: %v", err)
			}
			if err := os.WriteFile(filepath.Join(target, "greeting"), []byte("hello"), 0o644); err != nil {
				t.Fatal(err)
			}
			if got, err := os.ReadFile(filepath.Join(target2, "greeting")); err != nil || string(got) != "hello" {
				t.Errorf("second pod reads %q, %v", got, err)
			}
			stats, err := c.NodeGetVolumeStats(ctx, vol.Handle, target)
			if err != nil {
				t.Fatal(err)
			}
			if !stats.HasBytes || !stats.HasInodes || stats.CapacityBytes <= 0 || stats.InodesUsed <= 0 {
				t.Errorf("stats = %+v", stats)
			}
			if tc.size > 0 && stats.CapacityBytes > tc.size {
				t.Errorf("capacity %d exceeds the volume's %d", stats.CapacityBytes, tc.size)
			}

			// Unstaging while published is refused, and says so by class.
			err = c.UnmountDevice(ctx, agentRoot, vol.Handle)
			if !errors.Is(err, errdefs.ErrConflict) {
				t.Errorf("UnmountDevice while published: %v, want ErrConflict", err)
			}

			for _, pod := range []string{"pod-uid-1", "pod-uid-2"} {
				if err := c.TearDown(ctx, agentRoot, pod, "pv-"+tc.name, vol.Handle); err != nil {
					t.Fatalf("TearDown %s: %v", pod, err)
				}
				if _, err := os.Stat(filepath.Join(agentRoot, "pods", pod, "volumes", "kubernetes.io~csi", "pv-"+tc.name)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("pod volume dir left after TearDown: %v", err)
				}
			}
			// Tearing down again is harmless.
			if err := c.TearDown(ctx, agentRoot, "pod-uid-1", "pv-"+tc.name, vol.Handle); err != nil {
				t.Errorf("repeat TearDown: %v", err)
			}
			if err := c.UnmountDevice(ctx, agentRoot, vol.Handle); err != nil {
				t.Fatalf("UnmountDevice: %v", err)
			}
			if _, err := os.Stat(filepath.Dir(staging)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("staging dir left after UnmountDevice: %v", err)
			}
			if left, _ := mounts.Under(agentRoot); len(left) != 0 {
				t.Errorf("mounts left: %v", left)
			}
			if loops, _ := csitest.LoopDevicesUnder(dir); len(loops) != 0 {
				t.Errorf("loop devices left: %v", loops)
			}
		})
	}
}

func TestErrorsCarryTheDriversCodeAsAClass(t *testing.T) {
	dir := t.TempDir()
	d := csitest.StartDriver(t, driver.Config{RootDir: filepath.Join(dir, "driver"), NodeID: "node-a"})
	c, err := nodeclient.New(nodeclient.Config{Driver: d.Name(), Endpoint: d.Endpoint()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()

	err = c.NodeStageVolume(ctx, nodeclient.Volume{Handle: "0123456789abcdef0123456789abcdef"}, filepath.Join(dir, "staging"))
	var cerr *nodeclient.Error
	if !errors.Is(err, errdefs.ErrNotFound) || !errors.As(err, &cerr) || cerr.Code != codes.NotFound || cerr.Op != "NodeStageVolume" {
		t.Errorf("stage of an unknown volume: %v; want ErrNotFound with code NotFound", err)
	}

	handle := createVolume(t, d, "unstaged", "", 0)
	err = c.NodePublishVolume(ctx, nodeclient.Volume{Handle: handle}, filepath.Join(dir, "staging"), filepath.Join(dir, "target"))
	if !errors.Is(err, errdefs.ErrConflict) || !errors.As(err, &cerr) || cerr.Code != codes.FailedPrecondition {
		t.Errorf("publish of an unstaged volume: %v; want ErrConflict with code FailedPrecondition", err)
	}
	err = c.NodePublishVolume(ctx, nodeclient.Volume{Handle: handle}, "", "relative/target")
	if !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("relative target: %v; want ErrInvalidArgument", err)
	}

	gone, err := nodeclient.New(nodeclient.Config{Driver: "gone.example.com", Endpoint: filepath.Join(dir, "nobody.sock"), CallTimeout: 2e9})
	if err != nil {
		t.Fatal(err)
	}
	defer gone.Close()
	if _, err := gone.NodeGetInfo(ctx); !errors.Is(err, errdefs.ErrUnavailable) && !errors.Is(err, errdefs.ErrDeadlineExceeded) {
		t.Errorf("NodeGetInfo on a missing socket: %v; want ErrUnavailable", err)
	}

	for _, cfg := range []nodeclient.Config{
		{Endpoint: "/x.sock"},
		{Driver: "d", Endpoint: "tcp://127.0.0.1:1"},
		{Driver: "d", Endpoint: "rel.sock"},
	} {
		if _, err := nodeclient.New(cfg); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("New(%+v) = %v, want ErrInvalidArgument", cfg, err)
		}
	}
}

func TestEphemeralInlineVolume(t *testing.T) {
	csitest.RequireMounts(t)
	dir := t.TempDir()
	csitest.CheckNoMounts(t, dir)
	driverRoot := filepath.Join(dir, "driver")
	d := csitest.StartDriver(t, driver.Config{RootDir: driverRoot, NodeID: "node-a"})
	c, err := nodeclient.New(nodeclient.Config{Driver: d.Name(), Endpoint: d.Endpoint()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	agentRoot := filepath.Join(dir, "agent")

	handle := nodeclient.EphemeralVolumeHandle("pod-uid-9", "scratch")
	sum := sha256.Sum256([]byte("pod-uid-9scratch"))
	if handle != "csi-"+hex.EncodeToString(sum[:]) {
		t.Errorf("ephemeral handle %s is not the kubelet's csi-<sha256(podUID+volumeName)>", handle)
	}
	target, err := c.SetUp(ctx, agentRoot, nodeclient.PodVolume{PodUID: "pod-uid-9", Name: "scratch", Ephemeral: true}, nodeclient.Volume{Handle: handle})
	if err != nil {
		t.Fatalf("SetUp: %v", err)
	}
	if err := os.WriteFile(filepath.Join(target, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, err := nodeclient.ReadVolumeData(filepath.Dir(target)); err != nil || data.LifecycleMode != "Ephemeral" || data.SpecVolumeID != "scratch" {
		t.Errorf("vol_data.json = %+v, %v", data, err)
	}
	if _, err := c.NodeGetVolumeStats(ctx, handle, target); err != nil {
		t.Errorf("stats of the ephemeral volume: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(driverRoot, "volumes")); len(entries) != 1 {
		t.Errorf("driver volumes while published: %d, want 1", len(entries))
	}
	if err := c.TearDown(ctx, agentRoot, "pod-uid-9", "scratch", handle); err != nil {
		t.Fatalf("TearDown: %v", err)
	}
	// The ephemeral volume goes with its last publication.
	for _, sub := range []string{"volumes", "state"} {
		if entries, _ := os.ReadDir(filepath.Join(driverRoot, sub)); len(entries) != 0 {
			t.Errorf("driver %s after TearDown: %v, want empty", sub, entries)
		}
	}
	if _, err := os.Stat(filepath.Dir(target)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pod volume dir left: %v", err)
	}
}
