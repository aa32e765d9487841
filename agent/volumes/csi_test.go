package volumes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"

	"berth/csi/driver"
	"berth/csi/nodeclient"
	"berth/csi/registration"
	"berth/internal/errdefs"
	"berth/internal/mountinfo"
)

// objectServer speaks the Kubernetes REST protocol for GETs of the objects
// put into it, by path (/api/v1/persistentvolumes/pv-1, …); anything else
// is a NotFound Status.
type objectServer struct {
	srv  *httptest.Server
	mu   sync.Mutex
	objs map[string]any
}

func newObjectServer(t *testing.T) *objectServer {
	s := &objectServer{objs: map[string]any{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		obj, ok := s.objs[r.URL.Path]
		s.mu.Unlock()
		if r.Method != http.MethodGet || !ok {
			parts := strings.Split(r.URL.Path, "/")
			writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf("%s %q not found", parts[len(parts)-2], parts[len(parts)-1]), parts[len(parts)-2], parts[len(parts)-1])
			return
		}
		writeJSON(w, http.StatusOK, obj)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *objectServer) put(obj any) {
	var path string
	switch o := obj.(type) {
	case *v1.PersistentVolumeClaim:
		o.TypeMeta = metav1.TypeMeta{Kind: "PersistentVolumeClaim", APIVersion: "v1"}
		path = "/api/v1/namespaces/" + o.Namespace + "/persistentvolumeclaims/" + o.Name
	case *v1.PersistentVolume:
		o.TypeMeta = metav1.TypeMeta{Kind: "PersistentVolume", APIVersion: "v1"}
		path = "/api/v1/persistentvolumes/" + o.Name
	case *v1.Secret:
		o.TypeMeta = metav1.TypeMeta{Kind: "Secret", APIVersion: "v1"}
		path = "/api/v1/namespaces/" + o.Namespace + "/secrets/" + o.Name
	case *storagev1.CSIDriver:
		o.TypeMeta = metav1.TypeMeta{Kind: "CSIDriver", APIVersion: "storage.k8s.io/v1"}
		path = "/apis/storage.k8s.io/v1/csidrivers/" + o.Name
	default:
		panic(fmt.Sprintf("objectServer: %T", obj))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.objs[path] = obj
}

func (s *objectServer) client(t *testing.T) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: s.srv.URL, QPS: 1000, Burst: 1000,
		ContentConfig: rest.ContentConfig{ContentType: "application/json", AcceptContentTypes: "application/json"}})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// csiEnv is a volume manager with csi-local running in the test process,
// registered through the plugin registration protocol, and an API server
// holding claims, volumes and CSIDriver objects.
type csiEnv struct {
	root     string
	clock    *testingclock.FakeClock
	api      *objectServer
	drv      *driver.Driver
	registry *registration.Registry
	events   *record.FakeRecorder
	mgr      *Manager
}

