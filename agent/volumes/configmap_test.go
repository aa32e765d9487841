package volumes

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"berth/internal/errdefs"
)

// volumeFiles lists a volume as a container sees it: every user-visible
// file (through the symlinks), as "content|mode".
func volumeFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") {
			continue
		}
		var walk func(p string)
		walk = func(p string) {
			info, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if info.IsDir() {
				children, err := os.ReadDir(p)
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range children {
					walk(filepath.Join(p, c.Name()))
				}
				return
			}
			data, mode := readVolumeFile(t, p)
			rel, _ := filepath.Rel(dir, p)
			out[rel] = fmt.Sprintf("%s|%#o", data, mode.Perm())
		}
		walk(filepath.Join(dir, e.Name()))
	}
	return out
}

func sortedMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%q ", k, m[k])
	}
	return b.String()
}

func TestConfigMapAndSecretVolumes(t *testing.T) {
	e := newTestEnv(t)
	e.api.putConfigMap("ns1", "cfg", map[string]string{"a.conf": "A", "b.conf": "B"}, map[string][]byte{"bin": {0, 1, 2}})
	e.api.putSecret("ns1", "creds", map[string][]byte{"user": []byte("admin"), "pass": []byte("s3cret")})

	for _, c := range []struct {
		name   string
		vol    v1.VolumeSource
		plugin string
		tmpfs  bool
		want   map[string]string
	}{
		{
			name:   "configMap all keys default mode",
			vol:    v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}},
			plugin: PluginConfigMap,
			want:   map[string]string{"a.conf": "A|0644", "b.conf": "B|0644", "bin": "\x00\x01\x02|0644"},
		},
		{
			name: "configMap items, defaultMode and per-item mode",
			vol: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
				LocalObjectReference: v1.LocalObjectReference{Name: "cfg"},
				DefaultMode:          ptr(int32(0o440)),
				Items: []v1.KeyToPath{
					{Key: "a.conf", Path: "etc/app/a.conf"},
					{Key: "bin", Path: "data.bin", Mode: ptr(int32(0o600))},
				},
			}},
			plugin: PluginConfigMap,
			want:   map[string]string{"etc/app/a.conf": "A|0440", "data.bin": "\x00\x01\x02|0600"},
		},
		{
			name:   "secret all keys default 0644 on tmpfs",
			vol:    v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds"}},
			plugin: PluginSecret,
			tmpfs:  true,
			want:   map[string]string{"user": "admin|0644", "pass": "s3cret|0644"},
		},
		{
			name: "secret items with modes",
			vol: v1.VolumeSource{Secret: &v1.SecretVolumeSource{
				SecretName:  "creds",
				DefaultMode: ptr(int32(0o400)),
				Items:       []v1.KeyToPath{{Key: "pass", Path: "db/password"}, {Key: "user", Path: "db/user", Mode: ptr(int32(0o444))}},
			}},
			plugin: PluginSecret,
			tmpfs:  true,
			want:   map[string]string{"db/password": "s3cret|0400", "db/user": "admin|0444"},
		},
		{
			name:   "optional configMap missing: empty volume",
			vol:    v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "absent"}, Optional: ptr(true)}},
			plugin: PluginConfigMap,
			want:   map[string]string{},
		},
		{
			name:   "optional secret missing: empty volume",
			vol:    v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "absent", Optional: ptr(true)}},
			plugin: PluginSecret,
			tmpfs:  true,
			want:   map[string]string{},
		},
		{
			name: "optional configMap, missing key skipped",
			vol: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
				LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Optional: ptr(true),
				Items: []v1.KeyToPath{{Key: "nope", Path: "x"}, {Key: "b.conf", Path: "b"}},
			}},
			plugin: PluginConfigMap,
			want:   map[string]string{"b": "B|0644"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			uid := "uid-" + strings.ReplaceAll(c.name, " ", "-")
			uid = strings.NewReplacer(",", "", ":", "").Replace(uid)
			pod := testPod(uid, []v1.Volume{{Name: "v", VolumeSource: c.vol}},
				v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{{Name: "v", MountPath: "/etc/v"}}})
			ms, err := e.mgr.SetUp(ctx, pod)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := e.mgr.TearDown(ctx, pod.UID); err != nil {
					t.Error(err)
				}
			})
			dir := filepath.Join(e.root, "pods", uid, "volumes", c.plugin, "v")
			if got := volumeFiles(t, dir); sortedMap(got) != sortedMap(c.want) {
				t.Errorf("volume holds %s\nwant %s", sortedMap(got), sortedMap(c.want))
			}
			mounted := mountsAt(t, dir)
			if c.tmpfs != (len(mounted) == 1 && mounted[0].FSType == "tmpfs") {
				t.Errorf("mounts at %s: %+v, want tmpfs=%v", dir, mounted, c.tmpfs)
			}
			mounts, err := ms.Container(&pod.Spec.Containers[0], nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(mounts) != 1 || mounts[0].HostPath != dir || !mounts[0].Readonly || mounts[0].ContainerPath != "/etc/v" {
				t.Errorf("mounts = %v, want %s read-only at /etc/v", mounts, dir)
			}
		})
	}
}

