package dns

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"berth/internal/errdefs"
)

const (
	// maxHostnameLen is the longest hostname the kubelet gives a pod (the
	// kernel's 64-byte nodename field less its terminator).
	maxHostnameLen = 63
	// maxFQDNLen is the longest FQDN that fits the kernel's nodename field
	// when setHostnameAsFQDN is set.
	maxFQDNLen = 64
)

// Hostname returns the pod's hostname and domain as the kubelet computes
// them: spec.hostname if set, else the pod's name, cut to 63 characters
// (without a trailing '-' or '.'); the domain is
// <subdomain>.<namespace>.svc.<clusterDomain> when spec.subdomain is set,
// else empty. A hostname or subdomain that is not a DNS label is an error
// naming the field.
func Hostname(pod *v1.Pod, clusterDomain string) (hostname, domain string, err error) {
	hostname = pod.Name
	if pod.Spec.Hostname != "" {
		if msgs := validation.IsDNS1123Label(pod.Spec.Hostname); len(msgs) > 0 {
			return "", "", fmt.Errorf("spec.hostname %q is not a valid DNS label: %s: %w",
				pod.Spec.Hostname, strings.Join(msgs, "; "), errdefs.ErrInvalidArgument)
		}
		hostname = pod.Spec.Hostname
	}
	if len(hostname) > maxHostnameLen {
		hostname = strings.TrimRight(hostname[:maxHostnameLen], "-.")
		if hostname == "" {
			return "", "", fmt.Errorf("hostname of pod %q is invalid once cut to %d characters: %w",
				pod.Name, maxHostnameLen, errdefs.ErrInvalidArgument)
		}
	}
	if pod.Spec.Subdomain != "" {
		if msgs := validation.IsDNS1123Label(pod.Spec.Subdomain); len(msgs) > 0 {
			return "", "", fmt.Errorf("spec.subdomain %q is not a valid DNS label: %s: %w",
				pod.Spec.Subdomain, strings.Join(msgs, "; "), errdefs.ErrInvalidArgument)
		}
		domain = fmt.Sprintf("%s.%s.svc.%s", pod.Spec.Subdomain, pod.Namespace, clusterDomain)
	}
	return hostname, domain, nil
}

// KernelHostname returns the name the sandbox's kernel nodename is set to:
// the hostname, or hostname.domain when spec.setHostnameAsFQDN is true and
// the pod has a domain — an error if that FQDN is longer than 64 characters.
func KernelHostname(pod *v1.Pod, hostname, domain string) (string, error) {
	if domain == "" || pod.Spec.SetHostnameAsFQDN == nil || !*pod.Spec.SetHostnameAsFQDN {
		return hostname, nil
	}
	fqdn := hostname + "." + domain
	if len(fqdn) > maxFQDNLen {
		return "", fmt.Errorf("spec.setHostnameAsFQDN: FQDN %s is too long (%d characters is the max, %d characters requested): %w",
			fqdn, maxFQDNLen, len(fqdn), errdefs.ErrInvalidArgument)
	}
	return fqdn, nil
}
