// Package proxy is the node's service proxy (kube-proxy's job) on nftables:
// Build turns Services and EndpointSlices into the desired ruleset (pure), and
// Proxier watches them and applies that ruleset to one table atomically.
package proxy

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"net"
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
	hairpinSet        = "hairpin-endpoints"

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
	// NodeName is this node's: the endpoints whose nodeName it is are the
	// local ones of the Local traffic policies.
	NodeName string
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
	// EndpointMaps names the per-chain endpoint maps among Containers
	// (numgen index → endpoint address and port).
	EndpointMaps map[string]bool
	// HealthChecks are the health-check node ports to serve, by port.
	HealthChecks map[int32]HealthCheck
	// UDP are the UDP services' destinations and the endpoints they lead
	// to, for the conntrack cleanup of flows to gone endpoints.
	UDP udpTargets
	// NoLocalInternal and NoLocalExternal count the service ports whose
	// Local internal or external traffic policy finds no endpoint here.
	NoLocalInternal, NoLocalExternal int
}

// elementID identifies an element by container and key.
func elementID(e *knftables.Element) string {
	return e.Map + e.Set + " " + strings.Join(e.Key, " . ")
}

// affinityPrefix starts the names of the affinity sets, endpointsPrefix
// those of the endpoint maps.
const (
	affinityPrefix  = "affinity-"
	endpointsPrefix = "endpoints-"
)

// Build computes the ruleset for services and their EndpointSlices. Only
// IPv4 is programmed; ExternalName and headless Services have no rules.
func Build(services []*v1.Service, slices []*discoveryv1.EndpointSlice, p Params) *Ruleset {
	return (&Builder{}).Build(services, slices, p)
}

// Builder is Build with a memory: a Service whose object and slices are the
// same (by resourceVersion) as at the previous Build reuses its rules, so
// a sync after a change computes only the changed services'. Not safe for
// concurrent use.
type Builder struct {
	params Params
	cache  map[string]*fragment // by namespace/name
	// chains and elements are the sizes of the last ruleset, to size the
	// next one's maps.
	chains, elements int
}

// fragment is one Service's part of a ruleset and what it was built from.
type fragment struct {
	key   string
	rules *Ruleset
}

func newRuleset() *Ruleset {
	return &Ruleset{Chains: map[string]bool{}, Rules: map[string][]string{}, Elements: map[string]*knftables.Element{},
		AffinitySets: map[string]bool{}, EndpointMaps: map[string]bool{}, HealthChecks: map[int32]HealthCheck{}, UDP: udpTargets{}}
}

