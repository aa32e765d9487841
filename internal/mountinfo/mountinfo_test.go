package mountinfo

import (
	"reflect"
	"strings"
	"testing"
)

const sample = `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro
30 22 0:25 / /var/lib/berth/pods/u1/volumes/kubernetes.io~secret/s rw,relatime - tmpfs tmpfs rw,size=1024k
31 22 8:1 /data /var/lib/berth/pods/u1/volume-subpaths/v/c/0 rw,relatime shared:1 - ext4 /dev/sda1 rw
32 30 0:26 / /var/lib/berth/pods/u1/volumes/kubernetes.io~secret/s/inner rw - tmpfs tmpfs rw
33 22 0:27 / /var/lib/berth/pods/u10/volumes/kubernetes.io~empty-dir/with\040space rw - tmpfs tmpfs rw
34 22 0:28 / /var/lib/berth/pods/u1/volumes/kubernetes.io~secret/s rw - tmpfs tmpfs rw
`

func TestParse(t *testing.T) {
	mounts, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if len(mounts) != 6 {
		t.Fatalf("%d mounts, want 6", len(mounts))
	}
	want := Mount{MountPoint: "/var/lib/berth/pods/u1/volumes/kubernetes.io~secret/s", Root: "/", FSType: "tmpfs", Source: "tmpfs", Options: "rw,relatime", Optional: []string{}, SuperOptions: "rw,size=1024k"}
	if !reflect.DeepEqual(mounts[1], want) {
		t.Errorf("mount[1] = %+v, want %+v", mounts[1], want)
	}
	if got := mounts[4].MountPoint; got != "/var/lib/berth/pods/u10/volumes/kubernetes.io~empty-dir/with space" {
		t.Errorf("escaped mount point decoded to %q", got)
	}
	if mounts[2].Root != "/data" {
		t.Errorf("root = %q, want /data", mounts[2].Root)
	}
}

func TestContainingAndShared(t *testing.T) {
	mounts, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path, want string
		shared     bool
	}{
		{"/etc/hosts", "/", true},
		{"/var/lib/berth/pods/u1/volumes/kubernetes.io~secret/s/inner/x", "/var/lib/berth/pods/u1/volumes/kubernetes.io~secret/s/inner", false},
		{"/var/lib/berth/pods/u1/volumes/kubernetes.io~secret/s/file", "/var/lib/berth/pods/u1/volumes/kubernetes.io~secret/s", false},
		{"/var/lib/berth/pods/u1/volume-subpaths/v/c/0", "/var/lib/berth/pods/u1/volume-subpaths/v/c/0", true},
	} {
		got := Containing(mounts, c.path)
		if got == nil || got.MountPoint != c.want || got.Shared() != c.shared {
			t.Errorf("Containing(%s) = %+v, want %s shared=%v", c.path, got, c.want, c.shared)
		}
	}
	// Of two mounts at one point the later (upper) one counts.
	if got := Containing(mounts, "/var/lib/berth/pods/u1/volumes/kubernetes.io~secret/s/file"); got.SuperOptions != "rw" {
		t.Errorf("Containing picked the lower mount %+v", got)
	}
}

func TestParseRejectsMalformed(t *testing.T) {
	if _, err := Parse(strings.NewReader("1 2 3 / /x\n")); err == nil {
		t.Fatal("malformed line accepted")
	}
}

func TestUnderDeepestAndUpperFirst(t *testing.T) {
	mounts, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range Under(mounts, "/var/lib/berth/pods/u1/") {
		got = append(got, m.MountPoint+"@"+m.SuperOptions)
	}
	want := []string{
		"/var/lib/berth/pods/u1/volumes/kubernetes.io~secret/s/inner@rw",
		"/var/lib/berth/pods/u1/volume-subpaths/v/c/0@rw",
		"/var/lib/berth/pods/u1/volumes/kubernetes.io~secret/s@rw",
		"/var/lib/berth/pods/u1/volumes/kubernetes.io~secret/s@rw,size=1024k",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Under = %v\nwant %v", got, want)
	}
	if !IsMountPoint(mounts, "/var/lib/berth/pods/u1/volume-subpaths/v/c/0/") {
		t.Error("IsMountPoint(subpath) = false")
	}
	if IsMountPoint(mounts, "/var/lib/berth/pods/u1") {
		t.Error("IsMountPoint(pod dir) = true")
	}
}

func TestReadSelf(t *testing.T) {
	mounts, err := Read(SelfPath)
	if err != nil {
		t.Fatal(err)
	}
	if !IsMountPoint(mounts, "/") {
		t.Errorf("no mount at / in %s", SelfPath)
	}
}

func TestParseBindMountAndReadOnly(t *testing.T) {
	mounts, err := Parse(strings.NewReader(`36 22 253:0 /tmp/vol\040with\040space /tmp/tgt\040dir ro,nosuid master:1 - ext4 /dev/vda rw
37 22 7:3 / /stage rw,noatime - ext4 /dev/loop3 rw
`))
	if err != nil {
		t.Fatal(err)
	}
	bind := mounts[0]
	if bind.MountPoint != "/tmp/tgt dir" || bind.Root != "/tmp/vol with space" || bind.FSType != "ext4" || bind.Source != "/dev/vda" {
		t.Errorf("bind mount parsed as %+v", bind)
	}
	if !reflect.DeepEqual(bind.Optional, []string{"master:1"}) || bind.Shared() {
		t.Errorf("slave mount: optional %v, shared %v", bind.Optional, bind.Shared())
	}
	if !bind.ReadOnly() {
		t.Error("ro,nosuid mount not read-only")
	}
	if mounts[1].ReadOnly() {
		t.Error("rw,noatime mount read-only")
	}
}

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{
		`/tmp/plain`:              "/tmp/plain",
		`/tmp/with\040space`:      "/tmp/with space",
		`/tmp/tab\011and\134back`: "/tmp/tab\tand\\back",
		`/tmp/new\012line`:        "/tmp/new\nline",
		`/tmp/trailing\04`:        `/tmp/trailing\04`,
		`/tmp/not\09octal`:        `/tmp/not\09octal`,
	} {
		if got := unescape(in); got != want {
			t.Errorf("unescape(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestUnderRootAndPrefixBoundary(t *testing.T) {
	mounts, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if got := len(Under(mounts, "/")); got != len(mounts) {
		t.Errorf("Under(/) = %d mounts, want all %d", got, len(mounts))
	}
	// u1 is not a prefix of u10's mounts.
	for _, m := range Under(mounts, "/var/lib/berth/pods/u1") {
		if strings.HasPrefix(m.MountPoint, "/var/lib/berth/pods/u10") {
			t.Errorf("Under(u1) includes %s", m.MountPoint)
		}
	}
	if got := Under(mounts, "/var/lib/berth/pods/u10"); len(got) != 1 {
		t.Errorf("Under(u10) = %v, want its one mount", got)
	}
}
