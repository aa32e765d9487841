// Package cni owns the node's CNI configuration: the conflist that
// containerd's CRI plugin reads (bridge + host-local on the node's pod CIDR +
// portmap), writing it atomically, and checking with libcni that every plugin
// it names is installed and speaks its CNI version.
package cni

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"regexp"

	"berth/internal/errdefs"
)

// Config describes one node's pod network.
type Config struct {
	// NetworkName is the CNI network name ("name" in the conflist).
	NetworkName string
	// BridgeName is the Linux bridge the pods attach to (at most 15 bytes).
	BridgeName string
	// PodCIDRs are the node's pod subnets; IPv4 only for now, exactly one.
	PodCIDRs []string
	// BinDirs are the directories searched for plugin binaries.
	BinDirs []string
	// ConfDir is the directory the conflist is written to (containerd's conf_dir).
	ConfDir string
	// DataDir is host-local's IP allocation store; it must be private to this
	// node instance, or two instances would hand out the same addresses.
	DataDir string
	// MTU of the bridge and the pod interfaces; 0 lets the plugin choose.
	MTU int
}

// FileName is the name Write gives the conflist inside Config.ConfDir.
const FileName = "10-berth.conflist"

// Version is the CNI spec version of the conflist.
const Version = "1.0.0"

// LoopbackVersion is the CNI version of the loopback network containerd's CRI
// plugin builds itself (go-cni's WithLoNetwork) for every sandbox; the
// loopback binary must be in BinDirs and speak it.
const LoopbackVersion = "0.3.1"

var networkNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.\-]*$`)

// maxIfNameLen is IFNAMSIZ-1: Linux interface names hold at most 15 bytes.
const maxIfNameLen = 15

// Validate reports the first problem with c, naming the field; the error wraps
// errdefs.ErrInvalidArgument.
func (c Config) Validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("cni config: %s: %s: %w", field, fmt.Sprintf(format, args...), errdefs.ErrInvalidArgument)
	}
	if c.NetworkName == "" {
		return bad("NetworkName", "must not be empty")
	}
	if !networkNameRE.MatchString(c.NetworkName) {
		return bad("NetworkName", "%q must start with a letter or digit and hold only letters, digits, '_', '.', '-'", c.NetworkName)
	}
	if c.BridgeName == "" {
		return bad("BridgeName", "must not be empty")
	}
	if len(c.BridgeName) > maxIfNameLen {
		return bad("BridgeName", "%q is %d bytes, an interface name holds at most %d", c.BridgeName, len(c.BridgeName), maxIfNameLen)
	}
	for _, r := range c.BridgeName {
		if r <= ' ' || r == '/' || r == ':' || r > '~' {
			return bad("BridgeName", "%q contains %q, not allowed in an interface name", c.BridgeName, r)
		}
	}
	if len(c.PodCIDRs) == 0 {
		return bad("PodCIDRs", "must hold one IPv4 CIDR")
	}
	if len(c.PodCIDRs) > 1 {
		return bad("PodCIDRs", "holds %d CIDRs %v; only a single IPv4 CIDR is supported", len(c.PodCIDRs), c.PodCIDRs)
	}
	for i, s := range c.PodCIDRs {
		field := fmt.Sprintf("PodCIDRs[%d]", i)
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return bad(field, "%q is not a CIDR: %v", s, err)
		}
		if !p.Addr().Is4() {
			return bad(field, "%q is not IPv4 (IPv6 pod networks are not supported yet)", s)
		}
		if p.Masked() != p {
			return bad(field, "%q has host bits set; the network is %s", s, p.Masked())
		}
		if p.Bits() > 30 {
			return bad(field, "%q is too small: a pod CIDR needs at least a /30 (gateway plus one pod)", s)
		}
	}
	if len(c.BinDirs) == 0 {
		return bad("BinDirs", "must name at least one plugin directory")
	}
	for i, d := range c.BinDirs {
		if !filepath.IsAbs(d) {
			return bad(fmt.Sprintf("BinDirs[%d]", i), "%q is not an absolute path", d)
		}
	}
	if !filepath.IsAbs(c.ConfDir) {
		return bad("ConfDir", "%q is not an absolute path", c.ConfDir)
	}
	if !filepath.IsAbs(c.DataDir) {
		return bad("DataDir", "%q is not an absolute path", c.DataDir)
	}
	if c.MTU != 0 && (c.MTU < 576 || c.MTU > 65535) {
		return bad("MTU", "%d is out of range: 0 (plugin default) or 576..65535", c.MTU)
	}
	return nil
}
