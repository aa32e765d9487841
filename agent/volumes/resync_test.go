package volumes

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"berth/agent/volumes/atomic"
	"berth/internal/errdefs"
)

func dataTarget(t *testing.T, dir string) string {
	t.Helper()
	target, err := os.Readlink(filepath.Join(dir, atomic.DataDirName))
	if err != nil {
		t.Fatal(err)
	}
	return target
}

func TestResyncUpdatesAtomically(t *testing.T) {
	e := newTestEnv(t)
	e.api.putConfigMap("ns1", "cfg", map[string]string{"a": "1", "b": "1"}, nil)
	e.api.putSecret("ns1", "creds", map[string][]byte{"user": []byte("u1")})
	pod := testPod("uid-resync", []v1.Volume{
		{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
		{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds"}}},
		{Name: "later", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
	})
	pod.Spec.Volumes = pod.Spec.Volumes[:2]
	ms, err := e.mgr.SetUp(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.mgr.TearDown(ctx, pod.UID) })
	cfgDir, _ := ms.HostPath("cfg")
	secDir, _ := ms.HostPath("sec")
	first := dataTarget(t, cfgDir)

	// Unchanged objects: nothing is written.
	if _, err := e.mgr.SetUp(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := e.mgr.Resync(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if got := dataTarget(t, cfgDir); got != first {
		t.Errorf("..data moved from %s to %s without a change", first, got)
	}

	// Changed objects: a concurrent reader sees either all old or all new files.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var mixed string
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 100000; i++ {
			select {
			case <-stop:
				return
			default:
			}
			ts, err := os.Readlink(filepath.Join(cfgDir, atomic.DataDirName))
			if err != nil {
				mixed = fmt.Sprintf("..data unreadable: %v", err)
				return
			}
			a, errA := os.ReadFile(filepath.Join(cfgDir, ts, "a"))
			b, errB := os.ReadFile(filepath.Join(cfgDir, ts, "b"))
			if after, _ := os.Readlink(filepath.Join(cfgDir, atomic.DataDirName)); after != ts {
				continue // swapped while reading; the old directory may be going
			}
			if errA != nil || errB != nil || string(a) != string(b) {
				mixed = fmt.Sprintf("a=%q (%v) b=%q (%v)", a, errA, b, errB)
				return
			}
		}
	}()
	e.api.putConfigMap("ns1", "cfg", map[string]string{"a": "2", "b": "2"}, nil)
	e.api.putSecret("ns1", "creds", map[string][]byte{"user": []byte("u2")})
	err = e.mgr.Resync(ctx, pod)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if mixed != "" {
		t.Fatalf("reader saw half an update: %s", mixed)
	}
	want := map[string]string{"a": "2|0644", "b": "2|0644"}
	if got := volumeFiles(t, cfgDir); sortedMap(got) != sortedMap(want) {
		t.Errorf("configMap after Resync %s, want %s", sortedMap(got), sortedMap(want))
	}
	if data, _ := readVolumeFile(t, filepath.Join(secDir, "user")); data != "u2" {
		t.Errorf("secret after Resync = %q, want u2", data)
	}
	if ts, _ := os.ReadDir(cfgDir); len(ts) != 4 { // ..data, one timestamped dir, a, b
		t.Errorf("configMap dir holds %d entries after the update, want 4", len(ts))
	}

	// A volume not set up yet is left to SetUp.
	pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{Name: "later", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}})
	if err := e.mgr.Resync(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(e.root, "pods", "uid-resync", "volumes", PluginConfigMap, "later")); !os.IsNotExist(err) {
		t.Errorf("Resync set up a new volume: %v", err)
	}

	// The object is deleted: Resync reports it and the pod keeps the last content.
	e.api.mu.Lock()
	delete(e.api.configMaps, "ns1/cfg")
	e.api.mu.Unlock()
	pod.Spec.Volumes = pod.Spec.Volumes[:2]
	err = e.mgr.Resync(ctx, pod)
	var me *MountError
	if !errors.As(err, &me) || me.Volume != "cfg" || !errors.Is(err, errdefs.ErrNotFound) || !strings.Contains(err.Error(), `configmap "cfg" not found`) {
		t.Errorf("Resync after deletion = %v, want a MountError for cfg", err)
	}
	if got := volumeFiles(t, cfgDir); sortedMap(got) != sortedMap(want) {
		t.Errorf("configMap after its deletion %s, want the last content %s", sortedMap(got), sortedMap(want))
	}
}

func TestConcurrentPods(t *testing.T) {
	e := newTestEnv(t)
	e.api.putSecret("ns1", "creds", map[string][]byte{"user": []byte("admin")})
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := 0; i < 10; i++ {
		pod := testPod(fmt.Sprintf("uid-par-%d", i), []v1.Volume{
			{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds"}}},
			{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}},
		})
		for j := 0; j < 2; j++ { // the same pod twice at once: still one mount each
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := e.mgr.SetUp(ctx, pod)
				errs <- err
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 10; i++ {
		uid := fmt.Sprintf("uid-par-%d", i)
		if n := len(podMounts(t, e.root, uid)); n != 2 {
			t.Errorf("pod %s has %d mounts, want 2", uid, n)
		}
		if err := e.mgr.TearDown(ctx, types.UID(uid)); err != nil {
			t.Error(err)
		}
	}
}

func TestRemoveTreeStopsAtMountPoints(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	t.Cleanup(func() { assertNoMountsUnder(t, dir) })
	inner := filepath.Join(dir, "a", "mnt")
	if err := os.MkdirAll(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := mountTmpfs(inner, 1<<20); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unmount(inner) })
	if err := os.WriteFile(filepath.Join(inner, "data"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := removeTree(filepath.Join(dir, "a"))
	if !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), "another filesystem") {
		t.Fatalf("removeTree across a mount = %v, want ErrConflict", err)
	}
	if _, err := os.Stat(filepath.Join(inner, "data")); err != nil {
		t.Errorf("removeTree deleted inside the mount: %v", err)
	}
}

func TestSetUpKeepsWhatIsSetUpResyncRefreshes(t *testing.T) {
	e := newTestEnv(t)
	e.api.putConfigMap("ns1", "cfg", map[string]string{"a": "1"}, nil)
	pod := testPod("uid-keep", []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}}})
	ms, err := e.mgr.SetUp(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.mgr.TearDown(ctx, pod.UID) })
	dir, _ := ms.HostPath("cfg")
	// The configMap changes, then goes away: a running pod's SetUp keeps
	// working with what it has, Resync brings the change and then reports
	// the deletion.
	e.api.putConfigMap("ns1", "cfg", map[string]string{"a": "2"}, nil)
	if _, err := e.mgr.SetUp(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if data, _ := readVolumeFile(t, filepath.Join(dir, "a")); data != "1" {
		t.Errorf("after SetUp a = %q, want 1 (SetUp does not refresh)", data)
	}
	if err := e.mgr.Resync(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if data, _ := readVolumeFile(t, filepath.Join(dir, "a")); data != "2" {
		t.Errorf("after Resync a = %q, want 2", data)
	}
	e.api.mu.Lock()
	delete(e.api.configMaps, "ns1/cfg")
	e.api.mu.Unlock()
	if _, err := e.mgr.SetUp(ctx, pod); err != nil {
		t.Errorf("SetUp of a set-up pod whose configMap is gone: %v", err)
	}
	if err := e.mgr.Resync(ctx, pod); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("Resync after the deletion = %v, want ErrNotFound", err)
	}
	if data, _ := readVolumeFile(t, filepath.Join(dir, "a")); data != "2" {
		t.Errorf("after the deletion a = %q, want the last content 2", data)
	}
}
