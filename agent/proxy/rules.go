// Package proxy is the node's service proxy (kube-proxy's job) on nftables:
// Build turns Services and EndpointSlices into the desired ruleset (pure), and
// Proxier watches them and applies that ruleset to one table atomically.
package proxy

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/knftables"
)

// The table's fixed chains, maps and sets.
const (
	servicesChain     = "services"
	masqueradingChain = "masquerading"
	markMasqChain     = "mark-for-masquerade"
	rejectChain       = "reject-chain"
	endpointsCheck    = "endpoints-check"
	nodePortsCheck    = "nodeport-endpoints-check"
	serviceIPsMap     = "service-ips"
	serviceNodePorts  = "service-nodeports"
	noEndpointSvcs    = "no-endpoint-services"
	noEndpointNPs     = "no-endpoint-nodeports"
	nodePortIPsSet    = "nodeport-ips"

	// masqueradeBit marks packets to be masqueraded on the way out, as
	// kube-proxy's default --masquerade-bit 14.
	masqueradeBit = "0x4000"
)

// baseChains hook the table into the kernel; the filter ones reject new
// connections to services with no endpoints (reject is only allowed at the
// input, forward and output hooks), the nat ones dispatch and masquerade.
var baseChains = []struct {
	name     string
	typ      knftables.BaseChainType
	hook     knftables.BaseChainHook
	priority knftables.BaseChainPriority
	jumps    []string // rules of the chain
}{
	{"filter-input", knftables.FilterType, knftables.InputHook, knftables.FilterPriority,
		[]string{"ct state new jump " + nodePortsCheck, "ct state new jump " + endpointsCheck}},
	{"filter-forward", knftables.FilterType, knftables.ForwardHook, knftables.FilterPriority,
		[]string{"ct state new jump " + endpointsCheck}},
	{"filter-output", knftables.FilterType, knftables.OutputHook, knftables.FilterPriority,
		[]string{"ct state new jump " + nodePortsCheck, "ct state new jump " + endpointsCheck}},
	{"nat-prerouting", knftables.NATType, knftables.PreroutingHook, knftables.DNATPriority, []string{"jump " + servicesChain}},
	{"nat-output", knftables.NATType, knftables.OutputHook, knftables.DNATPriority, []string{"jump " + servicesChain}},
	{"nat-postrouting", knftables.NATType, knftables.PostroutingHook, knftables.SNATPriority, []string{"jump " + masqueradingChain}},
}

// Params are the node's facts the ruleset depends on.
type Params struct {
	// NodeIPs are the addresses NodePorts are served on (IPv4, not
	// loopback).
	NodeIPs []netip.Addr
	// PodCIDR is the node's pod subnet: traffic to a ClusterIP from
	// outside it is masqueraded. Invalid (zero): none is.
	PodCIDR netip.Prefix
}

// Ruleset is the desired content of the proxy's table.
type Ruleset struct {
	// Containers are the maps and sets, in order.
	Containers []knftables.Object
	// Chains names every chain; chains holds their definitions in order
	// and Rules their rules.
	Chains map[string]bool
	chains []*knftables.Chain
	Rules  map[string][]string
	// Elements are the maps' and sets' elements by elementID.
	Elements map[string]*knftables.Element
	// AffinitySets names the per-endpoint sets of sessionAffinity ClientIP
	// among Containers: they are filled from the packet path, so a sync
	// keeps their elements.
	AffinitySets map[string]bool
}

// elementID identifies an element by container and key.
func elementID(e *knftables.Element) string {
	return e.Map + e.Set + " " + strings.Join(e.Key, " . ")
}

// affinityPrefix starts the names of the affinity sets.
const affinityPrefix = "affinity-"

// Build computes the ruleset for services and their EndpointSlices. Only
// IPv4 is programmed; ExternalName and headless Services have no rules.
func Build(services []*v1.Service, slices []*discoveryv1.EndpointSlice, p Params) *Ruleset {
	r := &Ruleset{Chains: map[string]bool{}, Rules: map[string][]string{}, Elements: map[string]*knftables.Element{}, AffinitySets: map[string]bool{}}
	r.fixed(p)
	bySvc := map[string][]*discoveryv1.EndpointSlice{}
	for _, s := range slices {
		if s.AddressType != discoveryv1.AddressTypeIPv4 {
			continue
		}
		if name := s.Labels[discoveryv1.LabelServiceName]; name != "" {
			key := s.Namespace + "/" + name
			bySvc[key] = append(bySvc[key], s)
		}
	}
	sorted := append([]*v1.Service(nil), services...)
	sort.Slice(sorted, func(i, j int) bool {
		return sorted[i].Namespace+"/"+sorted[i].Name < sorted[j].Namespace+"/"+sorted[j].Name
	})
	for _, svc := range sorted {
		ips := serviceIPs(svc)
		if len(ips) == 0 {
			continue
		}
		for i := range svc.Spec.Ports {
			r.servicePort(svc, &svc.Spec.Ports[i], ips, bySvc[svc.Namespace+"/"+svc.Name], p)
		}
	}
	return r
}

