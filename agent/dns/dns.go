// Package dns computes a pod's resolver configuration (the CRI DNSConfig the
// runtime writes into the sandbox's /etc/resolv.conf) and its hostname and
// domain, with the kubelet's rules: dnsPolicy ClusterFirst,
// ClusterFirstWithHostNet, Default and None, the pod's dnsConfig merged on
// top, and the resolver's limits (3 nameservers, 32 search domains of at most
// 253 characters, 2048 characters of search line) applied last.
package dns

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/internal/errdefs"
)

// The resolver limits the kubelet applies (glibc's, expanded DNS config).
const (
	// MaxNameservers is the most nameservers a resolv.conf may list.
	MaxNameservers = 3
	// MaxSearchPaths is the most search domains kept.
	MaxSearchPaths = 32
	// MaxSearchListChars is the longest search line kept (domains joined by spaces).
	MaxSearchListChars = 2048
	// maxSearchPathLen drops longer search domains (some resolvers abort on them).
	maxSearchPathLen = 253
	// maxResolvConfBytes bounds how much of the host's resolv.conf is read.
	maxResolvConfBytes = 10 << 20
)

// defaultClusterOptions are the resolver options of ClusterFirst pods.
var defaultClusterOptions = []string{"ndots:5"}

// Options is the node's DNS setup.
type Options struct {
	// ClusterDNS are the cluster DNS servers (the kubelet's --cluster-dns).
	// Without any, ClusterFirst pods fall back to the Default policy.
	ClusterDNS []net.IP
	// ClusterDomain is the cluster's DNS domain, e.g. "cluster.local"; empty
	// adds no cluster search domains.
	ClusterDomain string
	// ResolvConf is the host resolver file that Default pods inherit (and
	// whose search domains ClusterFirst pods append). Empty means none: such
	// pods get nameserver 127.0.0.1 (::1 on IPv6-only nodes) and search ".".
	ResolvConf string
	// NodeIPs choose 127.0.0.1 and/or ::1 when ResolvConf is empty; none
	// means 127.0.0.1.
	NodeIPs []net.IP
}

// Warning is something the caller should report as a Warning event on the
// pod (reason DNSConfigForming or MissingClusterDNS), as the kubelet does.
type Warning struct {
	Reason string
	// Message is the pod event's message.
	Message string
	// NodeMessage, when not empty, is the message of the same warning
	// recorded on the Node as well (MissingClusterDNS, as upstream).
	NodeMessage string
}

// Warning reasons.
const (
	ReasonDNSConfigForming  = "DNSConfigForming"
	ReasonMissingClusterDNS = "MissingClusterDNS"
)

type policyKind int

const (
	policyCluster policyKind = iota
	policyHost
	policyNone
)

// policyOf maps the pod's dnsPolicy to what it means on this pod: ClusterFirst
// on a hostNetwork pod means the host's resolver. An empty policy is the API
// default, ClusterFirst.
func policyOf(pod *v1.Pod) (policyKind, error) {
	switch pod.Spec.DNSPolicy {
	case v1.DNSNone:
		return policyNone, nil
	case v1.DNSClusterFirstWithHostNet:
		return policyCluster, nil
	case v1.DNSClusterFirst, "":
		if pod.Spec.HostNetwork {
			return policyHost, nil
		}
		return policyCluster, nil
	case v1.DNSDefault:
		return policyHost, nil
	}
	return 0, fmt.Errorf("spec.dnsPolicy: unsupported value %q (want ClusterFirst, ClusterFirstWithHostNet, Default or None): %w",
		pod.Spec.DNSPolicy, errdefs.ErrInvalidArgument)
}

