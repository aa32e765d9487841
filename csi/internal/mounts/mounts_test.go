package mounts

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseMountinfo(t *testing.T) {
	data := `22 1 253:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
36 22 253:0 /tmp/vol\040with\040space /tmp/tgt\040dir ro,nosuid master:1 - ext4 /dev/vda rw
37 22 7:3 / /stage rw - ext4 /dev/loop3 rw
`
	got, err := parse([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("parsed %d mounts, want 3", len(got))
	}
	bind := got[1]
	if bind.MountPoint != "/tmp/tgt dir" || bind.Root != "/tmp/vol with space" || !bind.ReadOnly() || bind.FSType != "ext4" || bind.Source != "/dev/vda" {
		t.Errorf("bind mount parsed as %+v", bind)
	}
	if got[2].Source != "/dev/loop3" || got[2].ReadOnly() {
		t.Errorf("loop mount parsed as %+v", got[2])
	}
	if _, err := parse([]byte("garbage line\n")); err == nil {
		t.Error("a malformed line parsed without error")
	}
}

func TestFlags(t *testing.T) {
	f, err := Flags([]string{"ro,nosuid", "nodev", "rw"})
	if err != nil || f != unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV {
		t.Errorf("Flags = %#x, %v", f, err)
	}
	if _, err := Flags([]string{"discard"}); err == nil || !strings.Contains(err.Error(), `"discard"`) {
		t.Errorf("unknown option: %v, want an error naming it", err)
	}
}

func TestListFindsTheRoot(t *testing.T) {
	m, ok, err := Find("/")
	if err != nil || !ok || m.MountPoint != "/" {
		t.Errorf("Find(/) = %+v, %v, %v", m, ok, err)
	}
}