func (r *Ruleset) add(objs ...knftables.Object) {
	for _, o := range objs {
		if e, ok := o.(*knftables.Element); ok {
			r.Elements[elementID(e)] = e
		} else {
			r.Containers = append(r.Containers, o)
		}
	}
}

func (r *Ruleset) chain(name string, rules ...string) {
	r.defineChain(&knftables.Chain{Name: name}, rules...)
}

func (r *Ruleset) defineChain(c *knftables.Chain, rules ...string) {
	r.Chains[c.Name] = true
	r.chains = append(r.chains, c)
	r.Rules[c.Name] = rules
}

// fixed adds the chains, maps and sets every ruleset has.
func (r *Ruleset) fixed(p Params) {
	for _, bc := range baseChains {
		r.defineChain(&knftables.Chain{Name: bc.name, Type: ptr.To(bc.typ), Hook: ptr.To(bc.hook), Priority: ptr.To(bc.priority)}, bc.jumps...)
	}
	r.add(
		&knftables.Map{Name: serviceIPsMap, Type: "ipv4_addr . inet_proto . inet_service : verdict", Comment: ptr.To("ClusterIP and ExternalIP traffic")},
		&knftables.Map{Name: serviceNodePorts, Type: "inet_proto . inet_service : verdict", Comment: ptr.To("NodePort traffic")},
		&knftables.Map{Name: noEndpointSvcs, Type: "ipv4_addr . inet_proto . inet_service : verdict", Comment: ptr.To("services with no ready endpoints")},
		&knftables.Map{Name: noEndpointNPs, Type: "inet_proto . inet_service : verdict", Comment: ptr.To("nodeports with no ready endpoints")},
		&knftables.Set{Name: nodePortIPsSet, Type: "ipv4_addr", Comment: ptr.To("addresses NodePorts are served on")},
	)
	for _, ip := range p.NodeIPs {
		// Not on loopback, as kube-proxy's nftables mode: a local
		// listener on 127.0.0.1 keeps its port.
		if ip.Is4() && !ip.IsLoopback() {
			r.add(&knftables.Element{Set: nodePortIPsSet, Key: []string{ip.String()}})
		}
	}
	r.chain(markMasqChain, "meta mark set meta mark or "+masqueradeBit)
	r.chain(masqueradingChain,
		"meta mark & "+masqueradeBit+" == 0 return",
		"meta mark set meta mark xor "+masqueradeBit,
		"masquerade fully-random")
	r.chain(rejectChain, "reject")
	r.chain(endpointsCheck, "ip daddr . meta l4proto . th dport vmap @"+noEndpointSvcs)
	r.chain(nodePortsCheck, "ip daddr @"+nodePortIPsSet+" meta l4proto . th dport vmap @"+noEndpointNPs)
	r.chain(servicesChain,
		"ip daddr . meta l4proto . th dport vmap @"+serviceIPsMap,
		"ip daddr @"+nodePortIPsSet+" meta l4proto . th dport vmap @"+serviceNodePorts)
}

// serviceIPs are the IPv4 ClusterIPs of a proxied Service.
func serviceIPs(svc *v1.Service) []string {
	if svc.Spec.Type == v1.ServiceTypeExternalName {
		return nil
	}
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 && svc.Spec.ClusterIP != "" {
		ips = []string{svc.Spec.ClusterIP}
	}
	var out []string
	for _, s := range ips {
		if a, err := netip.ParseAddr(s); err == nil && a.Is4() {
			out = append(out, a.String())
		}
	}
	return out
}

// endpoint is one ready backend of a service port.
type endpoint struct {
	ip   string
	port int32
}

