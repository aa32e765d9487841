package driver_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"berth/csi/driver"
	"berth/csi/internal/csitest"
	"berth/csi/internal/mounts"
	"berth/internal/errdefs"
)

type clients struct {
	csi.IdentityClient
	csi.ControllerClient
	csi.NodeClient
}

func dial(t *testing.T, d *driver.Driver) clients {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+d.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return clients{csi.NewIdentityClient(conn), csi.NewControllerClient(conn), csi.NewNodeClient(conn)}
}

func mountCap(fsType string, mode csi.VolumeCapability_AccessMode_Mode) *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: fsType}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode},
	}
}

var rwo = csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER

func wantCode(t *testing.T, err error, code codes.Code) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("got %v, want code %s", err, code)
	}
}

// stagePublish stages and publishes vol under dir and returns (staging, target).
func stagePublish(t *testing.T, c clients, dir, volID string, vc *csi.VolumeCapability, readOnly bool) (string, string) {
	t.Helper()
	ctx := context.Background()
	staging, target := filepath.Join(dir, "staging"), filepath.Join(dir, "pod", "mount")
	if _, err := c.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: volID, StagingTargetPath: staging, VolumeCapability: vc}); err != nil {
		t.Fatalf("NodeStageVolume: %v", err)
	}
	if _, err := c.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: volID, StagingTargetPath: staging, TargetPath: target, VolumeCapability: vc, Readonly: readOnly}); err != nil {
		t.Fatalf("NodePublishVolume: %v", err)
	}
	return staging, target
}

func unpublishUnstage(t *testing.T, c clients, volID, staging, target string) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: volID, TargetPath: target}); err != nil {
		t.Fatalf("NodeUnpublishVolume: %v", err)
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("target %s still exists after unpublish (err %v)", target, err)
	}
	if _, err := c.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: volID, StagingTargetPath: staging}); err != nil {
		t.Fatalf("NodeUnstageVolume: %v", err)
	}
}

func TestExt4VolumeIsLoopMountedAndEnforcesCapacity(t *testing.T) {
	csitest.RequireMounts(t)
	dir := t.TempDir()
	csitest.CheckNoMounts(t, dir)
	d := csitest.StartDriver(t, driver.Config{RootDir: filepath.Join(dir, "root"), NodeID: "n1"})
	c := dial(t, d)
	ctx := context.Background()
	vc := mountCap("ext4", rwo)

	resp, err := c.CreateVolume(ctx, &csi.CreateVolumeRequest{
		Name: "small", VolumeCapabilities: []*csi.VolumeCapability{vc},
		CapacityRange: &csi.CapacityRange{RequiredBytes: 20 << 20},
	})
	if err != nil {
		t.Fatal(err)
	}
	vol := resp.GetVolume()
	if vol.GetCapacityBytes() != 20<<20 {
		t.Errorf("capacity %d, want %d", vol.GetCapacityBytes(), 20<<20)
	}
	staging, target := stagePublish(t, c, dir, vol.GetVolumeId(), vc, false)

	m, ok, err := mounts.Find(staging)
	if err != nil || !ok {
		t.Fatalf("staging path not mounted (ok=%v, err=%v)", ok, err)
	}
	if m.FSType != "ext4" || !strings.HasPrefix(m.Source, "/dev/loop") {
		t.Errorf("staging mount is %s from %s, want ext4 from a loop device", m.FSType, m.Source)
	}
	loops, err := csitest.LoopDevicesUnder(dir)
	if err != nil || len(loops) != 1 {
		t.Errorf("loop devices backing the volume: %v (err %v), want exactly one", loops, err)
	}

	// The capacity is enforced: 32 MiB do not fit in a 20 MiB filesystem.
	err = os.WriteFile(filepath.Join(target, "big"), make([]byte, 32<<20), 0o644)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("writing 32 MiB into a 20 MiB volume: got %v, want ENOSPC", err)
	}
	if err := os.Remove(filepath.Join(target, "big")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(target, "hello"), []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(staging, "hello")); err != nil || string(got) != "hi" {
		t.Errorf("file written through the target, read from staging: %q, %v", got, err)
	}

	stats, err := c.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: vol.GetVolumeId(), VolumePath: target})
	if err != nil {
		t.Fatal(err)
	}
	var bytesUsage, inodes *csi.VolumeUsage
	for _, u := range stats.GetUsage() {
		switch u.GetUnit() {
		case csi.VolumeUsage_BYTES:
			bytesUsage = u
		case csi.VolumeUsage_INODES:
			inodes = u
		}
	}
	if bytesUsage == nil || bytesUsage.GetTotal() <= 0 || bytesUsage.GetTotal() > 20<<20 || bytesUsage.GetAvailable() > bytesUsage.GetTotal() {
		t.Errorf("bytes usage %v: want a total within the 20 MiB image", bytesUsage)
	}
	if inodes == nil || inodes.GetTotal() <= 0 || inodes.GetUsed() <= 0 {
		t.Errorf("inode usage %v: want totals and some used", inodes)
	}

	// In use: cannot be deleted.
	_, err = c.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: vol.GetVolumeId()})
	wantCode(t, err, codes.FailedPrecondition)

	unpublishUnstage(t, c, vol.GetVolumeId(), staging, target)
	if loops, _ := csitest.LoopDevicesUnder(dir); len(loops) != 0 {
		t.Errorf("loop devices left after unstage: %v", loops)
	}
	if _, err := c.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: vol.GetVolumeId()}); err != nil {
		t.Fatal(err)
	}
	if imgs, _ := filepath.Glob(filepath.Join(dir, "root", "volumes", "*")); len(imgs) != 0 {
		t.Errorf("volume data left after delete: %v", imgs)
	}
}

