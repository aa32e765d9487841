package volumes

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/internal/errdefs"
)

func TestContainerMountsPropagationAndReadOnly(t *testing.T) {
	e := newTestEnv(t)
	e.api.putConfigMap("ns1", "cfg", map[string]string{"a": "A"}, nil)
	host := t.TempDir()
	vols := []v1.Volume{
		{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: host}}},
		{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
	}
	none, h2c, bidi := v1.MountPropagationNone, v1.MountPropagationHostToContainer, v1.MountPropagationBidirectional
	app := v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{
		{Name: "host", MountPath: "/a", MountPropagation: &none},
		{Name: "host", MountPath: "/b", MountPropagation: &h2c},
		{Name: "cfg", MountPath: "/c"},                     // read-only whatever the mount says
		{Name: "scratch", MountPath: "/d", ReadOnly: true}, // read-only because the mount says so
	}}
	priv := v1.Container{Name: "priv", SecurityContext: &v1.SecurityContext{Privileged: ptr(true)},
		VolumeMounts: []v1.VolumeMount{{Name: "host", MountPath: "/e", MountPropagation: &bidi}}}
	unpriv := v1.Container{Name: "unpriv", VolumeMounts: []v1.VolumeMount{{Name: "host", MountPath: "/e", MountPropagation: &bidi}}}
	pod := testPod("uid-mounts", vols, app, priv, unpriv)
	ms, err := e.mgr.SetUp(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.mgr.TearDown(ctx, pod.UID) })
	cfgDir, _ := ms.HostPath("cfg")
	scratchDir, _ := ms.HostPath("scratch")
	got, err := ms.Container(&app, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []*runtimeapi.Mount{
		{ContainerPath: "/a", HostPath: host, Propagation: runtimeapi.MountPropagation_PROPAGATION_PRIVATE},
		{ContainerPath: "/b", HostPath: host, Propagation: runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER},
		{ContainerPath: "/c", HostPath: cfgDir, Readonly: true, Propagation: runtimeapi.MountPropagation_PROPAGATION_PRIVATE},
		{ContainerPath: "/d", HostPath: scratchDir, Readonly: true, Propagation: runtimeapi.MountPropagation_PROPAGATION_PRIVATE},
	}
	if len(got) != len(want) {
		t.Fatalf("mounts = %v, want %v", got, want)
	}
	for i := range want {
		if got[i].String() != want[i].String() {
			t.Errorf("mount %d = %v, want %v", i, got[i], want[i])
		}
	}
	if got, err := ms.Container(&priv, nil); err != nil || got[0].Propagation != runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL {
		t.Errorf("privileged Bidirectional: %v, %v", got, err)
	}
	_, err = ms.Container(&unpriv, nil)
	if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), `container "unpriv": volumeMounts[0].mountPropagation: Bidirectional mount propagation is available only to privileged containers`) {
		t.Errorf("unprivileged Bidirectional: %v", err)
	}
	_, err = ms.Container(&v1.Container{Name: "x", VolumeMounts: []v1.VolumeMount{{Name: "ghost", MountPath: "/g"}}}, nil)
	if !errors.Is(err, errdefs.ErrNotFound) || !strings.Contains(err.Error(), `cannot find volume "ghost" to mount into container "x"`) {
		t.Errorf("unknown volume: %v", err)
	}
}