// readyEndpoints are the distinct ready IPv4 endpoints of the slices for
// the service port named name with protocol proto, sorted.
func readyEndpoints(slices []*discoveryv1.EndpointSlice, name string, proto v1.Protocol) []endpoint {
	seen := map[endpoint]bool{}
	var out []endpoint
	for _, s := range slices {
		for _, port := range s.Ports {
			if ptr.Deref(port.Name, "") != name || ptr.Deref(port.Protocol, v1.ProtocolTCP) != proto || port.Port == nil {
				continue
			}
			for _, ep := range s.Endpoints {
				// A nil ready condition means ready, as upstream.
				if !ptr.Deref(ep.Conditions.Ready, true) {
					continue
				}
				for _, a := range ep.Addresses {
					e := endpoint{ip: a, port: *port.Port}
					if !seen[e] {
						seen[e] = true
						out = append(out, e)
					}
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].ip != out[j].ip {
			return out[i].ip < out[j].ip
		}
		return out[i].port < out[j].port
	})
	return out
}

// chainName names a per-service chain: a short hash keeps names unique
// whatever the service's names, the readable rest helps whoever reads nft
// list ruleset.
func chainName(prefix, id string) string {
	h := sha256.Sum256([]byte(id))
	return prefix + "-" + strings.ToUpper(base32.StdEncoding.EncodeToString(h[:])[:8]) + "-" + id
}

func (r *Ruleset) servicePort(svc *v1.Service, sp *v1.ServicePort, ips []string, slices []*discoveryv1.EndpointSlice, p Params) {
	proto := strings.ToLower(string(sp.Protocol))
	if proto == "" {
		proto = "tcp"
	}
	port := strconv.Itoa(int(sp.Port))
	id := fmt.Sprintf("%s/%s/%s/%s", svc.Namespace, svc.Name, proto, sp.Name)
	eps := readyEndpoints(slices, sp.Name, protocolOf(sp))
	external := append([]string(nil), svc.Spec.ExternalIPs...)
	nodePort := ""
	if sp.NodePort != 0 && (svc.Spec.Type == v1.ServiceTypeNodePort || svc.Spec.Type == v1.ServiceTypeLoadBalancer) {
		nodePort = strconv.Itoa(int(sp.NodePort))
	}
	if len(eps) == 0 {
		// No ready endpoint: new connections are rejected.
		for _, ip := range ips {
			r.add(&knftables.Element{Map: noEndpointSvcs, Key: []string{ip, proto, port}, Value: []string{"goto " + rejectChain}})
		}
		for _, ip := range external {
			if a, err := netip.ParseAddr(ip); err == nil && a.Is4() {
				r.add(&knftables.Element{Map: noEndpointSvcs, Key: []string{a.String(), proto, port}, Value: []string{"goto " + rejectChain}})
			}
		}
		if nodePort != "" {
			r.add(&knftables.Element{Map: noEndpointNPs, Key: []string{proto, nodePort}, Value: []string{"goto " + rejectChain}})
		}
		return
	}

	svcChain := chainName("service", id)
	var rules []string
	if p.PodCIDR.IsValid() {
		for _, ip := range ips {
			// Traffic to the ClusterIP from outside the pod network (the
			// node itself, other hosts) is masqueraded so replies come back.
			rules = append(rules, fmt.Sprintf("ip daddr %s %s dport %s ip saddr != %s jump %s", ip, proto, port, p.PodCIDR.Masked(), markMasqChain))
		}
	}
	var affinity time.Duration
	if svc.Spec.SessionAffinity == v1.ServiceAffinityClientIP {
		affinity = time.Duration(v1.DefaultClientIPServiceAffinitySeconds) * time.Second
		if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
			affinity = time.Duration(*c.ClientIP.TimeoutSeconds) * time.Second
		}
	}
	balance := make([]string, len(eps))
	for i, ep := range eps {
		epID := fmt.Sprintf("%s__%s/%d", id, ep.ip, ep.port)
		epChain := chainName("endpoint", epID)
		// A pod reaching itself through the service (hairpin) is
		// masqueraded, else it would answer itself from its own address.
		epRules := []string{fmt.Sprintf("ip saddr %s jump %s", ep.ip, markMasqChain)}
		if affinity > 0 {
			// sessionAffinity ClientIP: each endpoint remembers its
			// clients for the timeout (part of the set's name: a new
			// timeout is a new set); they return to it before balancing.
			set := chainName("affinity", fmt.Sprintf("%s/%ds", epID, affinity/time.Second))
			r.AffinitySets[set] = true
			r.add(&knftables.Set{Name: set, Type: "ipv4_addr", Flags: []knftables.SetFlag{knftables.DynamicFlag, knftables.TimeoutFlag}, Timeout: ptr.To(affinity)})
			epRules = append(epRules, fmt.Sprintf("update @%s { ip saddr }", set))
			rules = append(rules, fmt.Sprintf("ip saddr @%s goto %s", set, epChain))
		}
		epRules = append(epRules, fmt.Sprintf("meta l4proto %s dnat to %s:%d", proto, ep.ip, ep.port))
		r.chain(epChain, epRules...)
		balance[i] = balanceRule(i, len(eps), epChain)
	}
	rules = append(rules, balance...)
	r.chain(svcChain, rules...)
	for _, ip := range ips {
		r.add(&knftables.Element{Map: serviceIPsMap, Key: []string{ip, proto, port}, Value: []string{"goto " + svcChain}})
	}
	if len(external) == 0 && nodePort == "" {
		return
	}
	// Traffic from outside (ExternalIPs, NodePorts) is always masqueraded
	// (externalTrafficPolicy Cluster).
	extChain := chainName("external", id)
	r.chain(extChain, "jump "+markMasqChain, "goto "+svcChain)
	for _, ip := range external {
		if a, err := netip.ParseAddr(ip); err == nil && a.Is4() {
			r.add(&knftables.Element{Map: serviceIPsMap, Key: []string{a.String(), proto, port}, Value: []string{"goto " + extChain}})
		}
	}
	if nodePort != "" {
		r.add(&knftables.Element{Map: serviceNodePorts, Key: []string{proto, nodePort}, Value: []string{"goto " + extChain}})
	}
}

