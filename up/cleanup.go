package up

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vishvananda/netlink"

	"berth/cri"
	"berth/internal/mountinfo"
)

// removeTimeout bounds removing every pod through CRI at shutdown.
const removeTimeout = 2 * time.Minute

// RemoveAllPods stops and removes every container and pod sandbox of the
// runtime at endpoint, so CNI DEL runs, the shims exit and nothing stays
// mounted. Containers get no grace period beyond CRI's default: the agent
// has already stopped.
func RemoveAllPods(endpoint string) error {
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

// HostCleanup runs after berth's containerd stopped: whatever is still
// mounted under dataDir is unmounted (deepest first; a busy mount is an
// error, not detached) and the pod bridge deleted.
func HostCleanup(dataDir, bridge string) error {
	var errs []error
	if err := mountinfo.UnmountAll(dataDir); err != nil {
		errs = append(errs, fmt.Errorf("cluster: %w", err))
	}
	return errors.Join(append(errs, deleteLink(bridge))...)
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
