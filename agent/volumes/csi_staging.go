package volumes

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"berth/csi/nodeclient"
)

// cleanupUnusedStaging unstages (UnmountDevice: NodeUnstageVolume through
// the driver, then the staging directory removed) every persistent CSI
// volume staged on the node that no pod has published. A pod's teardown
// unstages its volume right after unpublishing it, but once unpublished
// the pod's record of the volume (its vol_data.json) is gone: if the agent
// stops or the unstage fails in between, no later pod teardown knows the
// volume any more, and only the staging directory's own vol_data.json
// says it is staged. Volumes of drivers not registered are left as they
// are, so nothing is unmounted behind a driver's back.
func (m *Manager) cleanupUnusedStaging(ctx context.Context) error {
	if m.cfg.CSI == nil {
		return nil
	}
	pluginDir := filepath.Join(m.root, "plugins", nodeclient.PluginName)
	drivers, err := os.ReadDir(pluginDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, d := range drivers {
		if !d.IsDir() {
			continue
		}
		client, ok := m.cfg.CSI.CSIClient(d.Name())
		if !ok {
			continue
		}
		volumes, err := os.ReadDir(filepath.Join(pluginDir, d.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, v := range volumes {
			dir := filepath.Join(pluginDir, d.Name(), v.Name())
			data, err := nodeclient.ReadVolumeData(dir)
			if err != nil || data.DriverName != d.Name() ||
				nodeclient.StagingPath(m.root, data.DriverName, data.VolumeHandle) != filepath.Join(dir, "globalmount") {
				continue // not a staging directory this agent's layout made
			}
			if err := m.unstageIfUnused(ctx, client, data.DriverName, data.VolumeHandle); err != nil {
				errs = append(errs, fmt.Errorf("CSI volume %s of driver %s: %w", data.VolumeHandle, data.DriverName, err))
			}
		}
	}
	return errors.Join(errs...)
}

// unstageIfUnused unstages the driver's volume unless a pod on the node
// has it published; under the handle's lock, so never while a pod is
// staging and publishing it.
func (m *Manager) unstageIfUnused(ctx context.Context, client *nodeclient.Client, driver, handle string) error {
	defer m.csi.lockHandle(driver, handle)()
	inUse, err := m.csiInUse(driver, handle)
	if err != nil || inUse {
		return err
	}
	if err := client.UnmountDevice(ctx, m.root, handle); err != nil {
		return fmt.Errorf("UnmountDevice failed: %w", driverError(err))
	}
	m.cfg.Logger.Info("unused CSI volume unstaged", "driver", driver, "handle", handle)
	return nil
}
