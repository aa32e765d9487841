package node

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/internal/errdefs"
	"berth/internal/version"
)

// Limits on node.status.images, as the kubelet's.
const (
	MaxImagesInNodeStatus        = 50
	MaxNamesPerImageInNodeStatus = 5
)

// Labels the agent sets on its Node (the beta ones upstream still sets).
const (
	betaLabelOS   = "beta.kubernetes.io/os"
	betaLabelArch = "beta.kubernetes.io/arch"
)

// defaultLabelKeys are the labels reconciled on an existing Node.
var defaultLabelKeys = []string{v1.LabelHostname, v1.LabelOSStable, v1.LabelArchStable, betaLabelOS, betaLabelArch}

// DefaultLabels are the standard labels for a node of that hostname on
// this platform.
func DefaultLabels(hostname string) map[string]string {
	return map[string]string{
		v1.LabelHostname:   hostname,
		v1.LabelOSStable:   runtime.GOOS,
		v1.LabelArchStable: runtime.GOARCH,
		betaLabelOS:        runtime.GOOS,
		betaLabelArch:      runtime.GOARCH,
	}
}

// ReconcileLabels sets the default labels of want on existing, as the
// kubelet does for a Node that was already registered (other labels and the
// spec are left alone). It reports whether existing changed.
func ReconcileLabels(existing *v1.Node, want map[string]string) bool {
	changed := false
	for _, k := range defaultLabelKeys {
		v, ok := want[k]
		if !ok {
			continue
		}
		if existing.Labels[k] != v {
			if existing.Labels == nil {
				existing.Labels = map[string]string{}
			}
			existing.Labels[k] = v
			changed = true
		}
		if existing.Labels[k] == "" {
			delete(existing.Labels, k)
		}
	}
	return changed
}

// NodeImages is node.status.images from the runtime's images, as the
// kubelet reports them: largest first (equal sizes by ID), at most max images, each named by
// its digests then its tags (at most MaxNamesPerImageInNodeStatus names).
func NodeImages(images []*runtimeapi.Image, max int) []v1.ContainerImage {
	sorted := slices.Clone(images)
	// Ties are broken by ID: the runtime lists in no particular order, and
	// a reordering must not count as a status change.
	slices.SortFunc(sorted, func(a, b *runtimeapi.Image) int {
		switch {
		case a.GetSize() > b.GetSize():
			return -1
		case a.GetSize() < b.GetSize():
			return 1
		}
		return strings.Compare(a.GetId(), b.GetId())
	})
	if len(sorted) > max {
		sorted = sorted[:max]
	}
	out := make([]v1.ContainerImage, 0, len(sorted))
	for _, img := range sorted {
		names := append(slices.Clone(img.GetRepoDigests()), img.GetRepoTags()...)
		if len(names) > MaxNamesPerImageInNodeStatus {
			names = names[:MaxNamesPerImageInNodeStatus]
		}
		out = append(out, v1.ContainerImage{Names: names, SizeBytes: int64(img.GetSize())})
	}
	return out
}

// SystemInfo is what nodeInfo reports of the host.
type SystemInfo struct {
	KernelVersion, OSImage, MachineID, SystemUUID, BootID string
}

// ReadSystemInfo reads the kernel release (uname), the OS image
// (/etc/os-release PRETTY_NAME), machine-id, the DMI product UUID (when
// readable) and the boot ID.
func ReadSystemInfo() SystemInfo {
	var si SystemInfo
	var uts syscall.Utsname
	if err := syscall.Uname(&uts); err == nil {
		si.KernelVersion = utsString(uts.Release[:])
	}
	si.OSImage = "Linux"
	for _, p := range []string{"/etc/os-release", "/usr/lib/os-release"} {
		if b, err := os.ReadFile(p); err == nil {
			si.OSImage = parseOSRelease(b)
			break
		}
	}
	si.MachineID = firstLine("/etc/machine-id", "/var/lib/dbus/machine-id")
	si.SystemUUID = firstLine("/sys/class/dmi/id/product_uuid")
	si.BootID = firstLine("/proc/sys/kernel/random/boot_id")
	return si
}

func utsString(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}

// firstLine is the trimmed content of the first readable path.
func firstLine(paths ...string) string {
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			return strings.TrimSpace(string(b))
		}
	}
	return ""
}

// NodeInfo is status.nodeInfo for the host and the runtime's version.
func NodeInfo(si SystemInfo, rv *runtimeapi.VersionResponse) v1.NodeSystemInfo {
	info := v1.NodeSystemInfo{
		MachineID:       si.MachineID,
		SystemUUID:      si.SystemUUID,
		BootID:          si.BootID,
		KernelVersion:   si.KernelVersion,
		OSImage:         si.OSImage,
		KubeletVersion:  version.Kubernetes(),
		OperatingSystem: runtime.GOOS,
		Architecture:    runtime.GOARCH,
	}
	if rv != nil {
		info.ContainerRuntimeVersion = rv.GetRuntimeName() + "://" + rv.GetRuntimeVersion()
	}
	return info
}

// Addresses are status.addresses: the InternalIP and the Hostname.
func Addresses(internalIP net.IP, hostname string) []v1.NodeAddress {
	return []v1.NodeAddress{
		{Type: v1.NodeInternalIP, Address: internalIP.String()},
		{Type: v1.NodeHostName, Address: hostname},
	}
}

// DetectInternalIP picks the node's address: the first IPv4 address of the
// interface holding the default route, else the first global unicast
// address of any interface that is up and not loopback.
func DetectInternalIP() (net.IP, error) {
	if b, err := os.ReadFile("/proc/net/route"); err == nil {
		if name := defaultRouteInterface(b); name != "" {
			if iface, err := net.InterfaceByName(name); err == nil {
				if ip := firstAddress(iface); ip != nil {
					return ip, nil
				}
			}
		}
	}
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("node: list interfaces: %w", err)
	}
	for i := range ifaces {
		if ifaces[i].Flags&net.FlagUp == 0 || ifaces[i].Flags&net.FlagLoopback != 0 {
			continue
		}
		if ip := firstAddress(&ifaces[i]); ip != nil {
			return ip, nil
		}
	}
	return nil, fmt.Errorf("node: no non-loopback address to use as InternalIP; set Config.InternalIP: %w", errdefs.ErrNotFound)
}

// defaultRouteInterface is the interface of the IPv4 default route in
// /proc/net/route ("" if none).
func defaultRouteInterface(b []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 8 && f[1] == "00000000" && f[7] == "00000000" {
			return f[0]
		}
	}
	return ""
}

// firstAddress is the interface's first global unicast IPv4 address, else
// its first global unicast IPv6 one.
func firstAddress(iface *net.Interface) net.IP {
	addrs, err := iface.Addrs()
	if err != nil {
		return nil
	}
	var v6 net.IP
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || !ipn.IP.IsGlobalUnicast() {
			continue
		}
		if ip4 := ipn.IP.To4(); ip4 != nil {
			return ip4
		}
		if v6 == nil {
			v6 = ipn.IP
		}
	}
	return v6
}

// StatusChanged reports whether two statuses differ in more than the
// conditions' heartbeat times (the kubelet writes unchanged status only
// every report interval).
func StatusChanged(old, cur *v1.NodeStatus) bool {
	a, b := old.DeepCopy(), cur.DeepCopy()
	for _, s := range []*v1.NodeStatus{a, b} {
		for i := range s.Conditions {
			s.Conditions[i].LastHeartbeatTime = metav1.Time{}
		}
	}
	return !equality.Semantic.DeepEqual(a, b)
}
