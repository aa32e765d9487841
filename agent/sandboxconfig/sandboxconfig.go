// Package sandboxconfig translates a pod into the CRI PodSandboxConfig the
// kubelet would send with RunPodSandbox: metadata, hostname, log directory,
// DNS, port mappings, kubelet labels and annotations, and the Linux part
// (cgroup parent per QoS class, namespaces, sysctls, sandbox security context,
// pod resources and overhead).
//
// Build is a pure function of (pod, options) apart from reading the host's
// resolv.conf named in the DNS options; it creates nothing (the caller makes
// the log directory before RunPodSandbox).
package sandboxconfig

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/agent/dns"
	"berth/agent/qos"
	"berth/cri"
	"berth/internal/errdefs"
)

// Options are the node's settings a sandbox config depends on.
type Options struct {
	// Attempt is the sandbox's attempt number: 0 for the pod's first sandbox,
	// one more for each sandbox re-created after the previous one died.
	Attempt uint32
	// PodLogDir is the root of the pod log directories (the kubelet's
	// /var/log/pods); required.
	PodLogDir string
	// CgroupRoot is the cgroup the kubepods hierarchy lives under (the
	// kubelet's --cgroup-root); empty means "/".
	CgroupRoot string
	// DNS is the node's DNS setup.
	DNS dns.Options
}

// Build returns the PodSandboxConfig for pod, or an error naming the field
// that makes it impossible.
func Build(pod *v1.Pod, opts Options) (*runtimeapi.PodSandboxConfig, error) {
	cfg, _, err := BuildWithWarnings(pod, opts)
	return cfg, err
}

// BuildWithWarnings is Build that also returns the DNS warnings the kubelet
// reports as Warning events on the pod (DNSConfigForming, MissingClusterDNS).
func BuildWithWarnings(pod *v1.Pod, opts Options) (*runtimeapi.PodSandboxConfig, []dns.Warning, error) {
	if err := checkIdentity(pod); err != nil {
		return nil, nil, err
	}
	if opts.PodLogDir == "" {
		return nil, nil, fmt.Errorf("sandbox config for pod %s/%s: Options.PodLogDir is required: %w", pod.Namespace, pod.Name, errdefs.ErrInvalidArgument)
	}
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{
			Name:      pod.Name,
			Namespace: pod.Namespace,
			Uid:       string(pod.UID),
			Attempt:   opts.Attempt,
		},
		Labels:       cri.SandboxLabels(pod),
		Annotations:  cri.SandboxAnnotations(pod),
		LogDirectory: LogDirectory(opts.PodLogDir, pod.Namespace, pod.Name, pod.UID),
	}
	var err error
	var warnings []dns.Warning
	if cfg.DnsConfig, warnings, err = dns.PodDNS(pod, opts.DNS); err != nil {
		return nil, nil, err
	}
	if !pod.Spec.HostNetwork {
		hostname, domain, err := dns.Hostname(pod, opts.DNS.ClusterDomain)
		if err != nil {
			return nil, nil, err
		}
		if cfg.Hostname, err = dns.KernelHostname(pod, hostname, domain); err != nil {
			return nil, nil, err
		}
	}
	if cfg.PortMappings, err = PortMappings(pod); err != nil {
		return nil, nil, err
	}
	if cfg.Linux, err = linuxConfig(pod, opts); err != nil {
		return nil, nil, err
	}
	return cfg, warnings, nil
}

// LogDirectory is the pod's log directory, <podLogDir>/<namespace>_<name>_<uid>,
// where its containers' logs go (<container>/<restartCount>.log).
func LogDirectory(podLogDir, namespace, name string, uid types.UID) string {
	return filepath.Join(podLogDir, namespace+"_"+name+"_"+string(uid))
}

// checkIdentity rejects a pod without the metadata every sandbox is keyed by.
func checkIdentity(pod *v1.Pod) error {
	for _, f := range []struct{ field, value string }{
		{"metadata.name", pod.Name},
		{"metadata.namespace", pod.Namespace},
		{"metadata.uid", string(pod.UID)},
	} {
		if f.value == "" {
			return fmt.Errorf("sandbox config for pod %s/%s: %s is required: %w", pod.Namespace, pod.Name, f.field, errdefs.ErrInvalidArgument)
		}
	}
	return nil
}

