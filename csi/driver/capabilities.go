package driver

import (
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// checkCapability tells whether csi-local can serve a volume capability and,
// if not, why. csi-local volumes are node-local filesystems: mount access
// only, single-node access modes only.
func checkCapability(c *csi.VolumeCapability) error {
	if c == nil {
		return fmt.Errorf("volume capability: must not be empty")
	}
	switch c.GetAccessType().(type) {
	case *csi.VolumeCapability_Mount:
	case *csi.VolumeCapability_Block:
		return fmt.Errorf("volume capability: block access is not supported, only mount")
	default:
		return fmt.Errorf("volume capability: access type (mount or block) is required")
	}
	if c.GetAccessMode() == nil {
		return fmt.Errorf("volume capability: access mode is required")
	}
	switch m := c.GetAccessMode().GetMode(); m {
	case csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY:
	default:
		return fmt.Errorf("volume capability: access mode %s is not supported (node-local volumes: SINGLE_NODE_WRITER or SINGLE_NODE_READER_ONLY)", m)
	}
	if fs := c.GetMount().GetFsType(); fs != "" && fs != "ext4" {
		return fmt.Errorf("volume capability: fsType %q is not supported (ext4, or empty for a directory)", fs)
	}
	return nil
}

// checkCapabilities checks a list of capabilities; the list must not be empty.
func checkCapabilities(caps []*csi.VolumeCapability) error {
	if len(caps) == 0 {
		return fmt.Errorf("volume capabilities: must not be empty")
	}
	for _, c := range caps {
		if err := checkCapability(c); err != nil {
			return err
		}
	}
	return nil
}

// wantsExt4 reports whether any capability asks for an ext4 filesystem.
func wantsExt4(caps []*csi.VolumeCapability) bool {
	for _, c := range caps {
		if c.GetMount().GetFsType() == "ext4" {
			return true
		}
	}
	return false
}

// readOnlyMode reports whether the capability's access mode is read-only.
func readOnlyMode(c *csi.VolumeCapability) bool {
	return c.GetAccessMode().GetMode() == csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY
}
