package csi_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	agentcsi "berth/agent/csi"
	"berth/agent/volumes"
	"berth/csi/driver"
	"berth/internal/errdefs"
	"berth/internal/mountinfo"
	"berth/internal/prereq"
	"berth/internal/testrun"
)

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		prereq.Missing(t, "agent/csi: not root; csi-local mounts volumes")
	}
}

// agentRoot is a short root dir (unix socket paths are limited to 107
// bytes) that is checked for left mounts and removed after the test.
func agentRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "agent")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		mounts, err := mountinfo.Read(mountinfo.SelfPath)
		if err != nil {
			t.Error(err)
		}
		for _, m := range mountinfo.Under(mounts, dir) {
			t.Errorf("still mounted after the test: %s", m.MountPoint)
		}
		os.RemoveAll(dir)
	})
	return dir
}

// startDriver runs csi-local registering itself in root/plugins_registry;
// the returned func stops it (its registration socket goes away).
func startDriver(t *testing.T, root string, maxVolumes int64) (*driver.Driver, func()) {
	t.Helper()
	d, err := driver.New(driver.Config{
		Endpoint: "unix://" + filepath.Join(root, "csi.sock"), RootDir: filepath.Join(root, "driver"),
		NodeID: "node-1", RegistrationDir: filepath.Join(root, "plugins_registry"), MaxVolumesPerNode: maxVolumes,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = d.Run(ctx) }()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return d, stop
}

func startManager(t *testing.T, cfg agentcsi.Config) *agentcsi.Manager {
	t.Helper()
	m, err := agentcsi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	testrun.Start(t, m)
	return m
}

func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; last: %s", what, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []agentcsi.Config{
		{NodeName: "n"},
		{RootDir: "relative", NodeName: "n"},
		{RootDir: "/x"},
		{RootDir: "/x", NodeName: "n", StatsCacheTTL: -time.Second},
	} {
		if _, err := agentcsi.New(cfg); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("New(%+v) = %v, want ErrInvalidArgument", cfg, err)
		}
	}
}

