package containerd

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"berth/internal/mountinfo"
)

// NetnsDir is where containerd's CRI plugin (and iproute2) keep the pods'
// network namespaces, each a bind mount of an nsfs file.
const NetnsDir = "/run/netns"

// EnsureNetnsMount makes NetnsDir a shared bind mount of itself, as iproute2
// does the first time `ip netns add` runs, unless it is a mount point
// already. Done before any pod exists, it keeps a later `ip netns add` from
// stacking that mount over the pods' namespace mounts: containerd would then
// unmount nothing and fail to remove them (EBUSY), leaking the namespaces.
func EnsureNetnsMount() error {
	if err := os.MkdirAll(NetnsDir, 0o755); err != nil {
		return fmt.Errorf("containerd: %w", err)
	}
	mounts, err := mountinfo.Read("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("containerd: %w", err)
	}
	if mountinfo.IsMountPoint(mounts, NetnsDir) {
		return nil
	}
	if err := unix.Mount(NetnsDir, NetnsDir, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("containerd: bind-mounting %s on itself: %w", NetnsDir, err)
	}
	if err := unix.Mount("", NetnsDir, "", unix.MS_SHARED|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("containerd: making %s a shared mount: %w", NetnsDir, err)
	}
	return nil
}
