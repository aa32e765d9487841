package nodeenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"berth/cni"
	"berth/internal/containerd"
)

// CNIBinDir is where Debian's containernetworking-plugins installs the plugins.
const CNIBinDir = "/usr/lib/cni"

// BusyboxPath is Debian's busybox-static, the busybox image's binary.
const BusyboxPath = "/bin/busybox"

// goFallback is where the go tool is found when it is not on PATH.
const goFallback = "/usr/local/go/bin/go"

// CheckPrerequisites reports everything missing for an environment: root,
// containerd, runc and iptables on PATH, the CNI plugins in CNIBinDir (checked
// with libcni), a static busybox at BusyboxPath and the go tool (the pause
// image is compiled from cmd/pause). nil when all is there.
func CheckPrerequisites() error {
	var errs []error
	if os.Geteuid() != 0 {
		errs = append(errs, errors.New("root (containerd, netns and bridges need it)"))
	}
	for _, bin := range []string{"containerd", "containerd-shim-runc-v2", "runc", "iptables"} {
		if _, err := containerd.LookPath(bin); err != nil {
			errs = append(errs, fmt.Errorf("%s on PATH (Debian: apt-get install containerd runc iptables)", bin))
		}
	}
	if _, err := os.Stat(CNIBinDir + "/bridge"); err != nil {
		errs = append(errs, fmt.Errorf("CNI plugins in %s (Debian: apt-get install containernetworking-plugins)", CNIBinDir))
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := cni.Check(ctx, cni.Config{
			NetworkName: "berth-prereq", BridgeName: "berth-prereq", PodCIDRs: []string{"10.222.0.0/24"},
			BinDirs: []string{CNIBinDir}, ConfDir: "/nonexistent", DataDir: "/nonexistent",
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("working CNI plugins: %w", err))
		}
	}
	if _, err := os.Stat(BusyboxPath); err != nil {
		errs = append(errs, fmt.Errorf("%s (Debian: apt-get install busybox-static)", BusyboxPath))
	}
	if _, err := exec.LookPath("go"); err != nil {
		// testimages.BuildPause falls back to Go's default install dir too.
		if _, err := os.Stat(goFallback); err != nil {
			errs = append(errs, fmt.Errorf("the go tool on PATH or at %s (to build the pause image)", goFallback))
		}
	}
	return errors.Join(errs...)
}
