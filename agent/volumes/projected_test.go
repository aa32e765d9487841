package volumes

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"berth/internal/errdefs"
)

func TestDownwardAPIVolume(t *testing.T) {
	e := newTestEnv(t)
	items := []v1.DownwardAPIVolumeFile{
		{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}},
		{Path: "namespace", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}},
		{Path: "uid", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.uid"}, Mode: ptr(int32(0o400))},
		{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
		{Path: "annotations", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.annotations"}},
		{Path: "tier", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels['tier']"}},
		{Path: "res/cpu_limit_m", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.cpu", Divisor: resource.MustParse("1m")}},
		{Path: "res/cpu_request", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "app", Resource: "requests.cpu"}},
		{Path: "res/mem_limit_mi", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}},
		{Path: "res/mem_request", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "app", Resource: "requests.memory"}},
		{Path: "res/side_mem_limit_gi", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "side", Resource: "limits.memory", Divisor: resource.MustParse("1Gi")}},
	}
	app := v1.Container{Name: "app", Resources: v1.ResourceRequirements{
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("100Mi")},
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1500m"), v1.ResourceMemory: resource.MustParse("1000")},
	}}
	pod := testPod("uid-dapi", []v1.Volume{{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: items}}}},
		app, v1.Container{Name: "side"})
	if _, err := e.mgr.SetUp(ctx, pod); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.mgr.TearDown(ctx, pod.UID) })
	dir := filepath.Join(e.root, "pods", "uid-dapi", "volumes", PluginDownwardAPI, "info")
	want := map[string]string{
		"name":                  "web|0644",
		"namespace":             "ns1|0644",
		"uid":                   "uid-dapi|0400",
		"labels":                "app=\"web\"\ntier=\"front\"|0644",
		"annotations":           `note="a \"quoted\"\nvalue"|0644`,
		"tier":                  "front|0644",
		"res/cpu_limit_m":       "250|0644",
		"res/cpu_request":       "2|0644", // 1.5 rounded up
		"res/mem_limit_mi":      "100|0644",
		"res/mem_request":       "1000|0644",
		"res/side_mem_limit_gi": "8|0644", // no limit: node allocatable
	}
	if got := volumeFiles(t, dir); sortedMap(got) != sortedMap(want) {
		t.Errorf("downwardAPI volume:\n%s\nwant\n%s", sortedMap(got), sortedMap(want))
	}
	if len(mountsAt(t, dir)) != 0 {
		t.Errorf("downwardAPI volume is a mount point; upstream keeps it on disk")
	}

	// Labels change: Resync rewrites the file.
	pod.Labels["tier"] = "back"
	if err := e.mgr.Resync(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if data, _ := readVolumeFile(t, filepath.Join(dir, "tier")); data != "back" {
		t.Errorf("tier after label change and Resync = %q, want back", data)
	}
}

func TestDownwardAPIErrors(t *testing.T) {
	e := newTestEnv(t)
	for _, c := range []struct {
		name string
		item v1.DownwardAPIVolumeFile
		want string
	}{
		{"unsupported field", v1.DownwardAPIVolumeFile{Path: "x", FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}, "unsupported fieldPath: spec.nodeName"},
		{"bad subscript", v1.DownwardAPIVolumeFile{Path: "x", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name['x']"}}, `fieldPath "metadata.name['x']" does not support subscript`},
		{"unknown container", v1.DownwardAPIVolumeFile{Path: "x", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "ghost", Resource: "limits.cpu"}}, `container "ghost" not found`},
		{"unknown resource", v1.DownwardAPIVolumeFile{Path: "x", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.gpu"}}, "unsupported container resource : limits.gpu"},
		{"bad path", v1.DownwardAPIVolumeFile{Path: "../escape", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}, "must not contain '..'"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pod := testPod("uid-dapi-err", []v1.Volume{{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{c.item}}}}})
			_, err := e.mgr.SetUp(ctx, pod)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), `MountVolume.SetUp failed for volume "info" : `) {
				t.Fatalf("SetUp = %v, want %q", err, c.want)
			}
			if _, err := os.Lstat(filepath.Join(e.root, "pods", "uid-dapi-err", "volumes", PluginDownwardAPI, "info")); !os.IsNotExist(err) {
				t.Errorf("failed volume left its directory: %v", err)
			}
		})
	}
}

func projectedPod(uid string, fsGroup *int64) *v1.Pod {
	pod := testPod(uid, []v1.Volume{{Name: "all", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
		DefaultMode: ptr(int32(0o444)),
		Sources: []v1.VolumeProjection{
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Items: []v1.KeyToPath{{Key: "a", Path: "cfg/a"}}}},
			{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}, Items: []v1.KeyToPath{{Key: "user", Path: "creds/user", Mode: ptr(int32(0o400))}}}},
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "podname", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Audience: "vault", ExpirationSeconds: ptr(int64(3600)), Path: "token"}},
		},
	}}}})
	if fsGroup != nil {
		pod.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: fsGroup}
	}
	return pod
}