// balanceRule is the rule sending a new connection to the i-th of n
// endpoints with probability 1/(n-i) when none of the earlier ones took it:
// uniformly random over the n, as iptables' statistic cascade. Not one
// anonymous verdict map per service (kube-proxy's nftables mode): the kernel
// names each anonymous set by scanning every set of the table, so a full
// sync of thousands of services costs it quadratic time (measured here: 16 s
// of kernel time at 3000 services × 10 endpoints, 1.3 s with these rules).
func balanceRule(i, n int, chain string) string {
	if left := n - i; left > 1 {
		return fmt.Sprintf("numgen random mod %d == 0 goto %s", left, chain)
	}
	return "goto " + chain
}

func protocolOf(sp *v1.ServicePort) v1.Protocol {
	if sp.Protocol == "" {
		return v1.ProtocolTCP
	}
	return sp.Protocol
}

// Transaction fills tx with the changes from previous (nil: unknown) to r,
// one atomic transaction, so packets see either the old rules or the new:
// the chains whose rules changed are flushed and rewritten, elements are
// deleted and added, and the chains and affinity sets r no longer has are
// deleted. Without a known previous content, every chain, map and set (but
// the affinity sets) is flushed and rewritten.
func (r *Ruleset) Transaction(tx *knftables.Transaction, previous *Ruleset, comment string) {
	full := previous == nil || previous.Rules == nil
	tx.Add(&knftables.Table{Comment: ptr.To(comment)})
	for _, o := range r.Containers {
		tx.Add(o)
		if !full {
			continue
		}
		switch o := o.(type) {
		case *knftables.Map:
			tx.Flush(&knftables.Map{Name: o.Name})
		case *knftables.Set:
			if !r.AffinitySets[o.Name] {
				tx.Flush(&knftables.Set{Name: o.Name})
			}
		}
	}
	if !full {
		// Elements gone or changed go first: they may lead to chains
		// deleted below.
		for _, id := range sortedKeys(previous.Elements) {
			if e := r.Elements[id]; e == nil || !slices.Equal(e.Value, previous.Elements[id].Value) {
				old := previous.Elements[id]
				tx.Delete(&knftables.Element{Map: old.Map, Set: old.Set, Key: old.Key})
			}
		}
	}
	var changed []*knftables.Chain
	for _, c := range r.chains {
		if full || !previous.Chains[c.Name] || !slices.Equal(previous.Rules[c.Name], r.Rules[c.Name]) {
			changed = append(changed, c)
		}
	}
	// All changed chains exist before any rule jumps to one.
	for _, c := range changed {
		tx.Add(c)
		tx.Flush(&knftables.Chain{Name: c.Name})
	}
	for _, c := range changed {
		for _, rule := range r.Rules[c.Name] {
			tx.Add(&knftables.Rule{Chain: c.Name, Rule: rule})
		}
	}
	for _, id := range sortedKeys(r.Elements) {
		if full {
			tx.Add(r.Elements[id])
		} else if old := previous.Elements[id]; old == nil || !slices.Equal(old.Value, r.Elements[id].Value) {
			tx.Add(r.Elements[id])
		}
	}
	if previous == nil {
		return
	}
	stale := missing(previous.Chains, r.Chains)
	for _, c := range stale {
		tx.Flush(&knftables.Chain{Name: c})
	}
	for _, c := range stale {
		tx.Delete(&knftables.Chain{Name: c})
	}
	// Sets last: the rules using them are gone by now.
	for _, set := range missing(previous.AffinitySets, r.AffinitySets) {
		tx.Delete(&knftables.Set{Name: set})
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// missing returns the names in had but not in has, sorted.
func missing(had, has map[string]bool) []string {
	var out []string
	for n := range had {
		if !has[n] {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}