// PodDNS returns the resolver configuration for the pod's sandbox, and the
// warnings the kubelet would report as events (limits exceeded, no cluster
// DNS). It reads opts.ResolvConf unless the pod's policy is None.
func PodDNS(pod *v1.Pod, opts Options) (*runtimeapi.DNSConfig, []Warning, error) {
	kind, err := policyOf(pod)
	if err != nil {
		return nil, nil, err
	}
	if kind == policyNone && pod.Spec.DNSConfig == nil {
		return nil, nil, fmt.Errorf("spec.dnsConfig: required when spec.dnsPolicy is None: %w", errdefs.ErrInvalidArgument)
	}
	var warnings []Warning
	cfg := &runtimeapi.DNSConfig{}
	if kind != policyNone {
		if cfg, err = hostConfig(opts.ResolvConf); err != nil {
			return nil, nil, err
		}
	}
	if kind == policyCluster && len(opts.ClusterDNS) == 0 {
		warnings = append(warnings, missingClusterDNS(pod))
		kind = policyHost
	}
	switch kind {
	case policyCluster:
		cfg.Servers = make([]string, 0, len(opts.ClusterDNS))
		for _, ip := range opts.ClusterDNS {
			cfg.Servers = append(cfg.Servers, ip.String())
		}
		cfg.Searches = clusterSearches(cfg.Searches, pod.Namespace, opts.ClusterDomain)
		cfg.Options = append([]string(nil), defaultClusterOptions...)
	case policyHost:
		if opts.ResolvConf == "" {
			cfg.Servers = loopbackServers(opts.NodeIPs)
			cfg.Searches = []string{"."}
		}
	}
	if dc := pod.Spec.DNSConfig; dc != nil {
		cfg.Servers = unique(append(cfg.Servers, dc.Nameservers...))
		cfg.Searches = unique(append(cfg.Searches, dc.Searches...))
		cfg.Options = mergeOptions(cfg.Options, dc.Options)
	}
	var w []Warning
	cfg.Servers, w = fitNameservers(cfg.Servers)
	warnings = append(warnings, w...)
	cfg.Searches, w = fitSearches(cfg.Searches)
	warnings = append(warnings, w...)
	return cfg, warnings, nil
}

// missingClusterDNS is the warning of a ClusterFirst pod on a node without
// cluster DNS servers, worded as the kubelet's: the node's message, and the
// pod's naming the pod (NAME_NAMESPACE(UID)) before it.
func missingClusterDNS(pod *v1.Pod) Warning {
	node := fmt.Sprintf("kubelet does not have ClusterDNS IP configured and cannot create Pod using %q policy. Falling back to %q policy.",
		v1.DNSClusterFirst, v1.DNSDefault)
	podDesc := fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
	return Warning{Reason: ReasonMissingClusterDNS, Message: fmt.Sprintf("pod: %q. %s", podDesc, node), NodeMessage: node}
}

// hostConfig reads the host's resolver file; an empty path gives an empty config.
func hostConfig(path string) (*runtimeapi.DNSConfig, error) {
	if path == "" {
		return &runtimeapi.DNSConfig{}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("host resolv.conf %q: %w: %w", path, err, errdefs.ErrNotFound)
		}
		return nil, fmt.Errorf("host resolv.conf %q: %w", path, err)
	}
	defer f.Close()
	servers, searches, options, err := ParseResolvConf(f)
	if err != nil {
		return nil, fmt.Errorf("host resolv.conf %q: %w", path, err)
	}
	return &runtimeapi.DNSConfig{Servers: servers, Searches: searches, Options: options}, nil
}

// ParseResolvConf reads a resolv.conf the way the kubelet does: nameserver
// lines accumulate, the last search line and the last options line win,
// search domains lose a trailing dot, and # comments are skipped. A
// nameserver line without an address is an error (the others are still
// returned).
func ParseResolvConf(r io.Reader) (servers, searches, options []string, err error) {
	data, err := io.ReadAll(io.LimitReader(r, maxResolvConfBytes+1))
	if err != nil {
		return nil, nil, nil, err
	}
	if len(data) > maxResolvConfBytes {
		return nil, nil, nil, fmt.Errorf("larger than %d bytes: %w", maxResolvConfBytes, errdefs.ErrInvalidArgument)
	}
	servers, searches, options = []string{}, []string{}, []string{}
	var problems []string
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		switch fields[0] {
		case "nameserver":
			if len(fields) < 2 {
				problems = append(problems, fmt.Sprintf("line %d: nameserver without an address", n+1))
				continue
			}
			servers = append(servers, fields[1])
		case "search":
			searches = []string{}
			for _, s := range fields[1:] {
				searches = append(searches, strings.TrimSuffix(s, "."))
			}
		case "options":
			options = append([]string{}, fields[1:]...)
		}
	}
	if len(problems) > 0 {
		err = fmt.Errorf("%s: %w", strings.Join(problems, "; "), errdefs.ErrInvalidArgument)
	}
	return servers, searches, options, err
}

