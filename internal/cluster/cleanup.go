package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"

	"berth/cri"
)

// removeTimeout bounds removing every pod through CRI at shutdown.
const removeTimeout = 2 * time.Minute

// removeAllPods stops and removes every container and pod sandbox of the
// runtime at endpoint, so CNI DEL runs, the shims exit and nothing stays
// mounted. Containers get no grace period beyond CRI's default: the agent
// has already stopped.
func removeAllPods(endpoint string) error {
	ctx, cancel := context.WithTimeout(context.Background(), removeTimeout)
	defer cancel()
	client, err := cri.New(ctx, cri.Config{Endpoint: endpoint})
	if err != nil {
		return fmt.Errorf("cluster: removing pods: %w", err)
	}
	defer client.Close()
	var errs []error
	containers, err := client.ListContainers(ctx, nil)
	if err != nil {
		return fmt.Errorf("cluster: removing pods: %w", err)
	}
	for _, c := range containers {
		if err := client.StopContainer(ctx, c.Id, 10*time.Second); err != nil {
			errs = append(errs, err)
		}
		if err := client.RemoveContainer(ctx, c.Id); err != nil {
			errs = append(errs, err)
		}
	}
	sandboxes, err := client.ListPodSandbox(ctx, nil)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("cluster: removing pods: %w", err))...)
	}
	for _, s := range sandboxes {
		if err := client.StopPodSandbox(ctx, s.Id); err != nil {
			errs = append(errs, err)
		}
		if err := client.RemovePodSandbox(ctx, s.Id); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cluster: removing pods: %w", err)
	}
	return nil
}

// hostCleanup runs after berth's containerd stopped: whatever is still
// mounted under dataDir is unmounted (deepest first) and the pod bridge
// deleted.
func hostCleanup(dataDir, bridge string) error {
	return errors.Join(unmountUnder(dataDir), deleteLink(bridge))
}

// mountsUnder lists the mount points at or below dir, deepest first.
func mountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var points []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		// id parent major:minor root mountpoint options ...
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		p := unescapeMountinfo(fields[4])
		if p == dir || strings.HasPrefix(p, dir+"/") {
			points = append(points, p)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	sort.SliceStable(points, func(i, j int) bool {
		return strings.Count(points[i], "/") > strings.Count(points[j], "/")
	})
	return points, nil
}

// unescapeMountinfo decodes the octal escapes (\040 for a space …) of
// mountinfo paths.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unmountUnder unmounts everything at or below dir, deepest first; a busy
// mount is detached lazily.
func unmountUnder(dir string) error {
	points, err := mountsUnder(dir)
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	var errs []error
	for _, p := range points {
		if err := syscall.Unmount(p, 0); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil {
				errs = append(errs, fmt.Errorf("cluster: unmount %s: %w", p, err))
			}
		}
	}
	return errors.Join(errs...)
}

// deleteLink removes the interface name if it exists.
func deleteLink(name string) error {
	link, err := netlink.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil
		}
		return fmt.Errorf("cluster: look up link %s: %w", name, err)
	}
	if err := netlink.LinkDel(link); err != nil {
		return fmt.Errorf("cluster: delete link %s: %w", name, err)
	}
	return nil
}