func TestDriverRecordedOnCSINodeAndNode(t *testing.T) {
	requireRoot(t)
	root := agentRoot(t)
	client := fake.NewClientset(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "node-uid", Labels: map[string]string{"kubernetes.io/hostname": "node-1"}}})
	_, stop := startDriver(t, root, 5)
	m := startManager(t, agentcsi.Config{RootDir: root, NodeName: "node-1", Client: client, RegistrationResync: 100 * time.Millisecond})
	ctx := context.Background()
	topologyKey := driver.TopologyKey(driver.DefaultDriverName)

	var csiNode *storagev1.CSINode
	waitFor(t, "the driver on the CSINode", func() (bool, string) {
		var err error
		csiNode, err = client.StorageV1().CSINodes().Get(ctx, "node-1", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(csiNode.Spec.Drivers) == 1, csiNode.String()
	})
	d := csiNode.Spec.Drivers[0]
	if d.Name != driver.DefaultDriverName || d.NodeID != "node-1" || !slices.Equal(d.TopologyKeys, []string{topologyKey}) ||
		d.Allocatable == nil || d.Allocatable.Count == nil || *d.Allocatable.Count != 5 {
		t.Errorf("CSINode driver = %+v", d)
	}
	if refs := csiNode.OwnerReferences; len(refs) != 1 || refs[0].Kind != "Node" || refs[0].Name != "node-1" || refs[0].UID != types.UID("node-uid") {
		t.Errorf("CSINode owner references = %+v, want the Node", refs)
	}
	if drivers := m.Drivers(); len(drivers) != 1 || drivers[0].Name != driver.DefaultDriverName {
		t.Errorf("Drivers() = %+v", drivers)
	}
	if c, ok := m.CSIClient(driver.DefaultDriverName); !ok || c.Driver() != driver.DefaultDriverName {
		t.Errorf("CSIClient = %v, %v", c, ok)
	}
	node, err := client.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if node.Labels[topologyKey] != "node-1" || node.Labels["kubernetes.io/hostname"] != "node-1" {
		t.Errorf("node labels = %v, want the topology label added", node.Labels)
	}
	var ids map[string]string
	if err := json.Unmarshal([]byte(node.Annotations[agentcsi.NodeIDAnnotation]), &ids); err != nil || ids[driver.DefaultDriverName] != "node-1" {
		t.Errorf("node annotation %s = %q, %v", agentcsi.NodeIDAnnotation, node.Annotations[agentcsi.NodeIDAnnotation], err)
	}

	// The driver goes away: deregistered, removed from the CSINode and
	// the annotation; the topology label stays, as upstream.
	stop()
	waitFor(t, "the driver gone from the CSINode", func() (bool, string) {
		csiNode, err := client.StorageV1().CSINodes().Get(ctx, "node-1", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(csiNode.Spec.Drivers) == 0, csiNode.String()
	})
	if _, ok := m.CSIClient(driver.DefaultDriverName); ok {
		t.Error("the driver is still registered")
	}
	node, err = client.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := node.Annotations[agentcsi.NodeIDAnnotation]; ok {
		t.Errorf("node annotation %s still set: %v", agentcsi.NodeIDAnnotation, node.Annotations)
	}
	if node.Labels[topologyKey] != "node-1" {
		t.Errorf("topology label removed: %v", node.Labels)
	}
}

func TestCSINodeWaitsForItsNode(t *testing.T) {
	requireRoot(t)
	root := agentRoot(t)
	client := fake.NewClientset()
	startDriver(t, root, 0)
	m := startManager(t, agentcsi.Config{RootDir: root, NodeName: "node-1", Client: client, RegistrationResync: 100 * time.Millisecond})
	ctx := context.Background()
	waitFor(t, "the driver registered", func() (bool, string) {
		_, ok := m.CSIClient(driver.DefaultDriverName)
		return ok, "not registered"
	})
	if _, err := client.StorageV1().CSINodes().Get(ctx, "node-1", metav1.GetOptions{}); err == nil {
		t.Fatal("a CSINode was created before its Node exists")
	}
	if _, err := client.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "u"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the CSINode once the Node exists", func() (bool, string) {
		n, err := client.StorageV1().CSINodes().Get(ctx, "node-1", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		d := n.Spec.Drivers
		return len(d) == 1 && d[0].Allocatable == nil, n.String()
	})
}