// PortMappings returns the sandbox port mappings of the pod's app containers'
// ports, as the kubelet makes them: every declared port (hostPort 0 included,
// the runtime only publishes those with a hostPort), protocol TCP when unset,
// and a port repeated in one container (same name, or same family, protocol,
// hostIP, containerPort and hostPort when unnamed) listed once.
func PortMappings(pod *v1.Pod) ([]*runtimeapi.PortMapping, error) {
	var out []*runtimeapi.PortMapping
	for ci := range pod.Spec.Containers {
		c := &pod.Spec.Containers[ci]
		seen := map[string]bool{}
		for pi, p := range c.Ports {
			proto, err := Protocol(p.Protocol)
			if err != nil {
				return nil, fmt.Errorf("spec.containers[%d].ports[%d].protocol: %w", ci, pi, err)
			}
			if p.HostIP != "" && net.ParseIP(p.HostIP) == nil {
				return nil, fmt.Errorf("spec.containers[%d].ports[%d].hostIP: %q is not an IP address: %w", ci, pi, p.HostIP, errdefs.ErrInvalidArgument)
			}
			key := p.Name
			if key == "" {
				family := "any"
				if p.HostIP != "" {
					family = "v4"
					if net.ParseIP(p.HostIP).To4() == nil {
						family = "v6"
					}
				}
				key = family + "-" + proto.String() + "-" + p.HostIP + ":" + strconv.Itoa(int(p.ContainerPort)) + ":" + strconv.Itoa(int(p.HostPort))
			}
			if seen[key] {
				continue
			}
			seen[key] = true
			out = append(out, &runtimeapi.PortMapping{
				Protocol:      proto,
				ContainerPort: p.ContainerPort,
				HostPort:      p.HostPort,
				HostIp:        p.HostIP,
			})
		}
	}
	return out, nil
}

// Protocol converts a container port protocol to CRI's; empty is TCP (the
// API default).
func Protocol(p v1.Protocol) (runtimeapi.Protocol, error) {
	switch p {
	case v1.ProtocolTCP, "":
		return runtimeapi.Protocol_TCP, nil
	case v1.ProtocolUDP:
		return runtimeapi.Protocol_UDP, nil
	case v1.ProtocolSCTP:
		return runtimeapi.Protocol_SCTP, nil
	}
	return 0, fmt.Errorf("unsupported protocol %q (want TCP, UDP or SCTP): %w", p, errdefs.ErrInvalidArgument)
}

// NamespaceOptions returns the pod's namespace modes, shared by the sandbox
// and its containers: network and IPC are the node's with hostNetwork /
// hostIPC, else the pod's; PID is the node's with hostPID, the pod's with
// shareProcessNamespace, else each container's own; the user namespace is the
// node's (spec.hostUsers=false, user namespaces, is not supported).
func NamespaceOptions(pod *v1.Pod) (*runtimeapi.NamespaceOption, error) {
	if pod.Spec.HostUsers != nil && !*pod.Spec.HostUsers {
		return nil, fmt.Errorf("spec.hostUsers: false (user namespaces) is not supported by berth: %w", errdefs.ErrUnimplemented)
	}
	ns := &runtimeapi.NamespaceOption{
		Network:       runtimeapi.NamespaceMode_POD,
		Ipc:           runtimeapi.NamespaceMode_POD,
		Pid:           runtimeapi.NamespaceMode_CONTAINER,
		UsernsOptions: &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE},
	}
	if pod.Spec.HostNetwork {
		ns.Network = runtimeapi.NamespaceMode_NODE
	}
	if pod.Spec.HostIPC {
		ns.Ipc = runtimeapi.NamespaceMode_NODE
	}
	switch {
	case pod.Spec.HostPID:
		ns.Pid = runtimeapi.NamespaceMode_NODE
	case pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace:
		ns.Pid = runtimeapi.NamespaceMode_POD
	}
	return ns, nil
}