// Build is the package's Build, reusing the unchanged services' rules.
func (b *Builder) Build(services []*v1.Service, endpointSlices []*discoveryv1.EndpointSlice, p Params) *Ruleset {
	if b.cache == nil || !slices.Equal(b.params.NodeIPs, p.NodeIPs) || b.params.PodCIDR != p.PodCIDR || b.params.NodeName != p.NodeName {
		b.cache, b.params = map[string]*fragment{}, p
	}
	r := newRuleset()
	r.Chains, r.Rules = make(map[string]bool, b.chains), make(map[string][]string, b.chains)
	r.chains, r.Elements = make([]*knftables.Chain, 0, b.chains), make(map[string]*knftables.Element, b.elements)
	r.fixed(p)
	bySvc := map[string][]*discoveryv1.EndpointSlice{}
	for _, s := range endpointSlices {
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
	next := map[string]*fragment{}
	for _, svc := range sorted {
		name := svc.Namespace + "/" + svc.Name
		svcSlices := bySvc[name]
		key := fragmentKey(svc, svcSlices)
		f := b.cache[name]
		if f == nil || key == "" || f.key != key {
			f = &fragment{key: key, rules: buildService(svc, svcSlices, p)}
		}
		if key != "" {
			next[name] = f
		}
		r.merge(f.rules)
	}
	b.cache, b.chains, b.elements = next, len(r.chains), len(r.Elements)
	return r
}

// fragmentKey identifies a Service's object and slices by UID and
// resourceVersion; "" (not cached) when one has no resourceVersion.
func fragmentKey(svc *v1.Service, slices []*discoveryv1.EndpointSlice) string {
	if svc.ResourceVersion == "" {
		return ""
	}
	parts := []string{string(svc.UID) + "@" + svc.ResourceVersion}
	for _, s := range slices {
		if s.ResourceVersion == "" {
			return ""
		}
		parts = append(parts, s.Name+"/"+string(s.UID)+"@"+s.ResourceVersion)
	}
	sort.Strings(parts[1:])
	return strings.Join(parts, " ")
}

// buildService is one Service's rules.
func buildService(svc *v1.Service, svcSlices []*discoveryv1.EndpointSlice, p Params) *Ruleset {
	r := newRuleset()
	ips := serviceIPs(svc)
	if len(ips) == 0 {
		return r
	}
	for i := range svc.Spec.Ports {
		r.servicePort(svc, &svc.Spec.Ports[i], ips, svcSlices, p)
	}
	if port := svc.Spec.HealthCheckNodePort; port != 0 && svc.Spec.Type == v1.ServiceTypeLoadBalancer &&
		svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal {
		r.HealthChecks[port] = HealthCheck{Namespace: svc.Namespace, Name: svc.Name, LocalEndpoints: localReady(svc, svcSlices, p.NodeName)}
	}
	return r
}

// merge adds a Service's rules f to r.
func (r *Ruleset) merge(f *Ruleset) {
	r.Containers = append(r.Containers, f.Containers...)
	for _, c := range f.chains {
		r.Chains[c.Name] = true
		r.chains = append(r.chains, c)
		r.Rules[c.Name] = f.Rules[c.Name]
	}
	for id, e := range f.Elements {
		r.Elements[id] = e
	}
	for s := range f.AffinitySets {
		r.AffinitySets[s] = true
	}
	for m := range f.EndpointMaps {
		r.EndpointMaps[m] = true
	}
	for port, hc := range f.HealthChecks {
		r.HealthChecks[port] = hc
	}
	for t, eps := range f.UDP {
		r.UDP[t] = eps
	}
	r.NoLocalInternal += f.NoLocalInternal
	r.NoLocalExternal += f.NoLocalExternal
}

// localReady counts the distinct addresses of the ready endpoints of svc's
// ports on node.
func localReady(svc *v1.Service, slices []*discoveryv1.EndpointSlice, node string) int {
	ips := map[string]bool{}
	for i := range svc.Spec.Ports {
		sp := &svc.Spec.Ports[i]
		for _, ep := range portEndpoints(slices, sp.Name, protocolOf(sp), node) {
			if ep.local && ep.ready {
				ips[ep.ip] = true
			}
		}
	}
	return len(ips)
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
		&knftables.Set{Name: hairpinSet, Type: "ipv4_addr . ipv4_addr", Comment: ptr.To("endpoint . endpoint: a pod reaching itself through a service")},
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
		// A pod reaching itself through a service (hairpin) is
		// masqueraded, else it would answer itself from its own address.
		"ct status dnat ip saddr . ip daddr @"+hairpinSet+" masquerade fully-random",
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

// endpoint is one backend of a service port.
type endpoint struct {
	ip   string
	port int32
	// ready, serving and terminating are its conditions; local: it runs on
	// this node.
	ready, serving, terminating, local bool
}

// portEndpoints are the distinct IPv4 endpoints of the slices for the
// service port named name with protocol proto, sorted, with their
// conditions (nil ready or serving means true, nil terminating false, as
// upstream) and whether they are on node.
func portEndpoints(slices []*discoveryv1.EndpointSlice, name string, proto v1.Protocol, node string) []endpoint {
	seen := map[[2]string]bool{}
	var out []endpoint
	for _, s := range slices {
		for _, port := range s.Ports {
			if ptr.Deref(port.Name, "") != name || ptr.Deref(port.Protocol, v1.ProtocolTCP) != proto || port.Port == nil {
				continue
			}
			for _, ep := range s.Endpoints {
				for _, a := range ep.Addresses {
					key := [2]string{a, strconv.Itoa(int(*port.Port))}
					if seen[key] {
						continue
					}
					seen[key] = true
					out = append(out, endpoint{
						ip: a, port: *port.Port,
						ready:       ptr.Deref(ep.Conditions.Ready, true),
						serving:     ptr.Deref(ep.Conditions.Serving, ptr.Deref(ep.Conditions.Ready, true)),
						terminating: ptr.Deref(ep.Conditions.Terminating, false),
						local:       node != "" && ptr.Deref(ep.NodeName, "") == node,
					})
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

// usable are the endpoints traffic may go to among eps (only the local
// ones when local): the ready ones, or when there is none the serving
// terminating ones, as kube-proxy's CategorizeEndpoints.
func usable(eps []endpoint, local bool) []endpoint {
	var ready, terminating []endpoint
	for _, ep := range eps {
		switch {
		case local && !ep.local:
		case ep.ready:
			ready = append(ready, ep)
		case ep.serving && ep.terminating:
			terminating = append(terminating, ep)
		}
	}
	if len(ready) > 0 {
		return ready
	}
	return terminating
}

// chainName names a per-service chain: a short hash keeps names unique
// whatever the service's names, the readable rest helps whoever reads nft
// list ruleset.
func chainName(prefix, id string) string {
	h := sha256.Sum256([]byte(id))
	return prefix + "-" + strings.ToUpper(base32.StdEncoding.EncodeToString(h[:])[:8]) + "-" + id
}

// servicePort adds the rules of one port of a service, as kube-proxy's
// nftables mode: new connections to the ClusterIP go to the internal
// policy's endpoints (all the usable ones, or with internalTrafficPolicy
// Local this node's), those to an ExternalIP or NodePort through the
// external chain to the external policy's (all, masqueraded; or with
// externalTrafficPolicy Local this node's, keeping the client's address).
// A service with no usable endpoint anywhere rejects; one whose policy
// leaves no endpoint on this node drops.
func (r *Ruleset) servicePort(svc *v1.Service, sp *v1.ServicePort, ips []string, slices []*discoveryv1.EndpointSlice, p Params) {
	proto := strings.ToLower(string(sp.Protocol))
	if proto == "" {
		proto = "tcp"
	}
	port := strconv.Itoa(int(sp.Port))
	id := fmt.Sprintf("%s/%s/%s/%s", svc.Namespace, svc.Name, proto, sp.Name)
	var external []string
	for _, ip := range svc.Spec.ExternalIPs {
		if a, err := netip.ParseAddr(ip); err == nil && a.Is4() {
			external = append(external, a.String())
		}
	}
	nodePort := ""
	if sp.NodePort != 0 && (svc.Spec.Type == v1.ServiceTypeNodePort || svc.Spec.Type == v1.ServiceTypeLoadBalancer) {
		nodePort = strconv.Itoa(int(sp.NodePort))
	}
	externallyAccessible := len(external) > 0 || nodePort != ""
	internalLocal := ptr.Deref(svc.Spec.InternalTrafficPolicy, v1.ServiceInternalTrafficPolicyCluster) == v1.ServiceInternalTrafficPolicyLocal
	externalLocal := externallyAccessible && (svc.Spec.Type == v1.ServiceTypeNodePort || svc.Spec.Type == v1.ServiceTypeLoadBalancer) &&
		svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal

	all := portEndpoints(slices, sp.Name, protocolOf(sp), p.NodeName)
	var clusterEps, localEps []endpoint
	if !internalLocal || (externallyAccessible && !externalLocal) {
		clusterEps = usable(all, false)
	}
	if internalLocal || externalLocal {
		localEps = usable(all, true)
	}
	hasEndpoints := len(usable(all, false)) > 0
	if proto == "udp" {
		reachable := append(append([]endpoint(nil), clusterEps...), localEps...)
		for _, ip := range append(append([]string(nil), ips...), external...) {
			r.UDP.add(net.JoinHostPort(ip, port), reachable)
		}
		if nodePort != "" {
			r.UDP.add("nodeport:"+nodePort, reachable)
		}
	}
	reject := func(verdict string, withClusterIPs, withExternal bool) {
		if withClusterIPs {
			for _, ip := range ips {
				r.add(&knftables.Element{Map: noEndpointSvcs, Key: []string{ip, proto, port}, Value: []string{verdict}})
			}
		}
		if withExternal {
			for _, ip := range external {
				r.add(&knftables.Element{Map: noEndpointSvcs, Key: []string{ip, proto, port}, Value: []string{verdict}})
			}
			if nodePort != "" {
				r.add(&knftables.Element{Map: noEndpointNPs, Key: []string{proto, nodePort}, Value: []string{verdict}})
			}
		}
	}
	if !hasEndpoints {
		// No usable endpoint anywhere: new connections are rejected.
		reject("goto "+rejectChain, true, true)
		return
	}

	affinity := affinityTimeout(svc)
	clusterChain := chainName("service", id)
	localChain := chainName("local", id)
	var masqOutside []string
	if p.PodCIDR.IsValid() {
		for _, ip := range ips {
			// Traffic to the ClusterIP from outside the pod network (the
			// node itself, other hosts) is masqueraded so replies come back.
			masqOutside = append(masqOutside, fmt.Sprintf("ip daddr %s %s dport %s ip saddr != %s jump %s", ip, proto, port, p.PodCIDR.Masked(), markMasqChain))
		}
	}
	if len(clusterEps) > 0 {
		var pre []string
		if !internalLocal {
			pre = masqOutside
		}
		r.policyChain(clusterChain, id, proto, clusterEps, affinity, pre)
	}
	if len(localEps) > 0 {
		var pre []string
		if internalLocal {
			pre = masqOutside
		}
		r.policyChain(localChain, id, proto, localEps, affinity, pre)
	}

	internalChain, hasInternal := clusterChain, len(clusterEps) > 0
	if internalLocal {
		internalChain, hasInternal = localChain, len(localEps) > 0
	}
	for _, ip := range ips {
		if hasInternal {
			r.add(&knftables.Element{Map: serviceIPsMap, Key: []string{ip, proto, port}, Value: []string{"goto " + internalChain}})
		}
	}
	if !hasInternal {
		// internalTrafficPolicy Local and no endpoint here.
		reject("drop", true, false)
		r.NoLocalInternal++
	}
	if !externallyAccessible {
		return
	}
	extChain := chainName("external", id)
	var extRules []string
	hasExternal := len(clusterEps) > 0
	if !externalLocal {
		// Cluster policy: masqueraded, as the endpoint may be elsewhere.
		extRules = []string{"jump " + markMasqChain, "goto " + clusterChain}
	} else {
		hasExternal = len(localEps) > 0
		if len(clusterEps) > 0 {
			if p.PodCIDR.IsValid() {
				// A pod reaching a NodePort or ExternalIP is not subject to
				// the policy (as if it went out and came back in).
				extRules = append(extRules, fmt.Sprintf("ip saddr %s goto %s", p.PodCIDR.Masked(), clusterChain))
			}
			// The node itself: its address is the source, masqueraded.
			extRules = append(extRules, "fib saddr type local jump "+markMasqChain, "fib saddr type local goto "+clusterChain)
		}
		if hasExternal {
			extRules = append(extRules, "goto "+localChain)
		}
	}
	r.chain(extChain, extRules...)
	for _, ip := range external {
		r.add(&knftables.Element{Map: serviceIPsMap, Key: []string{ip, proto, port}, Value: []string{"goto " + extChain}})
	}
	if nodePort != "" {
		r.add(&knftables.Element{Map: serviceNodePorts, Key: []string{proto, nodePort}, Value: []string{"goto " + extChain}})
	}
	if !hasExternal {
		// externalTrafficPolicy Local and no endpoint here: what the
		// external chain does not short-circuit is dropped.
		reject("drop", false, true)
		r.NoLocalExternal++
	}
}

// affinityTimeout is the sessionAffinity ClientIP timeout; zero: none.
func affinityTimeout(svc *v1.Service) time.Duration {
	if svc.Spec.SessionAffinity != v1.ServiceAffinityClientIP {
		return 0
	}
	if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
		return time.Duration(*c.ClientIP.TimeoutSeconds) * time.Second
	}
	return time.Duration(v1.DefaultClientIPServiceAffinitySeconds) * time.Second
}

// policyChain adds chain (after the rules pre) sending new connections to
// one of eps, uniformly at random: one dnat through the chain's endpoint
// map indexed by numgen (a single endpoint: a plain dnat). Hairpin traffic
// is masqueraded in postrouting by the hairpin set, so endpoints need no
// chain of their own; only sessionAffinity ClientIP does (see
// affinityChain).
func (r *Ruleset) policyChain(chain, id, proto string, eps []endpoint, affinity time.Duration, pre []string) {
	for _, ep := range eps {
		r.add(&knftables.Element{Set: hairpinSet, Key: []string{ep.ip, ep.ip}})
	}
	if affinity > 0 {
		r.affinityChain(chain, id, proto, eps, affinity, pre)
		return
	}
	rules := append([]string(nil), pre...)
	if len(eps) == 1 {
		rules = append(rules, fmt.Sprintf("meta l4proto %s dnat ip to %s:%d", proto, eps[0].ip, eps[0].port))
		r.chain(chain, rules...)
		return
	}
	m := endpointsPrefix + chain
	r.EndpointMaps[m] = true
	r.add(&knftables.Map{Name: m, TypeOf: "numgen random mod 1 : ip daddr . tcp dport"})
	for i, ep := range eps {
		r.add(&knftables.Element{Map: m, Key: []string{strconv.Itoa(i)}, Value: []string{ep.ip, strconv.Itoa(int(ep.port))}})
	}
	rules = append(rules, fmt.Sprintf("meta l4proto %s dnat ip to numgen random mod %d map @%s", proto, len(eps), m))
	r.chain(chain, rules...)
}

// affinityChain is policyChain for sessionAffinity ClientIP: each
// endpoint has a chain remembering its clients for the timeout in a set
// (part of the set's name: a new timeout is a new set); returning clients
// go to theirs before the others are balanced.
func (r *Ruleset) affinityChain(chain, id, proto string, eps []endpoint, affinity time.Duration, pre []string) {
	rules := append([]string(nil), pre...)
	balance := make([]string, len(eps))
	for i, ep := range eps {
		epID := fmt.Sprintf("%s__%s/%d", id, ep.ip, ep.port)
		epChain := chainName("endpoint", epID)
		set := chainName("affinity", fmt.Sprintf("%s/%ds", epID, affinity/time.Second))
		if !r.AffinitySets[set] {
			r.AffinitySets[set] = true
			r.add(&knftables.Set{Name: set, Type: "ipv4_addr", Flags: []knftables.SetFlag{knftables.DynamicFlag, knftables.TimeoutFlag}, Timeout: ptr.To(affinity)})
		}
		rules = append(rules, fmt.Sprintf("ip saddr @%s goto %s", set, epChain))
		if !r.Chains[epChain] {
			r.chain(epChain, fmt.Sprintf("update @%s { ip saddr }", set), fmt.Sprintf("meta l4proto %s dnat ip to %s:%d", proto, ep.ip, ep.port))
		}
		balance[i] = balanceRule(i, len(eps), epChain)
	}
	r.chain(chain, append(rules, balance...)...)
}

// balanceRule is the rule sending a new connection to the i-th of n
// endpoints' chains with probability 1/(n-i) when none of the earlier ones
// took it: uniformly random over the n, as iptables' statistic cascade.
// Not one anonymous verdict map per service (kube-proxy's nftables mode):
// the kernel names each anonymous set by scanning every set of the table,
// so a full sync of thousands of services costs it quadratic time
// (measured here: 16 s of kernel time at 3000 services × 10 endpoints).
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
		// A chain the table does not have yet has no rules to flush
		// (most of them on a first sync: a sixth of its operations).
		if previous == nil || previous.Chains[c.Name] {
			tx.Flush(&knftables.Chain{Name: c.Name})
		}
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
	r.deleteStale(tx, previous)
}

// deleteStale deletes the chains, affinity sets and endpoint maps previous
// had and r has not.
func (r *Ruleset) deleteStale(tx *knftables.Transaction, previous *Ruleset) {
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
	// Sets and maps last: the rules using them are gone by now.
	for _, set := range missing(previous.AffinitySets, r.AffinitySets) {
		tx.Delete(&knftables.Set{Name: set})
	}
	for _, m := range missing(previous.EndpointMaps, r.EndpointMaps) {
		tx.Delete(&knftables.Map{Name: m})
	}
}

// fixedChains are the chains every ruleset has (fixed), the rest being
// the services'.
var fixedChains = func() map[string]bool {
	m := map[string]bool{markMasqChain: true, masqueradingChain: true, rejectChain: true, endpointsCheck: true, nodePortsCheck: true, servicesChain: true}
	for _, bc := range baseChains {
		m[bc.name] = true
	}
	return m
}()

// Transactions is Transaction split for a big ruleset: when the services'
// chains number more than chunk, their rewrite is spread over several
// transactions of about chunk chains each (a chain with its rules and its
// endpoint map's elements always in one, so each service is consistent
// between them), after one creating every container and fixed chain, and
// before a last one switching the dispatch maps and deleting what is
// stale. Packets see, at each step, every service either as before or as
// after. newTx makes each transaction. A ruleset of chunk service chains
// or fewer is one transaction, as Transaction.
func (r *Ruleset) Transactions(newTx func() *knftables.Transaction, previous *Ruleset, comment string, chunk int) []*knftables.Transaction {
	var svcChains []*knftables.Chain
	for _, c := range r.chains {
		if !fixedChains[c.Name] {
			svcChains = append(svcChains, c)
		}
	}
	if chunk <= 0 || len(svcChains) <= chunk {
		tx := newTx()
		r.Transaction(tx, previous, comment)
		return []*knftables.Transaction{tx}
	}
	full := previous == nil || previous.Rules == nil
	changed := func(c *knftables.Chain) bool {
		return full || !previous.Chains[c.Name] || !slices.Equal(previous.Rules[c.Name], r.Rules[c.Name])
	}
	existed := func(name string) bool { return previous != nil && previous.Chains[name] }
	// Elements by the container they are in.
	byContainer := map[string][]string{}
	for _, id := range sortedKeys(r.Elements) {
		e := r.Elements[id]
		byContainer[e.Map+e.Set] = append(byContainer[e.Map+e.Set], id)
	}
	var prevByContainer map[string][]string
	if !full {
		prevByContainer = map[string][]string{}
		for _, id := range sortedKeys(previous.Elements) {
			e := previous.Elements[id]
			prevByContainer[e.Map+e.Set] = append(prevByContainer[e.Map+e.Set], id)
		}
	}
	// elementDiff writes the element changes of one container.
	elementDiff := func(tx *knftables.Transaction, container string) {
		if !full {
			for _, id := range prevByContainer[container] {
				if e := r.Elements[id]; e == nil || !slices.Equal(e.Value, previous.Elements[id].Value) {
					old := previous.Elements[id]
					tx.Delete(&knftables.Element{Map: old.Map, Set: old.Set, Key: old.Key})
				}
			}
		}
		for _, id := range byContainer[container] {
			if old := previousElement(previous, full, id); old == nil || !slices.Equal(old.Value, r.Elements[id].Value) {
				tx.Add(r.Elements[id])
			}
		}
	}

	// First: the table, every container and the fixed chains (created
	// empty if new; their rules come last).
	first := newTx()
	first.Add(&knftables.Table{Comment: ptr.To(comment)})
	for _, o := range r.Containers {
		first.Add(o)
	}
	for _, c := range r.chains {
		if fixedChains[c.Name] {
			first.Add(c)
		}
	}
	out := []*knftables.Transaction{first}
	// Then the services' chains, chunk by chunk (a chain only refers to
	// earlier ones, so to chains of its own or an earlier chunk).
	for i := 0; i < len(svcChains); i += chunk {
		tx := newTx()
		part := svcChains[i:min(i+chunk, len(svcChains))]
		for _, c := range part {
			m := endpointsPrefix + c.Name
			if !r.EndpointMaps[m] {
				continue
			}
			if full {
				tx.Flush(&knftables.Map{Name: m})
			}
			elementDiff(tx, m)
		}
		var rewrite []*knftables.Chain
		for _, c := range part {
			if changed(c) {
				rewrite = append(rewrite, c)
			}
		}
		for _, c := range rewrite {
			tx.Add(c)
			if existed(c.Name) {
				tx.Flush(&knftables.Chain{Name: c.Name})
			}
		}
		for _, c := range rewrite {
			for _, rule := range r.Rules[c.Name] {
				tx.Add(&knftables.Rule{Chain: c.Name, Rule: rule})
			}
		}
		if tx.NumOperations() > 0 {
			out = append(out, tx)
		}
	}
	// Last: the fixed chains' rules, the other containers' elements (the
	// dispatch maps), and what is stale.
	last := newTx()
	for _, o := range r.Containers {
		var name string
		switch o := o.(type) {
		case *knftables.Map:
			name = o.Name
		case *knftables.Set:
			name = o.Name
		}
		if r.EndpointMaps[name] || r.AffinitySets[name] {
			continue
		}
		if full {
			if _, isMap := o.(*knftables.Map); isMap {
				last.Flush(&knftables.Map{Name: name})
			} else {
				last.Flush(&knftables.Set{Name: name})
			}
		}
		elementDiff(last, name)
	}
	// Elements of endpoint maps that are gone (their maps go below).
	if !full {
		for m := range previous.EndpointMaps {
			if !r.EndpointMaps[m] {
				elementDiff(last, m)
			}
		}
	}
	for _, c := range r.chains {
		if fixedChains[c.Name] && changed(c) {
			if existed(c.Name) {
				last.Flush(&knftables.Chain{Name: c.Name})
			}
			for _, rule := range r.Rules[c.Name] {
				last.Add(&knftables.Rule{Chain: c.Name, Rule: rule})
			}
		}
	}
	r.deleteStale(last, previous)
	return append(out, last)
}

func previousElement(previous *Ruleset, full bool, id string) *knftables.Element {
	if full {
		return nil
	}
	return previous.Elements[id]
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
