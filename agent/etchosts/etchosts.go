// Package etchosts makes the kubelet-managed /etc/hosts of a pod: the file
// the agent writes to <pod dir>/etc-hosts and bind-mounts at /etc/hosts in
// each of the pod's containers, as upstream's kubelet does. A pod on the pod
// network gets localhost entries, its own IPs with its hostname (and FQDN
// when it has a subdomain) and its hostAliases; a host-network pod gets the
// node's hosts file and its hostAliases.
package etchosts

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ContainerPath is where the managed file is mounted in a container.
const ContainerPath = "/etc/hosts"

// FileName is the managed file's name in the pod's directory.
const FileName = "etc-hosts"

// The first line of a managed file; the Conformance suite looks for the
// pod-network one.
const (
	header            = "# Kubernetes-managed hosts file.\n"
	headerHostNetwork = "# Kubernetes-managed hosts file (host network).\n"
)

// ShouldMount reports whether container c of pod gets the managed file:
// the pod is on the host network or has an IP already, and c mounts no
// volume of its own at /etc/hosts.
func ShouldMount(pod *v1.Pod, c *v1.Container, podIPs []string) bool {
	if len(podIPs) == 0 && !pod.Spec.HostNetwork {
		return false
	}
	for _, m := range c.VolumeMounts {
		if m.MountPath == ContainerPath {
			return false
		}
	}
	return true
}

// Content is the managed file of a pod on the pod network: the localhost
// and IPv6 entries, one line per pod IP naming the hostname (preceded by
// hostname.domain when domain is set), then the host aliases.
func Content(podIPs []string, hostname, domain string, aliases []v1.HostAlias) []byte {
	var b bytes.Buffer
	b.WriteString(header)
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\n")
	b.WriteString("fe00::0\tip6-mcastprefix\n")
	b.WriteString("fe00::1\tip6-allnodes\n")
	b.WriteString("fe00::2\tip6-allrouters\n")
	for _, ip := range podIPs {
		if domain != "" {
			fmt.Fprintf(&b, "%s\t%s.%s\t%s\n", ip, hostname, domain, hostname)
		} else {
			fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
		}
	}
	b.Write(aliasEntries(aliases))
	return b.Bytes()
}

// HostNetworkContent is the managed file of a host-network pod: the node's
// hosts file (nodeHosts) under the host-network header, then the host
// aliases.
func HostNetworkContent(nodeHosts []byte, aliases []v1.HostAlias) []byte {
	var b bytes.Buffer
	b.WriteString(headerHostNetwork)
	b.Write(nodeHosts)
	b.Write(aliasEntries(aliases))
	return b.Bytes()
}

// aliasEntries are the hostAliases' lines, one per IP with its hostnames,
// under their own comment; nothing when there are none.
func aliasEntries(aliases []v1.HostAlias) []byte {
	if len(aliases) == 0 {
		return nil
	}
	var b bytes.Buffer
	b.WriteString("\n# Entries added by HostAliases.\n")
	for _, a := range aliases {
		fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
	}
	return b.Bytes()
}

// File writes the managed hosts file of pod into podDir (rewritten on each
// call, so a new sandbox's IPs replace the old ones) and returns its mount.
// nodeHostsPath is the node's hosts file, read for host-network pods.
func File(podDir, nodeHostsPath string, pod *v1.Pod, podIPs []string, hostname, domain string) (*runtimeapi.Mount, error) {
	var content []byte
	if pod.Spec.HostNetwork {
		node, err := os.ReadFile(nodeHostsPath)
		if err != nil {
			return nil, fmt.Errorf("managed /etc/hosts of a host-network pod: reading the node's hosts file: %w", err)
		}
		content = HostNetworkContent(node, pod.Spec.HostAliases)
	} else {
		content = Content(podIPs, hostname, domain, pod.Spec.HostAliases)
	}
	if err := os.MkdirAll(podDir, 0o750); err != nil {
		return nil, fmt.Errorf("managed /etc/hosts: %w", err)
	}
	path := filepath.Join(podDir, FileName)
	if err := writeFile(path, content); err != nil {
		return nil, fmt.Errorf("managed /etc/hosts: %w", err)
	}
	return &runtimeapi.Mount{ContainerPath: ContainerPath, HostPath: path, SelinuxRelabel: true}, nil
}

// writeFile replaces path's content with mode 0644 whatever the umask.
// The file is rewritten in place, not renamed over: running containers
// have it bind-mounted, and a rename would leave them the old inode.
func writeFile(path string, content []byte) error {
	if err := os.WriteFile(path, content, 0o644); err != nil {
		return err
	}
	return os.Chmod(path, 0o644)
}