// SupplementalGroupsPolicy converts the pod's supplementalGroupsPolicy
// (Merge when unset).
func SupplementalGroupsPolicy(sc *v1.PodSecurityContext) (runtimeapi.SupplementalGroupsPolicy, error) {
	if sc == nil || sc.SupplementalGroupsPolicy == nil {
		return runtimeapi.SupplementalGroupsPolicy_Merge, nil
	}
	v, ok := runtimeapi.SupplementalGroupsPolicy_value[string(*sc.SupplementalGroupsPolicy)]
	if !ok {
		return 0, fmt.Errorf("spec.securityContext.supplementalGroupsPolicy: unsupported value %q (want Merge or Strict): %w",
			*sc.SupplementalGroupsPolicy, errdefs.ErrInvalidArgument)
	}
	return runtimeapi.SupplementalGroupsPolicy(v), nil
}

// SupplementalGroups is the pod's fsGroup followed by its supplementalGroups,
// the groups every container of the pod runs with.
func SupplementalGroups(sc *v1.PodSecurityContext) []int64 {
	if sc == nil {
		return nil
	}
	var groups []int64
	if sc.FSGroup != nil {
		groups = append(groups, *sc.FSGroup)
	}
	groups = append(groups, sc.SupplementalGroups...)
	return groups
}

// SELinuxOption converts SELinux options (nil stays nil).
func SELinuxOption(o *v1.SELinuxOptions) *runtimeapi.SELinuxOption {
	if o == nil {
		return nil
	}
	return &runtimeapi.SELinuxOption{User: o.User, Role: o.Role, Type: o.Type, Level: o.Level}
}

// HasPrivilegedContainer reports whether any container of the pod (init and
// ephemeral ones included) asks to be privileged; the sandbox then is too.
func HasPrivilegedContainer(pod *v1.Pod) bool {
	privileged := func(sc *v1.SecurityContext) bool {
		return sc != nil && sc.Privileged != nil && *sc.Privileged
	}
	for i := range pod.Spec.InitContainers {
		if privileged(pod.Spec.InitContainers[i].SecurityContext) {
			return true
		}
	}
	for i := range pod.Spec.Containers {
		if privileged(pod.Spec.Containers[i].SecurityContext) {
			return true
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if privileged(pod.Spec.EphemeralContainers[i].SecurityContext) {
			return true
		}
	}
	return false
}

// linuxConfig is the Linux part of the sandbox config.
func linuxConfig(pod *v1.Pod, opts Options) (*runtimeapi.LinuxPodSandboxConfig, error) {
	ns, err := NamespaceOptions(pod)
	if err != nil {
		return nil, err
	}
	sc := &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: ns,
		Privileged:       HasPrivilegedContainer(pod),
		// The sandbox (pause) always runs under the runtime's default seccomp
		// profile, whatever the pod asks for its containers.
		Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
	}
	lc := &runtimeapi.LinuxPodSandboxConfig{
		CgroupParent:    qos.CgroupParent(opts.CgroupRoot, pod),
		SecurityContext: sc,
		Sysctls:         map[string]string{},
		Resources:       qos.SandboxResources(pod),
		Overhead:        qos.OverheadResources(pod),
	}
	psc := pod.Spec.SecurityContext
	if psc == nil {
		return lc, nil
	}
	for i, s := range psc.Sysctls {
		if s.Name == "" {
			return nil, fmt.Errorf("spec.securityContext.sysctls[%d].name: required: %w", i, errdefs.ErrInvalidArgument)
		}
		// As the kubelet: slashes as separators become dots.
		lc.Sysctls[utilsysctl.NormalizeName(s.Name)] = s.Value
	}
	if psc.RunAsUser != nil {
		sc.RunAsUser = &runtimeapi.Int64Value{Value: *psc.RunAsUser}
	}
	if psc.RunAsGroup != nil {
		sc.RunAsGroup = &runtimeapi.Int64Value{Value: *psc.RunAsGroup}
	}
	sc.SupplementalGroups = SupplementalGroups(psc)
	if sc.SupplementalGroupsPolicy, err = SupplementalGroupsPolicy(psc); err != nil {
		return nil, err
	}
	sc.SelinuxOptions = SELinuxOption(psc.SELinuxOptions)
	return lc, nil
}