func TestSubPath(t *testing.T) {
	e := newTestEnv(t)
	e.api.putConfigMap("ns1", "cfg", map[string]string{"app.conf": "v1", "other": "o"}, nil)
	host := t.TempDir()
	if err := os.MkdirAll(filepath.Join(host, "logs", "web"), 0o755); err != nil {
		t.Fatal(err)
	}
	vols := []v1.Volume{
		{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: host}}},
	}
	app := v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{
		{Name: "cfg", MountPath: "/etc/app.conf", SubPath: "app.conf"},
		{Name: "scratch", MountPath: "/work", SubPath: "a/b"},
		{Name: "host", MountPath: "/logs", SubPathExpr: "logs/$(POD_NAME)"},
	}}
	pod := testPod("uid-subpath", vols, app)
	ms, err := e.mgr.SetUp(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.mgr.TearDown(ctx, pod.UID); err != nil {
			t.Error(err)
		}
	})
	mounts, err := ms.Container(&app, map[string]string{"POD_NAME": "web"})
	if err != nil {
		t.Fatal(err)
	}
	podDir := filepath.Join(e.root, "pods", "uid-subpath")
	for i, m := range mounts {
		want := filepath.Join(podDir, "volume-subpaths", app.VolumeMounts[i].Name, "app", string(rune('0'+i)))
		if m.HostPath != want {
			t.Errorf("mount %d host path %s, want %s", i, m.HostPath, want)
		}
		if n := len(mountsAt(t, want)); n != 1 {
			t.Errorf("%d bind mounts at %s, want 1", n, want)
		}
	}
	if !mounts[0].Readonly || mounts[1].Readonly {
		t.Errorf("readonly flags %v %v, want true (configMap) false (emptyDir)", mounts[0].Readonly, mounts[1].Readonly)
	}
	if data, _ := readVolumeFile(t, mounts[0].HostPath); data != "v1" {
		t.Errorf("subPath file reads %q, want v1", data)
	}
	// The missing subPath directory was created in the volume with its mode.
	scratch, _ := ms.HostPath("scratch")
	if info, err := os.Stat(filepath.Join(scratch, "a", "b")); err != nil || !info.IsDir() || info.Mode().Perm()&0o755 != 0o755 {
		t.Errorf("created subPath dir: %v %v", info, err)
	}
	// Writes through the bind mount land in the volume.
	if err := os.WriteFile(filepath.Join(mounts[2].HostPath, "x.log"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, _ := readVolumeFile(t, filepath.Join(host, "logs", "web", "x.log")); data != "hello" {
		t.Errorf("write through subPathExpr mount landed as %q", data)
	}

	// A configMap update reaches the volume but not the subPath mount, as upstream.
	e.api.putConfigMap("ns1", "cfg", map[string]string{"app.conf": "v2", "other": "o"}, nil)
	if err := e.mgr.Resync(ctx, pod); err != nil {
		t.Fatal(err)
	}
	cfgDir, _ := ms.HostPath("cfg")
	if data, _ := readVolumeFile(t, filepath.Join(cfgDir, "app.conf")); data != "v2" {
		t.Errorf("volume after update reads %q, want v2", data)
	}
	again, err := ms.Container(&app, map[string]string{"POD_NAME": "web"}) // a container restart
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := readVolumeFile(t, again[0].HostPath); data != "v1" {
		t.Errorf("subPath mount after update reads %q, want v1 (subPath mounts do not update)", data)
	}
	if n := len(mountsAt(t, again[0].HostPath)); n != 1 {
		t.Errorf("%d bind mounts after the restart, want 1 (reused)", n)
	}
}

func TestSubPathEscapesRejected(t *testing.T) {
	e := newTestEnv(t)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("host"), 0o600); err != nil {
		t.Fatal(err)
	}
	pod := testPod("uid-escape", []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}})
	ms, err := e.mgr.SetUp(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.mgr.TearDown(ctx, pod.UID) })
	scratch, _ := ms.HostPath("scratch")
	// Planted by a container: links out of the volume.
	if err := os.Symlink(outside, filepath.Join(scratch, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../../../../..", filepath.Join(scratch, "up")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(scratch, "in"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("in", filepath.Join(scratch, "inlink")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		mount   v1.VolumeMount
		env     map[string]string
		wantErr string
	}{
		{"dotdot", v1.VolumeMount{SubPath: "../x"}, nil, `volumeMounts[0].subPath "../x": must not contain '..'`},
		{"inner dotdot", v1.VolumeMount{SubPath: "in/../../x"}, nil, `volumeMounts[0].subPath "in/../../x": must not contain '..'`},
		{"absolute", v1.VolumeMount{SubPath: "/etc"}, nil, `volumeMounts[0].subPath "/etc": must not be an absolute path`},
		{"symlink out", v1.VolumeMount{SubPath: "out/secret"}, nil, `volumeMounts[0].subPath "out/secret": resolves to ` + filepath.Join(outside, "secret") + `, outside the volume`},
		{"symlink up", v1.VolumeMount{SubPath: "up"}, nil, `volumeMounts[0].subPath "up": resolves to `},
		{"mkdir through symlink out", v1.VolumeMount{SubPath: "out/newdir"}, nil, `outside the volume`},
		{"expr dotdot", v1.VolumeMount{SubPathExpr: "$(DIR)/x"}, map[string]string{"DIR": ".."}, `volumeMounts[0].subPathExpr "../x": must not contain '..'`},
		{"expr missing var", v1.VolumeMount{SubPathExpr: "$(NOPE)/x"}, map[string]string{}, `volumeMounts[0].subPathExpr "$(NOPE)/x": missing value for NOPE`},
		{"expr empty var", v1.VolumeMount{SubPathExpr: "a$(EMPTY)"}, map[string]string{"EMPTY": ""}, `missing value for EMPTY`},
		{"both set", v1.VolumeMount{SubPath: "a", SubPathExpr: "b"}, nil, `subPathExpr: may not be set together with subPath`},
	} {
		t.Run(c.name, func(t *testing.T) {
			vm := c.mount
			vm.Name, vm.MountPath = "scratch", "/mnt"
			_, err := ms.Container(&v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{vm}}, c.env)
			if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("Container = %v, want ErrInvalidArgument with %q", err, c.wantErr)
			}
			if _, err := os.Stat(filepath.Join(outside, "newdir")); !os.IsNotExist(err) {
				t.Errorf("a directory was created outside the volume")
			}
			if n := len(mountsAt(t, filepath.Join(e.root, "pods", "uid-escape", "volume-subpaths", "scratch", "app", "0"))); n != 0 {
				t.Errorf("rejected subPath was bind-mounted")
			}
		})
	}
	// A symlink staying inside the volume is fine.
	mounts, err := ms.Container(&v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{{Name: "scratch", MountPath: "/mnt", SubPath: "inlink"}}}, nil)
	if err != nil {
		t.Fatalf("subPath through an inner symlink: %v", err)
	}
	if err := os.WriteFile(filepath.Join(mounts[0].HostPath, "f"), []byte("ok"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(scratch, "in", "f")); err != nil {
		t.Errorf("inner-symlink subPath does not reach volume/in: %v", err)
	}
}

