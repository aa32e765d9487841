package containerd

import (
	"os"
	"testing"

	"berth/internal/mountinfo"
	"berth/internal/prereq"
)

// After EnsureNetnsMount, /run/netns is a shared mount point, so an
// `ip netns add` run later changes no mount under the pods' namespaces;
// a second call changes nothing.
func TestEnsureNetnsMount(t *testing.T) {
	if os.Geteuid() != 0 {
		prereq.Missing(t, "mounting needs root")
	}
	for range 2 {
		if err := EnsureNetnsMount(); err != nil {
			t.Fatal(err)
		}
		mounts, err := mountinfo.Read("/proc/self/mountinfo")
		if err != nil {
			t.Fatal(err)
		}
		if !mountinfo.IsMountPoint(mounts, NetnsDir) {
			t.Fatalf("%s is not a mount point", NetnsDir)
		}
		if m := mountinfo.Containing(mounts, NetnsDir); m == nil || !m.Shared() {
			t.Fatalf("%s is not a shared mount: %+v", NetnsDir, m)
		}
	}
}