func TestProjectedVolume(t *testing.T) {
	e := newTestEnv(t)
	e.api.putConfigMap("ns1", "cfg", map[string]string{"a": "A"}, nil)
	e.api.putSecret("ns1", "creds", map[string][]byte{"user": []byte("admin")})
	pod := projectedPod("uid-proj", nil)
	if _, err := e.mgr.SetUp(ctx, pod); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.mgr.TearDown(ctx, pod.UID) })
	dir := filepath.Join(e.root, "pods", "uid-proj", "volumes", PluginProjected, "all")
	want := map[string]string{
		"cfg/a":      "A|0444",
		"creds/user": "admin|0400",
		"podname":    "web|0444",
		"token":      "token-ns1-builder-1|0444",
	}
	if got := volumeFiles(t, dir); sortedMap(got) != sortedMap(want) {
		t.Errorf("projected volume:\n%s\nwant\n%s", sortedMap(got), sortedMap(want))
	}
	if ms := mountsAt(t, dir); len(ms) != 1 || ms[0].FSType != "tmpfs" {
		t.Errorf("projected volume mounts %+v, want a tmpfs", ms)
	}
	calls := e.api.tokenCalls()
	if len(calls) != 1 {
		t.Fatalf("%d token requests, want 1", len(calls))
	}
	req := calls[0]
	ref := req.Req.Spec.BoundObjectRef
	if req.Namespace != "ns1" || req.Name != "builder" || strings.Join(req.Req.Spec.Audiences, ",") != "vault" ||
		req.Req.Spec.ExpirationSeconds == nil || *req.Req.Spec.ExpirationSeconds != 3600 ||
		ref == nil || ref.Kind != "Pod" || ref.APIVersion != "v1" || ref.Name != "web" || ref.UID != "uid-proj" {
		t.Errorf("token request %+v (bound to %+v), want ns1/builder audience vault 3600s bound to pod web/uid-proj", req, ref)
	}

	// Within 80% of the token's hour the cached token is kept.
	e.clock.Step(40 * time.Minute)
	if err := e.mgr.Resync(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if n := len(e.api.tokenCalls()); n != 1 {
		t.Errorf("%d token requests after 40 minutes, want 1 (cached)", n)
	}
	// After 80% a new token is requested and written.
	e.clock.Step(10 * time.Minute)
	if err := e.mgr.Resync(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if n := len(e.api.tokenCalls()); n != 2 {
		t.Errorf("%d token requests after 50 minutes, want 2 (refreshed)", n)
	}
	if data, _ := readVolumeFile(t, filepath.Join(dir, "token")); data != "token-ns1-builder-2" {
		t.Errorf("token after refresh = %q, want token-ns1-builder-2", data)
	}
}

func TestProjectedTokenWithFSGroup(t *testing.T) {
	e := newTestEnv(t)
	e.api.putConfigMap("ns1", "cfg", map[string]string{"a": "A"}, nil)
	e.api.putSecret("ns1", "creds", map[string][]byte{"user": []byte("admin")})
	pod := projectedPod("uid-proj-fsg", ptr(int64(3000)))
	if _, err := e.mgr.SetUp(ctx, pod); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.mgr.TearDown(ctx, pod.UID) })
	p := filepath.Join(e.root, "pods", "uid-proj-fsg", "volumes", PluginProjected, "all", "token")
	info, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := statOf(info)
	if info.Mode().Perm() != 0o640 || st.Gid != 3000 {
		t.Errorf("token mode %#o gid %d, want 0640 (0600 plus fsGroup read) gid 3000", info.Mode().Perm(), st.Gid)
	}
}

func TestProjectedErrors(t *testing.T) {
	e := newTestEnv(t)
	e.api.putSecret("ns1", "creds", map[string][]byte{"user": []byte("admin")})
	t.Run("missing configMap and no token getter", func(t *testing.T) {
		m, err := New(Config{RootDir: e.root, Objects: e.src, Clock: e.clock})
		if err != nil {
			t.Fatal(err)
		}
		pod := projectedPod("uid-proj-err", nil)
		_, err = m.SetUp(ctx, pod)
		if err == nil {
			t.Fatal("SetUp succeeded")
		}
		for _, want := range []string{`MountVolume.SetUp failed for volume "all" : `, `configmap "cfg" not found`, `serviceAccountToken "token": no token getter configured`} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("SetUp error %q lacks %q", err, want)
			}
		}
		if !errors.Is(err, errdefs.ErrNotFound) || !errors.Is(err, errdefs.ErrUnavailable) {
			t.Errorf("SetUp error %v: want both ErrNotFound and ErrUnavailable", err)
		}
		if _, err := os.Lstat(filepath.Join(e.root, "pods", "uid-proj-err", "volumes", PluginProjected, "all")); !os.IsNotExist(err) {
			t.Errorf("failed projected volume left its directory: %v", err)
		}
	})
}
