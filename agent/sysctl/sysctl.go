// Package sysctl is the agent's sysctl admission, as the kubelet's
// pkg/kubelet/sysctl: a pod's securityContext.sysctls must all be on the
// allowlist — the safe sysctls (namespaced and isolated per pod, gated by
// the kernel version that namespaced them) plus the node's
// --allowed-unsafe-sysctls — or the pod is rejected (SysctlForbidden).
// A sysctl of the network or IPC namespace is refused to a pod sharing
// that namespace with the host, unless the admin allowed it explicitly.
package sysctl

import (
	"fmt"
	"regexp"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"

	"berth/internal/errdefs"
)

// ReasonForbidden is the rejection's reason, upstream's.
const ReasonForbidden = "SysctlForbidden"

// safe are upstream's safe sysctls, with the kernel version that namespaced
// each (empty: any).
var safe = []struct{ name, kernel string }{
	{"kernel.shm_rmid_forced", ""},
	{"net.ipv4.ip_local_port_range", ""},
	{"net.ipv4.tcp_syncookies", ""},
	{"net.ipv4.ping_group_range", ""},
	{"net.ipv4.ip_unprivileged_port_start", ""},
	{"net.ipv4.ip_local_reserved_ports", "3.16"},
	{"net.ipv4.tcp_keepalive_time", "4.5"},
	{"net.ipv4.tcp_fin_timeout", "4.6"},
	{"net.ipv4.tcp_keepalive_intvl", "4.5"},
	{"net.ipv4.tcp_keepalive_probes", "4.5"},
	{"net.ipv4.tcp_rmem", "4.15"},
	{"net.ipv4.tcp_wmem", "4.15"},
}

// Safe returns the safe sysctls on a kernel of release kernelRelease
// (/proc/sys/kernel/osrelease); an unparsable release keeps only those
// safe on every kernel.
func Safe(kernelRelease string) []string {
	kv, _ := version.ParseGeneric(strings.TrimSpace(kernelRelease))
	var out []string
	for _, s := range safe {
		if s.kernel == "" || (kv != nil && kv.AtLeast(version.MustParseGeneric(s.kernel))) {
			out = append(out, s.name)
		}
	}
	return out
}

// The form of an allowlist pattern, upstream's: dot- or slash-separated
// segments, the last one possibly ending in *.
const (
	maxLength  = 253
	patternFmt = `([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]`
)

var patternRE = regexp.MustCompile("^" + patternFmt + "$")

// Allowlist holds the sysctls and sysctl prefixes (patterns ending in *) a
// pod may set, with their kernel namespace.
type Allowlist struct {
	names    map[string]utilsysctl.Namespace
	prefixes map[string]utilsysctl.Namespace
}

// NewAllowlist returns the allowlist of patterns: sysctl names (dots or
// slashes) or prefixes ending in *, each known to be namespaced.
func NewAllowlist(patterns []string) (*Allowlist, error) {
	a := &Allowlist{names: map[string]utilsysctl.Namespace{}, prefixes: map[string]utilsysctl.Namespace{}}
	for _, p := range patterns {
		if len(p) > maxLength || !patternRE.MatchString(p) {
			return nil, fmt.Errorf("sysctl %q must have at most %d characters and match regex %s: %w", p, maxLength, patternFmt, errdefs.ErrInvalidArgument)
		}
		ns, name, prefixed := utilsysctl.GetNamespace(p)
		if ns == utilsysctl.UnknownNamespace {
			return nil, fmt.Errorf("the sysctls %q are not known to be namespaced: %w", name, errdefs.ErrInvalidArgument)
		}
		if prefixed {
			a.prefixes[name] = ns
		} else {
			a.names[name] = ns
		}
	}
	return a, nil
}

// Admit checks the pod's sysctls; ok false comes with upstream's reason and
// message ("forbidden sysctl: …").
func (a *Allowlist) Admit(pod *v1.Pod) (reason, message string, ok bool) {
	sc := pod.Spec.SecurityContext
	if sc == nil {
		return "", "", true
	}
	for _, s := range sc.Sysctls {
		if err := a.check(s.Name, pod.Spec.HostNetwork, pod.Spec.HostIPC); err != nil {
			return ReasonForbidden, "forbidden sysctl: " + err.Error(), false
		}
	}
	return "", "", true
}

// check says why sysctl is not allowed for a pod with hostNet and hostIPC.
func (a *Allowlist) check(sysctl string, hostNet, hostIPC bool) error {
	sysctl = utilsysctl.NormalizeName(sysctl)
	ns, found := a.names[sysctl]
	if !found {
		for p, pns := range a.prefixes {
			if strings.HasPrefix(sysctl, p) {
				ns, found = pns, true
				break
			}
		}
	}
	switch {
	case !found:
		return fmt.Errorf("%q not allowlisted", sysctl)
	case ns == utilsysctl.IPCNamespace && hostIPC, ns == utilsysctl.NetNamespace && hostNet:
		return fmt.Errorf("%q not allowed with host %s enabled", sysctl, ns)
	}
	return nil
}