// clusterSearches puts the cluster's search domains (<ns>.svc.<domain>,
// svc.<domain>, <domain>) before the host's, without duplicates.
func clusterSearches(host []string, namespace, domain string) []string {
	if domain == "" {
		return host
	}
	s := []string{namespace + ".svc." + domain, "svc." + domain, domain}
	return unique(append(s, host...))
}

// loopbackServers is the nameserver list for a node without a resolver file:
// the loopback address of each node IP's family.
func loopbackServers(nodeIPs []net.IP) []string {
	var out []string
	for _, ip := range nodeIPs {
		if ip.To4() == nil {
			out = append(out, "::1")
		} else {
			out = append(out, "127.0.0.1")
		}
	}
	if len(out) == 0 {
		out = []string{"127.0.0.1"}
	}
	return unique(out)
}

// unique drops repeated entries, keeping the first of each.
func unique(in []string) []string {
	seen := make(map[string]bool, len(in))
	out := make([]string, 0, len(in))
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// mergeOptions overlays the pod's dnsConfig options on the base options
// ("name" or "name:value"): a pod option replaces a base option of the same
// name in place, new names follow in the pod's order.
func mergeOptions(base []string, pod []v1.PodDNSConfigOption) []string {
	var names []string
	values := map[string]string{}
	set := func(name, value string) {
		if _, ok := values[name]; !ok {
			names = append(names, name)
		}
		values[name] = value
	}
	for _, o := range base {
		name, value, _ := strings.Cut(o, ":")
		set(name, value)
	}
	for _, o := range pod {
		value := ""
		if o.Value != nil {
			value = *o.Value
		}
		set(o.Name, value)
	}
	out := make([]string, 0, len(names))
	for _, name := range names {
		if v := values[name]; v != "" {
			out = append(out, name+":"+v)
		} else {
			out = append(out, name)
		}
	}
	return out
}

// fitNameservers keeps the first MaxNameservers servers.
func fitNameservers(servers []string) ([]string, []Warning) {
	if len(servers) <= MaxNameservers {
		return servers, nil
	}
	servers = servers[:MaxNameservers]
	return servers, []Warning{{Reason: ReasonDNSConfigForming, Message: fmt.Sprintf(
		"Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: %s",
		strings.Join(servers, " "))}}
}

// fitSearches keeps the first MaxSearchPaths domains, drops domains longer
// than 253 characters, then drops domains from the end until the search line
// fits in MaxSearchListChars.
func fitSearches(searches []string) ([]string, []Warning) {
	exceeded := false
	if len(searches) > MaxSearchPaths {
		searches = searches[:MaxSearchPaths]
		exceeded = true
	}
	kept := make([]string, 0, len(searches))
	for _, s := range searches {
		if len(s) > maxSearchPathLen {
			exceeded = true
			continue
		}
		kept = append(kept, s)
	}
	for len(kept) > 0 && len(strings.Join(kept, " ")) > MaxSearchListChars {
		kept = kept[:len(kept)-1]
		exceeded = true
	}
	if !exceeded {
		return kept, nil
	}
	return kept, []Warning{{Reason: ReasonDNSConfigForming, Message: fmt.Sprintf(
		"Search Line limits were exceeded, some search paths have been omitted, the applied search line is: %s",
		strings.Join(kept, " "))}}
}