func newCSIEnv(t *testing.T) *csiEnv {
	t.Helper()
	requireRoot(t)
	e := &csiEnv{
		clock:  testingclock.NewFakeClock(time.Date(2026, 11, 22, 1, 2, 3, 0, time.UTC)),
		api:    newObjectServer(t),
		events: record.NewFakeRecorder(100),
	}
	// Unix socket paths are short: a dir of their own under /tmp.
	sockDir, err := os.MkdirTemp("", "csi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	ctx, cancel := context.WithCancel(context.Background())
	e.drv, err = driver.New(driver.Config{
		Endpoint: "unix://" + filepath.Join(sockDir, "csi.sock"), RootDir: filepath.Join(t.TempDir(), "driver"),
		NodeID: "node-1", RegistrationDir: filepath.Join(sockDir, "reg"),
	})
	if err != nil {
		t.Fatal(err)
	}
	e.registry, err = registration.New(registration.Config{Dir: filepath.Join(sockDir, "reg"), ResyncPeriod: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = e.drv.Run(ctx) }()
	go func() { defer wg.Done(); _ = e.registry.Run(ctx) }()
	// Registered first, so it runs last: the driver outlives the tests'
	// own clean-ups, which unpublish through it.
	t.Cleanup(func() { cancel(); wg.Wait() })
	e.root = t.TempDir()
	t.Cleanup(func() { assertNoMountsUnder(t, e.root) })
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := e.registry.CSIClient(driver.DefaultDriverName); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("csi-local did not register within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.mgr = e.newManager(t, true)
	return e
}

// newManager is a Manager on the env's root, as a (restarted) agent builds
// it; joined gives it the API server.
func (e *csiEnv) newManager(t *testing.T, joined bool) *Manager {
	t.Helper()
	cfg := Config{
		RootDir: e.root, CSI: e.registry, Recorder: e.events, Clock: e.clock,
		MountBackOffInitial: DefaultMountBackOffInitial, MountBackOffMax: DefaultMountBackOffMax,
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if joined {
		src, err := NewClientSource(e.api.client(t))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Objects, cfg.Claims = src, src
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// createVolume creates a csi-local volume through its controller service.
func (e *csiEnv) createVolume(t *testing.T, name string) string {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+e.drv.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	resp, err := csi.NewControllerClient(conn).CreateVolume(context.Background(), &csi.CreateVolumeRequest{
		Name: name,
		VolumeCapabilities: []*csi.VolumeCapability{{
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetVolume().GetVolumeId()
}

// bindClaim puts a PV for handle bound to the claim ns1/name.
func (e *csiEnv) bindClaim(name, pvName, handle string) {
	e.api.put(&v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: name, UID: types.UID("uid-" + name)},
		Spec:       v1.PersistentVolumeClaimSpec{VolumeName: pvName, AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}},
		Status:     v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound},
	})
	e.api.put(&v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: v1.PersistentVolumeSpec{
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			ClaimRef:    &v1.ObjectReference{Namespace: "ns1", Name: name, UID: types.UID("uid-" + name)},
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{
				Driver: driver.DefaultDriverName, VolumeHandle: handle,
			}},
		},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeBound},
	})
}

func claimPod(uid, claim string) *v1.Pod {
	return testPod(uid, []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
		PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
	}}}, v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}}})
}

func (e *csiEnv) stagingPath(handle string) string {
	root, _ := filepath.EvalSymlinks(e.root)
	return nodeclient.StagingPath(root, driver.DefaultDriverName, handle)
}

func (e *csiEnv) targetPath(uid, name string) string {
	root, _ := filepath.EvalSymlinks(e.root)
	return nodeclient.TargetPath(root, uid, name)
}

func mountCount(t *testing.T, path string) int { return len(mountsAt(t, path)) }