func TestVolumeStatsMetrics(t *testing.T) {
	requireRoot(t)
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		prereq.Missing(t, "agent/csi: mkfs.ext4 is missing (e2fsprogs); the test's volume is an ext4 image")
	}
	root := agentRoot(t)
	ctx := context.Background()
	d, _ := startDriver(t, root, 0)
	client := fake.NewClientset()
	reg := prometheus.NewRegistry()
	m := startManager(t, agentcsi.Config{RootDir: root, NodeName: "node-1", Registerer: reg, RegistrationResync: 100 * time.Millisecond})
	waitFor(t, "the driver registered", func() (bool, string) {
		_, ok := m.CSIClient(driver.DefaultDriverName)
		return ok, "not registered"
	})

	// A claim bound to a csi-local volume, mounted into a pod, and an inline volume.
	conn, err := grpc.NewClient("unix://"+d.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	created, err := csipb.NewControllerClient(conn).CreateVolume(ctx, &csipb.CreateVolumeRequest{
		Name: "pv-stats",
		VolumeCapabilities: []*csipb.VolumeCapability{{
			AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{FsType: "ext4"}},
			AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		}},
		CapacityRange: &csipb.CapacityRange{RequiredBytes: 32 << 20},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range []any{
		&v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "data", UID: "claim-uid"},
			Spec: v1.PersistentVolumeClaimSpec{VolumeName: "pv-stats"}, Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound}},
		&v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-stats"}, Spec: v1.PersistentVolumeSpec{
			ClaimRef: &v1.ObjectReference{Namespace: "ns1", Name: "data", UID: "claim-uid"},
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{
				Driver: driver.DefaultDriverName, VolumeHandle: created.GetVolume().GetVolumeId(), FSType: "ext4"}},
		}},
		&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: driver.DefaultDriverName},
			Spec: storagev1.CSIDriverSpec{VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecycleEphemeral}}},
	} {
		var err error
		switch o := obj.(type) {
		case *v1.PersistentVolumeClaim:
			_, err = client.CoreV1().PersistentVolumeClaims("ns1").Create(ctx, o, metav1.CreateOptions{})
		case *v1.PersistentVolume:
			_, err = client.CoreV1().PersistentVolumes().Create(ctx, o, metav1.CreateOptions{})
		case *storagev1.CSIDriver:
			_, err = client.StorageV1().CSIDrivers().Create(ctx, o, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	src, err := volumes.NewClientSource(client)
	if err != nil {
		t.Fatal(err)
	}
	vols, err := volumes.New(volumes.Config{RootDir: root, Claims: src, Objects: src, CSI: m})
	if err != nil {
		t.Fatal(err)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "web", UID: "pod-uid"}, Spec: v1.PodSpec{Volumes: []v1.Volume{
		{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
		{Name: "scratch", VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: driver.DefaultDriverName}}},
	}}}
	ms, err := vols.SetUp(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	tornDown := false
	t.Cleanup(func() {
		if !tornDown {
			_ = vols.TearDown(ctx, pod.UID)
		}
	})
	target, _ := ms.HostPath("data")
	if err := os.WriteFile(filepath.Join(target, "blob"), make([]byte, 4<<20), 0o644); err != nil {
		t.Fatal(err)
	}

	got := volumeMetrics(t, reg)
	for _, name := range []string{"capacity_bytes", "available_bytes", "used_bytes", "inodes", "inodes_free", "inodes_used"} {
		if _, ok := got[name]; !ok {
			t.Errorf("kubelet_volume_stats_%s missing; have %v", name, got)
		}
	}
	if c := got["capacity_bytes"]; c <= 0 || c > 32<<20 {
		t.Errorf("capacity %v, want the ext4 volume's (at most 32MiB)", c)
	}
	if u := got["used_bytes"]; u < 4<<20 {
		t.Errorf("used bytes %v, want at least the 4MiB written", u)
	}
	if got["inodes_used"] <= 0 || got["inodes"] < got["inodes_used"] {
		t.Errorf("inodes %v used %v", got["inodes"], got["inodes_used"])
	}

	// The same, per pod, for the stats Summary.
	cv := m.ClaimVolumeStats()
	if len(cv) != 1 || cv[0].PodUID != "pod-uid" || cv[0].Namespace != "ns1" || cv[0].ClaimName != "data" || cv[0].UsedBytes < 4<<20 || !cv[0].HasInodes {
		t.Errorf("ClaimVolumeStats = %+v", cv)
	}

	if err := vols.TearDown(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
	tornDown = true
	if got := volumeMetrics(t, reg); len(got) != 0 {
		t.Errorf("volume stats after the pod went: %v", got)
	}
	if cv := m.ClaimVolumeStats(); len(cv) != 0 {
		t.Errorf("ClaimVolumeStats after the pod went: %+v", cv)
	}
}

// volumeMetrics gathers the kubelet_volume_stats_* series, which must all
// carry the labels namespace=ns1 and persistentvolumeclaim=data (the inline
// volume has none).
func volumeMetrics(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		name, ok := strings.CutPrefix(f.GetName(), "kubelet_volume_stats_")
		if !ok {
			continue
		}
		if f.GetType() != dto.MetricType_GAUGE || len(f.GetMetric()) != 1 {
			t.Errorf("%s: %d series of type %v, want one gauge", f.GetName(), len(f.GetMetric()), f.GetType())
			continue
		}
		labels := map[string]string{}
		for _, l := range f.GetMetric()[0].GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if len(labels) != 2 || labels["namespace"] != "ns1" || labels["persistentvolumeclaim"] != "data" {
			t.Errorf("%s labels = %v", f.GetName(), labels)
		}
		out[name] = f.GetMetric()[0].GetGauge().GetValue()
	}
	return out
}
