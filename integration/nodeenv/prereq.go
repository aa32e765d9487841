package nodeenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"berth/cni"
)

// CNIBinDir is where Debian's containernetworking-plugins installs the plugins.
const CNIBinDir = "/usr/lib/cni"

// BusyboxPath is Debian's busybox-static, the busybox image's binary.
const BusyboxPath = "/bin/busybox"

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
		if _, err := lookPath(bin); err != nil {
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
	if _, err := lookPath("go"); err != nil {
		errs = append(errs, errors.New("the go tool (to build the pause image)"))
	}
	return errors.Join(errs...)
}

// searchPath is PATH plus the sbin directories root's tools live in; it is
// also containerd's PATH (runc, iptables for the CNI plugins).
func searchPath() string {
	path := os.Getenv("PATH")
	for _, d := range []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin", "/usr/local/go/bin"} {
		if !strings.Contains(":"+path+":", ":"+d+":") {
			path += ":" + d
		}
	}
	return strings.TrimPrefix(path, ":")
}

func lookPath(bin string) (string, error) {
	for _, d := range strings.Split(searchPath(), ":") {
		p := d + "/" + bin
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

// capSysResource is CAP_SYS_RESOURCE's bit in /proc/self/status CapEff.
const capSysResource = 24

// needRestrictOOMScoreAdj reports whether this process lacks
// CAP_SYS_RESOURCE: then containerd cannot set the negative oom_score_adj it
// gives sandboxes and must run with restrict_oom_score_adj.
func needRestrictOOMScoreAdj() (bool, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return false, fmt.Errorf("parse CapEff %q: %w", v, err)
			}
			return caps&(1<<capSysResource) == 0, nil
		}
	}
	return false, errors.New("no CapEff line in /proc/self/status")
}