func TestReadOnlyPublishIsHonoured(t *testing.T) {
	csitest.RequireMounts(t)
	dir := t.TempDir()
	csitest.CheckNoMounts(t, dir)
	d := csitest.StartDriver(t, driver.Config{RootDir: filepath.Join(dir, "root"), NodeID: "n1"})
	c := dial(t, d)
	ctx := context.Background()
	vc := mountCap("", rwo)
	resp, err := c.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "ro", VolumeCapabilities: []*csi.VolumeCapability{vc}})
	if err != nil {
		t.Fatal(err)
	}
	id := resp.GetVolume().GetVolumeId()
	staging, target := stagePublish(t, c, dir, id, vc, true)
	if m, ok, _ := mounts.Find(target); !ok || !m.ReadOnly() {
		t.Errorf("target mount %+v (found %v): want read-only", m, ok)
	}
	err = os.WriteFile(filepath.Join(target, "x"), []byte("x"), 0o644)
	if !errors.Is(err, syscall.EROFS) {
		t.Errorf("write through a read-only publish: got %v, want EROFS", err)
	}
	// The staging mount stays writable.
	if err := os.WriteFile(filepath.Join(staging, "x"), []byte("x"), 0o644); err != nil {
		t.Errorf("write to staging: %v", err)
	}
	// Same target, different readonly: incompatible.
	_, err = c.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, StagingTargetPath: staging, TargetPath: target, VolumeCapability: vc})
	wantCode(t, err, codes.AlreadyExists)
	// Same again: idempotent.
	if _, err := c.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, StagingTargetPath: staging, TargetPath: target, VolumeCapability: vc, Readonly: true}); err != nil {
		t.Errorf("repeat publish: %v", err)
	}
	unpublishUnstage(t, c, id, staging, target)
}