func TestRecursiveReadOnly(t *testing.T) {
	e := newTestEnv(t)
	host := t.TempDir()
	pod := testPod("uid-rro", []v1.Volume{{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: host}}}})
	h2c := v1.MountPropagationHostToContainer
	for _, c := range []struct {
		name      string
		mount     v1.VolumeMount
		supported bool
		want      bool
		wantErr   string
	}{
		{"unset", v1.VolumeMount{ReadOnly: true}, true, false, ""},
		{"Disabled", v1.VolumeMount{ReadOnly: true, RecursiveReadOnly: ptr(v1.RecursiveReadOnlyDisabled)}, true, false, ""},
		{"IfPossible supported", v1.VolumeMount{ReadOnly: true, RecursiveReadOnly: ptr(v1.RecursiveReadOnlyIfPossible)}, true, true, ""},
		{"IfPossible unsupported", v1.VolumeMount{ReadOnly: true, RecursiveReadOnly: ptr(v1.RecursiveReadOnlyIfPossible)}, false, false, ""},
		{"IfPossible writable", v1.VolumeMount{RecursiveReadOnly: ptr(v1.RecursiveReadOnlyIfPossible)}, true, false, ""},
		{"Enabled supported", v1.VolumeMount{ReadOnly: true, RecursiveReadOnly: ptr(v1.RecursiveReadOnlyEnabled)}, true, true, ""},
		{"Enabled unsupported", v1.VolumeMount{ReadOnly: true, RecursiveReadOnly: ptr(v1.RecursiveReadOnlyEnabled)}, false, false, `volume "host" requested recursive read-only mode, but it is not supported by the runtime`},
		{"Enabled writable", v1.VolumeMount{RecursiveReadOnly: ptr(v1.RecursiveReadOnlyEnabled)}, true, false, "Enabled requires readOnly: true"},
		{"Enabled propagating", v1.VolumeMount{ReadOnly: true, MountPropagation: &h2c, RecursiveReadOnly: ptr(v1.RecursiveReadOnlyEnabled)}, true, false, "Enabled requires mountPropagation None"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.mgr.cfg.RecursiveReadOnly = c.supported
			ms, err := e.mgr.SetUp(ctx, pod)
			if err != nil {
				t.Fatal(err)
			}
			vm := c.mount
			vm.Name, vm.MountPath = "host", "/h"
			mounts, err := ms.Container(&v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{vm}}, nil)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), `volumeMounts[0].recursiveReadOnly: `+c.wantErr) {
					t.Fatalf("Container = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if mounts[0].RecursiveReadOnly != c.want {
				t.Errorf("recursive_read_only = %v, want %v", mounts[0].RecursiveReadOnly, c.want)
			}
		})
	}
}
