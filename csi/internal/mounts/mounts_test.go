package mounts

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

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