func TestMissingObjectsKeepThePodWaiting(t *testing.T) {
	e := newTestEnv(t)
	e.api.putConfigMap("ns1", "cfg", map[string]string{"a": "A"}, nil)
	e.api.putSecret("ns1", "creds", map[string][]byte{"user": []byte("admin")})
	e.api.forbidden["ns1/locked"] = true
	for _, c := range []struct {
		name   string
		vol    v1.VolumeSource
		plugin string
		want   string
		class  error
	}{
		{"configMap missing", v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}}},
			PluginConfigMap, `MountVolume.SetUp failed for volume "v" : configmap "nope" not found`, errdefs.ErrNotFound},
		{"configMap optional=false missing", v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}, Optional: ptr(false)}},
			PluginConfigMap, `MountVolume.SetUp failed for volume "v" : configmap "nope" not found`, errdefs.ErrNotFound},
		{"configMap key missing", v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Items: []v1.KeyToPath{{Key: "zzz", Path: "z"}}}},
			PluginConfigMap, `MountVolume.SetUp failed for volume "v" : configmap references non-existent config key: zzz`, errdefs.ErrNotFound},
		{"secret missing", v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "nope"}},
			PluginSecret, `MountVolume.SetUp failed for volume "v" : secret "nope" not found`, errdefs.ErrNotFound},
		{"secret key missing", v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds", Items: []v1.KeyToPath{{Key: "pass", Path: "p"}}}},
			PluginSecret, `MountVolume.SetUp failed for volume "v" : references non-existent secret key: pass`, errdefs.ErrNotFound},
		{"secret forbidden", v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "locked"}},
			PluginSecret, `MountVolume.SetUp failed for volume "v" : secret "locked": secrets "locked" is forbidden`, errdefs.ErrPermissionDenied},
	} {
		t.Run(c.name, func(t *testing.T) {
			uid := strings.ReplaceAll("uid-"+c.name, " ", "-")
			uid = strings.ReplaceAll(uid, "=", "")
			pod := testPod(uid, []v1.Volume{{Name: "v", VolumeSource: c.vol}})
			ms, err := e.mgr.SetUp(ctx, pod)
			if err == nil || ms != nil {
				t.Fatalf("SetUp = %v, %v; want an error", ms, err)
			}
			var me *MountError
			if !errors.As(err, &me) || me.Volume != "v" {
				t.Fatalf("SetUp error %v is not a MountError for v", err)
			}
			if !strings.HasPrefix(err.Error(), c.want) || !errors.Is(err, c.class) {
				t.Errorf("SetUp error:\n%v\nwant prefix %q and class %v", err, c.want, c.class)
			}
			// Nothing set up half: no volume directory, nothing mounted.
			dir := filepath.Join(e.root, "pods", uid, "volumes", c.plugin, "v")
			if _, err := os.Lstat(dir); !os.IsNotExist(err) {
				t.Errorf("failed volume left %s: %v", dir, err)
			}
			if err := e.mgr.TearDown(ctx, pod.UID); err != nil {
				t.Errorf("TearDown after failed SetUp: %v", err)
			}
		})
	}
}

func TestNoObjectSource(t *testing.T) {
	requireRoot(t)
	m, err := New(Config{RootDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	pod := testPod("uid-nosrc", []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}}})
	_, err = m.SetUp(ctx, pod)
	if !errors.Is(err, errdefs.ErrUnavailable) || !strings.Contains(err.Error(), "no API server") {
		t.Fatalf("SetUp without object source = %v, want ErrUnavailable naming the API server", err)
	}
}

func TestUnsupportedVolumeType(t *testing.T) {
	e := newTestEnv(t)
	pod := testPod("uid-image", []v1.Volume{{Name: "img", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "busybox"}}}})
	_, err := e.mgr.SetUp(ctx, pod)
	if !errors.Is(err, errdefs.ErrUnimplemented) || !strings.Contains(err.Error(), `volume "img"`) {
		t.Fatalf("SetUp(image) = %v, want ErrUnimplemented naming the volume", err)
	}
}

func TestSetUpFSGroupOnAtomicVolume(t *testing.T) {
	e := newTestEnv(t)
	e.api.putSecret("ns1", "creds", map[string][]byte{"user": []byte("admin")})
	pod := testPod("uid-secret-fsg", []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds", DefaultMode: ptr(int32(0o400))}}}})
	pod.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: ptr(int64(2000))}
	if _, err := e.mgr.SetUp(ctx, pod); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.mgr.TearDown(ctx, pod.UID) })
	p := filepath.Join(e.root, "pods", "uid-secret-fsg", "volumes", PluginSecret, "v", "user")
	info, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := statOf(info)
	if st.Gid != 2000 || info.Mode().Perm() != 0o440 {
		t.Errorf("secret file gid %d mode %#o, want gid 2000 mode 0440 (0400 plus group read)", st.Gid, info.Mode().Perm())
	}
}

func TestNestedMountPointsInReadOnlyVolumes(t *testing.T) {
	e := newTestEnv(t)
	e.api.putSecret("ns1", "creds", map[string][]byte{"user": []byte("admin")})
	pod := testPod("uid-nested", []v1.Volume{
		{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds"}}},
		{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
	}, v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{
		{Name: "sec", MountPath: "/etc/sec"},
		{Name: "cache", MountPath: "/etc/sec/run/cache"},
		{Name: "cache", MountPath: "/etc/secrets-not-nested"},
	}})
	ms, err := e.mgr.SetUp(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.mgr.TearDown(ctx, pod.UID) })
	dir, _ := ms.HostPath("sec")
	if info, err := os.Stat(filepath.Join(dir, "run", "cache")); err != nil || !info.IsDir() {
		t.Errorf("nested mount point run/cache in the secret volume: %v, %v", info, err)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, en := range entries {
		if !strings.HasPrefix(en.Name(), "..") {
			names = append(names, en.Name())
		}
	}
	if strings.Join(names, ",") != "run,user" {
		t.Errorf("secret volume holds %v, want [run user]", names)
	}
}