func TestRestartKeepsVolumesAndMounts(t *testing.T) {
	csitest.RequireMounts(t)
	dir := t.TempDir()
	csitest.CheckNoMounts(t, dir)
	root := filepath.Join(dir, "root")
	ctx := context.Background()
	vc := mountCap("ext4", rwo)

	// First life: create, stage, publish, write; then the driver stops.
	first, err := driver.New(driver.Config{Endpoint: filepath.Join(dir, "a.sock"), RootDir: root, NodeID: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- first.Run(runCtx) }()
	csitest.WaitForSocket(t, first.Endpoint())
	c := dial(t, first)
	resp, err := c.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "keep", VolumeCapabilities: []*csi.VolumeCapability{vc}, CapacityRange: &csi.CapacityRange{RequiredBytes: 16 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	id := resp.GetVolume().GetVolumeId()
	staging, target := stagePublish(t, c, dir, id, vc, false)
	if err := os.WriteFile(filepath.Join(target, "data"), []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// Second life on the same root dir.
	second := csitest.StartDriver(t, driver.Config{RootDir: root, NodeID: "n1"})
	c = dial(t, second)
	list, err := c.ListVolumes(ctx, &csi.ListVolumesRequest{})
	if err != nil || len(list.GetEntries()) != 1 || list.GetEntries()[0].GetVolume().GetVolumeId() != id {
		t.Fatalf("volumes after restart: %v (err %v), want only %s", list.GetEntries(), err, id)
	}
	again, err := c.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "keep", VolumeCapabilities: []*csi.VolumeCapability{vc}, CapacityRange: &csi.CapacityRange{RequiredBytes: 16 << 20}})
	if err != nil || again.GetVolume().GetVolumeId() != id {
		t.Fatalf("CreateVolume by the same name after restart: %v, %v; want volume %s", again, err, id)
	}
	// Staging and publishing again find the mounts in place.
	stagePublish(t, c, dir, id, vc, false)
	if got, err := os.ReadFile(filepath.Join(target, "data")); err != nil || string(got) != "kept" {
		t.Errorf("data after restart: %q, %v", got, err)
	}
	unpublishUnstage(t, c, id, staging, target)
	if _, err := c.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id}); err != nil {
		t.Fatal(err)
	}
}

func TestCreateVolumeRules(t *testing.T) {
	dir := t.TempDir()
	d, err := driver.New(driver.Config{Endpoint: filepath.Join(dir, "csi.sock"), RootDir: filepath.Join(dir, "root"), NodeID: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	vc := mountCap("", rwo)
	caps := []*csi.VolumeCapability{vc}
	other := &csi.TopologyRequirement{Requisite: []*csi.Topology{{Segments: map[string]string{d.TopologyKey(): "n2"}}}}
	mine := &csi.TopologyRequirement{Requisite: []*csi.Topology{{Segments: map[string]string{d.TopologyKey(): "n1"}}}}

	_, err = d.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "t", VolumeCapabilities: caps, AccessibilityRequirements: other})
	wantCode(t, err, codes.ResourceExhausted)
	resp, err := d.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "t", VolumeCapabilities: caps, AccessibilityRequirements: mine})
	if err != nil {
		t.Fatal(err)
	}
	if seg := resp.GetVolume().GetAccessibleTopology()[0].GetSegments(); seg[d.TopologyKey()] != "n1" {
		t.Errorf("accessible topology %v, want %s=n1", seg, d.TopologyKey())
	}

	for name, tc := range map[string]struct {
		req  *csi.CreateVolumeRequest
		code codes.Code
	}{
		"block access":          {&csi.CreateVolumeRequest{Name: "b", VolumeCapabilities: []*csi.VolumeCapability{{AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}, AccessMode: vc.AccessMode}}}, codes.InvalidArgument},
		"multi node":            {&csi.CreateVolumeRequest{Name: "m", VolumeCapabilities: []*csi.VolumeCapability{mountCap("", csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER)}}, codes.InvalidArgument},
		"xfs":                   {&csi.CreateVolumeRequest{Name: "x", VolumeCapabilities: []*csi.VolumeCapability{mountCap("xfs", rwo)}}, codes.InvalidArgument},
		"required > limit":      {&csi.CreateVolumeRequest{Name: "r", VolumeCapabilities: caps, CapacityRange: &csi.CapacityRange{RequiredBytes: 10, LimitBytes: 5}}, codes.InvalidArgument},
		"ext4 too small":        {&csi.CreateVolumeRequest{Name: "s", VolumeCapabilities: []*csi.VolumeCapability{mountCap("ext4", rwo)}, CapacityRange: &csi.CapacityRange{LimitBytes: 1 << 20}}, codes.OutOfRange},
		"unknown param":         {&csi.CreateVolumeRequest{Name: "p", VolumeCapabilities: caps, Parameters: map[string]string{"speed": "fast"}}, codes.InvalidArgument},
		"same name, other kind": {&csi.CreateVolumeRequest{Name: "t", VolumeCapabilities: []*csi.VolumeCapability{mountCap("ext4", rwo)}, CapacityRange: &csi.CapacityRange{RequiredBytes: 16 << 20}}, codes.AlreadyExists},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := d.CreateVolume(ctx, tc.req)
			wantCode(t, err, tc.code)
		})
	}

	cap, err := d.GetCapacity(ctx, &csi.GetCapacityRequest{AccessibleTopology: other.Requisite[0]})
	if err != nil || cap.GetAvailableCapacity() != 0 {
		t.Errorf("capacity for another node: %v, %v; want 0", cap, err)
	}
	cap, err = d.GetCapacity(ctx, &csi.GetCapacityRequest{AccessibleTopology: mine.Requisite[0], VolumeCapabilities: caps})
	if err != nil || cap.GetAvailableCapacity() <= 0 {
		t.Errorf("capacity for this node: %v, %v; want > 0", cap, err)
	}
}

