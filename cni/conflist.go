package cni

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// The conflist's JSON shape: only the fields berth sets, in a fixed order.
type (
	conflist struct {
		CNIVersion string `json:"cniVersion"`
		Name       string `json:"name"`
		Plugins    []any  `json:"plugins"`
	}
	bridgePlugin struct {
		Type        string `json:"type"`
		Bridge      string `json:"bridge"`
		IsGateway   bool   `json:"isGateway"`
		IPMasq      bool   `json:"ipMasq"`
		HairpinMode bool   `json:"hairpinMode"`
		MTU         int    `json:"mtu,omitempty"`
		IPAM        ipam   `json:"ipam"`
	}
	ipam struct {
		Type    string        `json:"type"`
		Ranges  [][]ipamRange `json:"ranges"`
		Routes  []ipamRoute   `json:"routes"`
		DataDir string        `json:"dataDir"`
	}
	ipamRange struct {
		Subnet string `json:"subnet"`
	}
	ipamRoute struct {
		Dst string `json:"dst"`
	}
	portmapPlugin struct {
		Type         string          `json:"type"`
		Capabilities map[string]bool `json:"capabilities"`
	}
)

// Conflist renders cfg as a CNI 1.0.0 network configuration list:
//
//   - bridge: pods on cfg.BridgeName, the bridge is the pods' gateway, no
//     masquerading by the plugin (its ipMasq would also NAT pod-to-pod
//     traffic to other nodes; cni/routes masquerades only what leaves the
//     cluster's pod ranges), hairpin mode so a pod reaches itself through a
//     port mapping;
//   - host-local IPAM: one range per pod CIDR, a default route via the
//     gateway, allocations stored in cfg.DataDir;
//   - portmap with the portMappings capability, for hostPort.
//
// The loopback plugin is not listed: containerd's CRI plugin sets up lo
// itself with its own built-in loopback network (see LoopbackVersion), as
// with the kubelet-era standard conflists (bridge + portmap).
func Conflist(cfg Config) ([]byte, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ranges := make([][]ipamRange, 0, len(cfg.PodCIDRs))
	for _, c := range cfg.PodCIDRs {
		ranges = append(ranges, []ipamRange{{Subnet: c}})
	}
	list := conflist{
		CNIVersion: Version,
		Name:       cfg.NetworkName,
		Plugins: []any{
			bridgePlugin{
				Type:        "bridge",
				Bridge:      cfg.BridgeName,
				IsGateway:   true,
				IPMasq:      false,
				HairpinMode: true,
				MTU:         cfg.MTU,
				IPAM: ipam{
					Type:    "host-local",
					Ranges:  ranges,
					Routes:  []ipamRoute{{Dst: "0.0.0.0/0"}},
					DataDir: cfg.DataDir,
				},
			},
			portmapPlugin{
				Type:         "portmap",
				Capabilities: map[string]bool{"portMappings": true},
			},
		},
	}
	b, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("cni: encode conflist: %w", err)
	}
	return append(b, '\n'), nil
}

// Write renders cfg's conflist and puts it at ConfDir/FileName atomically
// (a temporary file in ConfDir renamed over the target), creating ConfDir if
// needed, so a runtime watching the directory never reads a partial file. It
// returns the conflist's path.
func Write(cfg Config) (string, error) {
	b, err := Conflist(cfg)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(cfg.ConfDir, 0o755); err != nil {
		return "", fmt.Errorf("cni: create conf dir: %w", err)
	}
	path := filepath.Join(cfg.ConfDir, FileName)
	// The temporary name does not end in .conf/.conflist/.json, so libcni
	// never loads it.
	tmp, err := os.CreateTemp(cfg.ConfDir, "."+FileName+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("cni: write conflist: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return "", fmt.Errorf("cni: write conflist %s: %w", tmp.Name(), err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return "", fmt.Errorf("cni: write conflist %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", fmt.Errorf("cni: sync conflist %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("cni: write conflist %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("cni: install conflist: %w", err)
	}
	return path, nil
}
