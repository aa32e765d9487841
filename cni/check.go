package cni

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"

	"berth/internal/errdefs"
)

// Check verifies with libcni that cfg's network can work on this machine:
// the conflist parses, and every plugin it names (bridge, host-local, portmap)
// plus loopback — which containerd invokes for every sandbox — is an
// executable in cfg.BinDirs that answers the CNI VERSION command with the
// version it will be called with. It reports every problem, each naming the
// plugin: a missing binary wraps errdefs.ErrNotFound, an unsupported version
// errdefs.ErrUnimplemented, a plugin that fails to answer errdefs.ErrUnavailable;
// nil when all is well.
func Check(ctx context.Context, cfg Config) error {
	b, err := Conflist(cfg)
	if err != nil {
		return err
	}
	list, err := libcni.NetworkConfFromBytes(b)
	if err != nil {
		return fmt.Errorf("cni: conflist does not parse: %v: %w", err, errdefs.ErrInvalidArgument)
	}
	type want struct{ plugin, version string }
	var wants []want
	for _, p := range list.Plugins {
		wants = append(wants, want{p.Network.Type, list.CNIVersion})
		if p.Network.IPAM.Type != "" {
			wants = append(wants, want{p.Network.IPAM.Type, list.CNIVersion})
		}
	}
	wants = append(wants, want{"loopback", LoopbackVersion})

	cniConfig := libcni.NewCNIConfig(cfg.BinDirs, nil)
	var errs []error
	for _, w := range wants {
		if err := checkPlugin(ctx, cniConfig, cfg.BinDirs, w.plugin, w.version); err != nil {
			errs = append(errs, err)
		}
	}
	// One line per problem; errors.Is sees every cause.
	return errors.Join(errs...)
}

func checkPlugin(ctx context.Context, c *libcni.CNIConfig, dirs []string, plugin, version string) error {
	path, err := invoke.FindInPath(plugin, dirs)
	if err != nil {
		return fmt.Errorf("cni: plugin %q: no executable in %s: %w", plugin, strings.Join(dirs, ":"), errdefs.ErrNotFound)
	}
	info, err := c.GetVersionInfo(ctx, plugin)
	if err != nil {
		return fmt.Errorf("cni: plugin %q (%s): VERSION command failed: %v: %w", plugin, path, err, errdefs.ErrUnavailable)
	}
	if !slices.Contains(info.SupportedVersions(), version) {
		return fmt.Errorf("cni: plugin %q (%s): does not support CNI version %s (supports %s): %w",
			plugin, path, version, strings.Join(info.SupportedVersions(), ", "), errdefs.ErrUnimplemented)
	}
	return nil
}