// drainEvents returns the events recorded so far.
func (e *csiEnv) drainEvents() []string {
	var out []string
	for {
		select {
		case ev := <-e.events.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

func TestCSIClaimStagedOncePublishedPerPod(t *testing.T) {
	e := newCSIEnv(t)
	handle := e.createVolume(t, "pv-data")
	e.bindClaim("data", "pv-data", handle)
	pod1, pod2 := claimPod("uid-c1", "data"), claimPod("uid-c2", "data")

	ms1, err := e.mgr.SetUp(ctx, pod1)
	if err != nil {
		t.Fatal(err)
	}
	ms2, err := e.mgr.SetUp(ctx, pod2)
	if err != nil {
		t.Fatal(err)
	}
	staging, t1, t2 := e.stagingPath(handle), e.targetPath("uid-c1", "pv-data"), e.targetPath("uid-c2", "pv-data")
	if n := mountCount(t, staging); n != 1 {
		t.Errorf("%d mounts at the staging path %s, want 1", n, staging)
	}
	for _, target := range []string{t1, t2} {
		if n := mountCount(t, target); n != 1 {
			t.Errorf("%d mounts at the target path %s, want 1", n, target)
		}
	}
	mounts, err := ms1.Container(&pod1.Spec.Containers[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(mounts) != 1 || mounts[0].HostPath != t1 || mounts[0].ContainerPath != "/data" || mounts[0].Readonly {
		t.Errorf("container mounts = %+v, want %s read-write at /data", mounts, t1)
	}
	if p, _ := ms2.HostPath("data"); p != t2 {
		t.Errorf("second pod's volume at %s, want %s", p, t2)
	}
	// Both pods see the same volume.
	if err := os.WriteFile(filepath.Join(t1, "greeting"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(t2, "greeting")); err != nil || string(got) != "hello" {
		t.Errorf("second pod reads %q, %v", got, err)
	}
	data, err := nodeclient.ReadVolumeData(filepath.Dir(t1))
	if err != nil || data.ClaimName != "data" || data.PodNamespace != "ns1" || data.VolumeHandle != handle || data.LifecycleMode != "Persistent" {
		t.Errorf("vol_data.json = %+v, %v", data, err)
	}
	published, err := PublishedCSIVolumes(e.root)
	if err != nil || len(published) != 2 {
		t.Fatalf("PublishedCSIVolumes = %+v, %v; want both pods'", published, err)
	}

	// The first pod goes: its target only; the volume stays staged for the second.
	if err := e.mgr.TearDown(ctx, pod1.UID); err != nil {
		t.Fatal(err)
	}
	if mountCount(t, t1) != 0 || mountCount(t, staging) != 1 || mountCount(t, t2) != 1 {
		t.Errorf("after the first pod's teardown: target1 %d, staging %d, target2 %d mounts; want 0, 1, 1", mountCount(t, t1), mountCount(t, staging), mountCount(t, t2))
	}
	if err := e.mgr.TearDown(ctx, pod2.UID); err != nil {
		t.Fatal(err)
	}
	if mountCount(t, staging) != 0 {
		t.Errorf("staging path still mounted after the last pod went")
	}
	if _, err := os.Stat(filepath.Dir(staging)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("staging dir left: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.root, "pods", "uid-c2", "volumes")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pod volumes dir left: %v", err)
	}
	if evs := e.drainEvents(); len(evs) != 0 {
		t.Errorf("events %q, want none", evs)
	}
}

func TestCSIRestartReconstructsWithoutDoubleMount(t *testing.T) {
	e := newCSIEnv(t)
	handle := e.createVolume(t, "pv-keep")
	e.bindClaim("keep", "pv-keep", handle)
	kept, gone := claimPod("uid-kept", "keep"), claimPod("uid-gone", "keep")
	for _, p := range []*v1.Pod{kept, gone} {
		if _, err := e.mgr.SetUp(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	// The agent restarts: a new manager over the same root.
	restarted := e.newManager(t, true)
	if _, err := restarted.SetUp(ctx, kept); err != nil {
		t.Fatal(err)
	}
	target := e.targetPath("uid-kept", "pv-keep")
	if n := mountCount(t, target); n != 1 {
		t.Errorf("%d mounts at %s after SetUp by the restarted agent, want 1", n, target)
	}
	if n := mountCount(t, e.stagingPath(handle)); n != 1 {
		t.Errorf("%d mounts at the staging path after restart, want 1", n)
	}
	// The pod deleted while the agent was down is cleaned up through the driver.
	cleaned, err := restarted.CleanupOrphans(ctx, []types.UID{kept.UID})
	if err != nil || len(cleaned) != 1 || cleaned[0] != gone.UID {
		t.Fatalf("CleanupOrphans = %v, %v; want [uid-gone]", cleaned, err)
	}
	if n := mountCount(t, e.targetPath("uid-gone", "pv-keep")); n != 0 {
		t.Errorf("the deleted pod's target is still mounted")
	}
	if n := mountCount(t, e.stagingPath(handle)); n != 1 {
		t.Errorf("staging unmounted while the kept pod uses the volume")
	}
	cleaned, err = restarted.CleanupOrphans(ctx, nil)
	if err != nil || len(cleaned) != 1 {
		t.Fatalf("CleanupOrphans(none active) = %v, %v", cleaned, err)
	}
	if n := mountCount(t, e.stagingPath(handle)); n != 0 {
		t.Errorf("staging still mounted after every pod went")
	}
}

// TestCSIUnusedStagingUnstagedByCleanup: a volume left staged after its
// last pod's unpublish (the agent stopped, or the unstage failed, between
// the two; the pod's record of the volume is gone with the unpublish) is
// unstaged by CleanupOrphans, but only once no pod has it published.
func TestCSIUnusedStagingUnstagedByCleanup(t *testing.T) {
	e := newCSIEnv(t)
	handle := e.createVolume(t, "pv-left")
	e.bindClaim("left", "pv-left", handle)
	first, second := claimPod("uid-l1", "left"), claimPod("uid-l2", "left")
	for _, p := range []*v1.Pod{first, second} {
		if _, err := e.mgr.SetUp(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	client, ok := e.registry.CSIClient(driver.DefaultDriverName)
	if !ok {
		t.Fatal("csi-local not registered")
	}
	root, err := filepath.EvalSymlinks(e.root)
	if err != nil {
		t.Fatal(err)
	}
	// Both pods' volumes unpublished by the driver, the agent stopping
	// before it unstages.
	for _, p := range []*v1.Pod{first, second} {
		if err := client.TearDown(ctx, root, string(p.UID), "pv-left", handle); err != nil {
			t.Fatal(err)
		}
	}
	// The second pod is published again (its set-up retried): the volume
	// is in use, the clean-up of the first pod leaves it staged.
	if _, err := e.newManager(t, true).SetUp(ctx, second); err != nil {
		t.Fatal(err)
	}
	restarted := e.newManager(t, true)
	staging := e.stagingPath(handle)
	if _, err := restarted.CleanupOrphans(ctx, []types.UID{second.UID}); err != nil {
		t.Fatal(err)
	}
	if mountCount(t, staging) != 1 || mountCount(t, e.targetPath("uid-l2", "pv-left")) != 1 {
		t.Fatalf("with the second pod using it: %d mounts at the staging path and %d at its target, want 1 and 1",
			mountCount(t, staging), mountCount(t, e.targetPath("uid-l2", "pv-left")))
	}
	if err := client.TearDown(ctx, root, string(second.UID), "pv-left", handle); err != nil {
		t.Fatal(err)
	}
	// Now no pod has it: the clean-up unstages it through the driver.
	if _, err := restarted.CleanupOrphans(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if n := mountCount(t, staging); n != 0 {
		t.Errorf("%d mounts at the staging path of a volume no pod uses, want 0", n)
	}
	if _, err := os.Stat(filepath.Dir(staging)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("staging dir left: %v", err)
	}
	// csi-local agrees it is no longer staged: staging it again works.
	if _, err := restarted.SetUp(ctx, first); err != nil {
		t.Errorf("staging the volume again: %v", err)
	}
	if err := restarted.TearDown(ctx, first.UID); err != nil {
		t.Fatal(err)
	}
}

func TestCSIUnboundClaimFailedMountWithBackOff(t *testing.T) {
	e := newCSIEnv(t)
	e.api.put(&v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "pending"},
		Status:     v1.PersistentVolumeClaimStatus{Phase: v1.ClaimPending},
	})
	pod := claimPod("uid-pending", "pending")
	_, err := e.mgr.SetUp(ctx, pod)
	var merr *MountError
	if !errors.As(err, &merr) || !errors.Is(err, errdefs.ErrUnavailable) {
		t.Fatalf("SetUp = %v, want a *MountError wrapping ErrUnavailable", err)
	}
	want := `Warning FailedMount MountVolume.SetUp failed for volume "data" : error processing PVC ns1/pending: PVC is not bound`
	if evs := e.drainEvents(); len(evs) != 1 || evs[0] != want {
		t.Fatalf("events %q, want %q (the kubelet's words, no error class)", evs, want)
	}
	// Within the back-off: no new attempt, no new event, the same error.
	if _, err := e.mgr.SetUp(ctx, pod); !errors.Is(err, errdefs.ErrUnavailable) {
		t.Fatalf("SetUp within the back-off = %v", err)
	}
	if evs := e.drainEvents(); len(evs) != 0 {
		t.Fatalf("events within the back-off %q, want none", evs)
	}
	// The claim gets bound, but the back-off (500ms) has not passed yet.
	handle := e.createVolume(t, "pv-late")
	e.bindClaim("pending", "pv-late", handle)
	e.clock.Step(400 * time.Millisecond)
	if _, err := e.mgr.SetUp(ctx, pod); err == nil {
		t.Fatal("SetUp before the back-off ended tried again")
	}
	e.clock.Step(100 * time.Millisecond)
	ms, err := e.mgr.SetUp(ctx, pod)
	if err != nil {
		t.Fatalf("SetUp after the back-off: %v", err)
	}
	t.Cleanup(func() {
		if err := e.mgr.TearDown(ctx, pod.UID); err != nil {
			t.Error(err)
		}
	})
	if p, _ := ms.HostPath("data"); mountCount(t, p) != 1 {
		t.Errorf("volume not mounted at %s", p)
	}
}

func TestCSIBackOffDoubles(t *testing.T) {
	e := newCSIEnv(t)
	pod := claimPod("uid-missing", "missing") // no such claim
	attempts := func() int { return len(e.drainEvents()) }
	var got []int
	for _, step := range []time.Duration{0, 499 * time.Millisecond, time.Millisecond, 999 * time.Millisecond, time.Millisecond, 2 * time.Second} {
		e.clock.Step(step)
		_, err := e.mgr.SetUp(ctx, pod)
		if !errors.Is(err, errdefs.ErrNotFound) || !strings.Contains(err.Error(), `persistentvolumeclaims "missing" not found`) {
			t.Fatalf("SetUp = %v, want the claim NotFound", err)
		}
		got = append(got, attempts())
	}
	// Attempts at 0, 0.5s, 1.5s, 3.5s: 500ms, then 1s, then 2s between them.
	if want := []int{1, 0, 1, 0, 1, 1}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("events per call %v, want %v", got, want)
	}
	if err := e.mgr.TearDown(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
	// A torn-down pod starts afresh.
	if _, err := e.mgr.SetUp(ctx, pod); err == nil || attempts() != 1 {
		t.Errorf("SetUp after TearDown did not try at once: %v", err)
	}
}

func TestCSIDriverErrorIsMountDeviceFailure(t *testing.T) {
	e := newCSIEnv(t)
	e.bindClaim("ghost", "pv-ghost", "no-such-volume")
	pod := claimPod("uid-ghost", "ghost")
	_, err := e.mgr.SetUp(ctx, pod)
	want := `MountVolume.MountDevice failed for volume "pv-ghost" : rpc error: code = NotFound desc = volume "no-such-volume" not found`
	if err == nil || err.Error() != want || !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("SetUp = %v\nwant %s (ErrNotFound)", err, want)
	}
	if evs := e.drainEvents(); len(evs) != 1 || evs[0] != "Warning FailedMount "+want {
		t.Errorf("events %q", evs)
	}
	if _, err := os.Stat(filepath.Dir(e.stagingPath("no-such-volume"))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed NodeStageVolume left its staging dir: %v", err)
	}
	if err := e.mgr.TearDown(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
}

func TestCSIClaimErrors(t *testing.T) {
	e := newCSIEnv(t)
	e.api.put(&v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "nfs"},
		Spec:       v1.PersistentVolumeClaimSpec{VolumeName: "pv-nfs"},
		Status:     v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound},
	})
	e.api.put(&v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-nfs"},
		Spec: v1.PersistentVolumeSpec{
			ClaimRef:               &v1.ObjectReference{Namespace: "ns1", Name: "nfs"},
			PersistentVolumeSource: v1.PersistentVolumeSource{NFS: &v1.NFSVolumeSource{Server: "x", Path: "/"}},
		},
	})
	e.bindClaim("mine", "pv-mine", "h")
	e.api.put(&v1.PersistentVolumeClaim{ // claims pv-mine, which is bound to ns1/mine
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "thief"},
		Spec:       v1.PersistentVolumeClaimSpec{VolumeName: "pv-mine"},
		Status:     v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound},
	})
	e.api.put(&v1.PersistentVolumeClaim{ // a generic ephemeral volume's claim not owned by the pod
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "web-scratch"},
		Spec:       v1.PersistentVolumeClaimSpec{VolumeName: "pv-mine"},
		Status:     v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound},
	})
	for _, c := range []struct {
		name  string
		vol   v1.VolumeSource
		class error
		msg   string
	}{
		{"not a CSI volume", v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "nfs"}}, errdefs.ErrUnimplemented, `PersistentVolume "pv-nfs" is not a CSI volume`},
		{"bound to another claim", v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "thief"}}, errdefs.ErrConflict, `found PV object "pv-mine" but it has a ClaimRef that is not bound to claim ns1/thief`},
		{"ephemeral claim not owned", v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}, errdefs.ErrConflict, `PVC ns1/web-scratch was not created for pod ns1/web (pod is not owner)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			pod := testPod("uid-err", []v1.Volume{{Name: "scratch", VolumeSource: c.vol}})
			_, err := e.mgr.SetUp(ctx, pod)
			if !errors.Is(err, c.class) || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("SetUp = %v, want %v containing %q", err, c.class, c.msg)
			}
			if err := e.mgr.TearDown(ctx, pod.UID); err != nil {
				t.Error(err)
			}
		})
	}
	t.Run("standalone", func(t *testing.T) {
		m := e.newManager(t, false)
		_, err := m.SetUp(ctx, claimPod("uid-sa", "mine"))
		if !errors.Is(err, errdefs.ErrUnavailable) || !strings.Contains(err.Error(), "need an API server") {
			t.Errorf("SetUp without an API server = %v", err)
		}
	})
}

func inlinePod(uid string, attrs map[string]string) *v1.Pod {
	return testPod(uid, []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{
		Driver: driver.DefaultDriverName, VolumeAttributes: attrs,
	}}}})
}

func TestCSIInlineEphemeral(t *testing.T) {
	e := newCSIEnv(t)
	t.Run("joined without a CSIDriver object", func(t *testing.T) {
		_, err := e.mgr.SetUp(ctx, inlinePod("uid-noobj", nil))
		if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), "has no CSIDriver object") {
			t.Errorf("SetUp = %v", err)
		}
	})
	e.api.put(&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: driver.DefaultDriverName},
		Spec: storagev1.CSIDriverSpec{VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}}})
	t.Run("driver does not list Ephemeral", func(t *testing.T) {
		_, err := e.mgr.SetUp(ctx, inlinePod("uid-persistent-only", nil))
		if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), `volume mode "Ephemeral" not supported by driver`) {
			t.Errorf("SetUp = %v", err)
		}
	})
	e.api.put(&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: driver.DefaultDriverName},
		Spec: storagev1.CSIDriverSpec{
			VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecycleEphemeral},
			PodInfoOnMount:       ptr(true),
		}})
	for _, joined := range []bool{true, false} {
		t.Run(fmt.Sprintf("joined=%v", joined), func(t *testing.T) {
			m := e.newManager(t, joined)
			uid := fmt.Sprintf("uid-inline-%v", joined)
			pod := inlinePod(uid, nil)
			ms, err := m.SetUp(ctx, pod)
			if err != nil {
				t.Fatal(err)
			}
			target := e.targetPath(uid, "scratch")
			if p, _ := ms.HostPath("scratch"); p != target || mountCount(t, target) != 1 {
				t.Fatalf("inline volume at %s (%d mounts), want mounted at %s", p, mountCount(t, target), target)
			}
			if n := len(mountsAt(t, e.stagingPath(nodeclient.EphemeralVolumeHandle(uid, "scratch")))); n != 0 {
				t.Errorf("an ephemeral volume was staged")
			}
			data, err := nodeclient.ReadVolumeData(filepath.Dir(target))
			if err != nil || data.LifecycleMode != "Ephemeral" || data.VolumeHandle != nodeclient.EphemeralVolumeHandle(uid, "scratch") {
				t.Errorf("vol_data.json = %+v, %v", data, err)
			}
			if err := os.WriteFile(filepath.Join(target, "f"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := m.TearDown(ctx, pod.UID); err != nil {
				t.Fatal(err)
			}
			if mountCount(t, target) != 0 {
				t.Errorf("inline volume still mounted after TearDown")
			}
			// The driver deleted the ephemeral volume: a new pod gets it empty.
			if _, err := m.SetUp(ctx, pod); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(target, "f")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a new ephemeral volume holds the old one's file: %v", err)
			}
			if err := m.TearDown(ctx, pod.UID); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("driver refuses the attributes", func(t *testing.T) {
		pod := inlinePod("uid-bogus", map[string]string{"size": "1Gi"})
		_, err := e.mgr.SetUp(ctx, pod)
		want := `MountVolume.SetUp failed for volume "scratch" : rpc error: code = InvalidArgument desc = volume_context: unknown attribute "size"`
		if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("SetUp = %v\nwant %s…", err, want)
		}
		if err := e.mgr.TearDown(ctx, pod.UID); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(filepath.Join(e.root, "pods", "uid-bogus", "volumes")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("volumes dir left after TearDown: %v", err)
		}
	})
	t.Run("driver not registered", func(t *testing.T) {
		pod := testPod("uid-nodriver", []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: "other.example.com"}}}})
		_, err := e.newManager(t, false).SetUp(ctx, pod)
		if !errors.Is(err, errdefs.ErrNotFound) || !strings.Contains(err.Error(), "driver name other.example.com not found in the list of registered CSI drivers") {
			t.Errorf("SetUp = %v", err)
		}
	})
	_ = e.drainEvents()
}

// TestCSITearDownWaitsForItsDriver: a published volume whose driver is
// gone is left mounted (and TearDown fails, to be retried), never
// unmounted behind the driver's back.
func TestCSITearDownWaitsForItsDriver(t *testing.T) {
	e := newCSIEnv(t)
	handle := e.createVolume(t, "pv-wait")
	e.bindClaim("wait", "pv-wait", handle)
	pod := claimPod("uid-wait", "wait")
	if _, err := e.mgr.SetUp(ctx, pod); err != nil {
		t.Fatal(err)
	}
	noDrivers, err := New(Config{RootDir: e.root})
	if err != nil {
		t.Fatal(err)
	}
	if err := noDrivers.TearDown(ctx, pod.UID); !errors.Is(err, errdefs.ErrUnavailable) {
		t.Fatalf("TearDown without the driver = %v, want ErrUnavailable", err)
	}
	target := e.targetPath("uid-wait", "pv-wait")
	if mountCount(t, target) != 1 {
		t.Fatalf("target unmounted without its driver")
	}
	if err := e.mgr.TearDown(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
	mounts, err := mountinfo.Read(mountinfo.SelfPath)
	if err != nil {
		t.Fatal(err)
	}
	if left := mountinfo.Under(mounts, filepath.Dir(e.stagingPath(handle))); len(left) != 0 {
		t.Errorf("mounts left: %+v", left)
	}
}

func TestCSIFSGroupByDriverPolicy(t *testing.T) {
	e := newCSIEnv(t)
	for _, c := range []struct {
		policy storagev1.FSGroupPolicy
		want   bool
	}{
		{storagev1.FileFSGroupPolicy, true},
		{storagev1.NoneFSGroupPolicy, false},
		{storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy, false}, // a directory volume: no fsType
	} {
		t.Run(string(c.policy), func(t *testing.T) {
			e.api.put(&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: driver.DefaultDriverName},
				Spec: storagev1.CSIDriverSpec{FSGroupPolicy: ptr(c.policy)}})
			name := strings.ToLower(string(c.policy))
			e.bindClaim(name, "pv-"+name, e.createVolume(t, "pv-"+name))
			pod := claimPod("uid-fsg-"+name, name)
			pod.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: ptr(int64(3000))}
			ms, err := e.mgr.SetUp(ctx, pod)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := e.mgr.TearDown(ctx, pod.UID); err != nil {
					t.Error(err)
				}
			})
			target, _ := ms.HostPath("data")
			info, err := os.Stat(target)
			if err != nil {
				t.Fatal(err)
			}
			st, _ := statOf(info)
			if got := st.Gid == 3000 && info.Mode()&os.ModeSetgid != 0; got != c.want {
				t.Errorf("volume root gid %d mode %v; fsGroup applied = %v, want %v", st.Gid, info.Mode(), got, c.want)
			}
		})
	}
}

func TestAppliesFSGroup(t *testing.T) {
	withPolicy := func(p storagev1.FSGroupPolicy) *storagev1.CSIDriver {
		return &storagev1.CSIDriver{Spec: storagev1.CSIDriverSpec{FSGroupPolicy: &p}}
	}
	for _, c := range []struct {
		name     string
		d        *storagev1.CSIDriver
		readOnly bool
		fsType   string
		rwo      bool
		inline   bool
		want     bool
	}{
		{"no object, ext4 RWO", nil, false, "ext4", true, false, true},
		{"no object, no fsType", nil, false, "", true, false, false},
		{"no object, ext4 RWX", nil, false, "ext4", false, false, false},
		{"no object, ext4 inline", nil, false, "ext4", false, true, true},
		{"read-only", withPolicy(storagev1.FileFSGroupPolicy), true, "ext4", true, false, false},
		{"File, no fsType", withPolicy(storagev1.FileFSGroupPolicy), false, "", false, false, true},
		{"None", withPolicy(storagev1.NoneFSGroupPolicy), false, "ext4", true, false, false},
	} {
		if got := appliesFSGroup(c.d, c.readOnly, c.fsType, c.rwo, c.inline); got != c.want {
			t.Errorf("%s: appliesFSGroup = %v, want %v", c.name, got, c.want)
		}
	}
}