func TestListVolumesPages(t *testing.T) {
	dir := t.TempDir()
	d, err := driver.New(driver.Config{Endpoint: filepath.Join(dir, "csi.sock"), RootDir: filepath.Join(dir, "root"), NodeID: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	want := map[string]bool{}
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		resp, err := d.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: name, VolumeCapabilities: []*csi.VolumeCapability{mountCap("", rwo)}})
		if err != nil {
			t.Fatal(err)
		}
		want[resp.GetVolume().GetVolumeId()] = true
	}
	seen := map[string]bool{}
	token, pages := "", 0
	for {
		resp, err := d.ListVolumes(ctx, &csi.ListVolumesRequest{MaxEntries: 2, StartingToken: token})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(resp.GetEntries()) > 2 {
			t.Fatalf("page of %d entries, max 2", len(resp.GetEntries()))
		}
		for _, e := range resp.GetEntries() {
			id := e.GetVolume().GetVolumeId()
			if seen[id] {
				t.Errorf("volume %s listed twice", id)
			}
			seen[id] = true
		}
		if token = resp.GetNextToken(); token == "" {
			break
		}
	}
	if pages != 3 || len(seen) != len(want) {
		t.Errorf("listed %d volumes in %d pages, want %d in 3", len(seen), pages, len(want))
	}
	for id := range want {
		if !seen[id] {
			t.Errorf("volume %s not listed", id)
		}
	}
	_, err = d.ListVolumes(ctx, &csi.ListVolumesRequest{StartingToken: "nope"})
	wantCode(t, err, codes.Aborted)
}

func TestConfigValidation(t *testing.T) {
	for name, tc := range map[string]struct {
		cfg  driver.Config
		want string
	}{
		"no endpoint":    {driver.Config{RootDir: "/r", NodeID: "n"}, "endpoint"},
		"tcp endpoint":   {driver.Config{Endpoint: "tcp://1.2.3.4:5", RootDir: "/r", NodeID: "n"}, "only unix://"},
		"relative root":  {driver.Config{Endpoint: "/s.sock", RootDir: "r", NodeID: "n"}, "root dir"},
		"no node":        {driver.Config{Endpoint: "/s.sock", RootDir: "/r"}, "node id"},
		"bad name":       {driver.Config{Endpoint: "/s.sock", RootDir: "/r", NodeID: "n", DriverName: "-bad"}, "driver name"},
		"negative limit": {driver.Config{Endpoint: "/s.sock", RootDir: "/r", NodeID: "n", MaxVolumesPerNode: -1}, "max volumes"},
		"long socket":    {driver.Config{Endpoint: "/" + strings.Repeat("d", 120) + "/s.sock", RootDir: "/r", NodeID: "n"}, "at most 107 bytes"},
		"long reg dir":   {driver.Config{Endpoint: "/s.sock", RootDir: "/r", NodeID: "n", RegistrationDir: "/" + strings.Repeat("d", 90)}, "registration dir: socket"},
	} {
		t.Run(name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate: %v; want ErrInvalidArgument mentioning %q", err, tc.want)
			}
		})
	}
}
