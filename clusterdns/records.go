package clusterdns

import (
	"net/netip"
	"strings"

	"github.com/miekg/dns"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// dnsSchemaVersion is the specification's version, served at
// dns-version.<zone>.
const dnsSchemaVersion = "1.1.0"

// zone answers the names of the cluster domain from a store. It is pure:
// no I/O but reads of the store.
type zone struct {
	origin string // the cluster domain, lower case, fully qualified
	ttl    uint32
	self   netip.Addr // the server's address, for ns.dns.<zone>
	st     store
}

// result is an answer: rcode, answer and additional sections. Negative
// answers (no answer records) get the SOA from the caller.
type result struct {
	rcode  int
	answer []dns.RR
	extra  []dns.RR
}

var (
	nxdomain = result{rcode: dns.RcodeNameError}
	nodata   = result{rcode: dns.RcodeSuccess}
)

func (z *zone) hdr(name string, t uint16) dns.RR_Header {
	return dns.RR_Header{Name: name, Rrtype: t, Class: dns.ClassINET, Ttl: z.ttl}
}

// soa is the zone's SOA, the authority of negative answers.
func (z *zone) soa() dns.RR {
	return &dns.SOA{Hdr: z.hdr(z.origin, dns.TypeSOA), Ns: "ns.dns." + z.origin, Mbox: "hostmaster." + z.origin,
		Serial: 1, Refresh: 7200, Retry: 1800, Expire: 86400, Minttl: z.ttl}
}

// addr is an A or AAAA record of ip at name, nil if qtype asks for the other
// family or neither.
func (z *zone) addr(name string, ip netip.Addr, qtype uint16) dns.RR {
	switch {
	case ip.Is4() && (qtype == dns.TypeA || qtype == dns.TypeANY):
		return &dns.A{Hdr: z.hdr(name, dns.TypeA), A: ip.AsSlice()}
	case ip.Is6() && (qtype == dns.TypeAAAA || qtype == dns.TypeANY):
		return &dns.AAAA{Hdr: z.hdr(name, dns.TypeAAAA), AAAA: ip.AsSlice()}
	}
	return nil
}

// addrs answers qtype at name from ips: NODATA when none is of its family.
func (z *zone) addrs(name string, ips []netip.Addr, qtype uint16) result {
	var r result
	for _, ip := range ips {
		if rr := z.addr(name, ip, qtype); rr != nil {
			r.answer = append(r.answer, rr)
		}
	}
	return r
}

// resolve answers qtype at name, a lower-case fully qualified name in the
// zone.
func (z *zone) resolve(name string, qtype uint16) result {
	rel := strings.TrimSuffix(strings.TrimSuffix(name, z.origin), ".")
	var l []string
	if rel != "" {
		l = strings.Split(rel, ".")
	}
	n := len(l)
	switch {
	case n == 0:
		return z.apex(qtype)
	case n == 1 && l[0] == "dns-version":
		if qtype != dns.TypeTXT {
			return nodata
		}
		return result{answer: []dns.RR{&dns.TXT{Hdr: z.hdr(name, dns.TypeTXT), Txt: []string{dnsSchemaVersion}}}}
	case n == 2 && l[0] == "ns" && l[1] == "dns":
		return z.addrs(name, []netip.Addr{z.self}, qtype)
	case n == 1 && (l[0] == "svc" || l[0] == "pod" || l[0] == "dns"):
		return nodata // empty non-terminals
	case l[n-1] == "svc":
		return z.svcName(name, l[:n-1], qtype)
	case l[n-1] == "pod" && n == 3 && z.st.namespace(l[1]):
		return z.pod(name, l[0], qtype)
	case l[n-1] == "pod" && n == 2 && z.st.namespace(l[0]):
		return nodata
	}
	return nxdomain
}

func (z *zone) apex(qtype uint16) result {
	switch qtype {
	case dns.TypeSOA:
		return result{answer: []dns.RR{z.soa()}}
	case dns.TypeNS:
		ns := "ns.dns." + z.origin
		r := result{answer: []dns.RR{&dns.NS{Hdr: z.hdr(z.origin, dns.TypeNS), Ns: ns}}}
		if rr := z.addr(ns, z.self, dns.TypeANY); rr != nil {
			r.extra = []dns.RR{rr}
		}
		return r
	}
	return nodata
}

// svcName answers the names under svc.<zone>; l are the labels before it.
func (z *zone) svcName(name string, l []string, qtype uint16) result {
	switch len(l) {
	case 1: // <ns>.svc
		if z.st.namespace(l[0]) {
			return nodata
		}
		return nxdomain
	case 2: // <svc>.<ns>.svc
		svc := z.st.service(l[1], l[0])
		if svc == nil {
			return nxdomain
		}
		return z.service(name, svc, qtype)
	case 3: // <endpoint>.<svc>.<ns>.svc
		svc := z.st.service(l[2], l[1])
		if svc == nil || !headless(svc) {
			return nxdomain
		}
		var ips []netip.Addr
		for _, e := range z.endpoints(svc) {
			if e.host == l[0] {
				ips = append(ips, e.ip)
			}
		}
		if len(ips) == 0 {
			return nxdomain
		}
		return z.addrs(name, ips, qtype)
	case 4: // _<port>._<proto>.<svc>.<ns>.svc
		if !strings.HasPrefix(l[0], "_") || !strings.HasPrefix(l[1], "_") {
			return nxdomain
		}
		svc := z.st.service(l[3], l[2])
		if svc == nil || svc.Spec.Type == v1.ServiceTypeExternalName {
			return nxdomain
		}
		r := z.srv(svc, l[0][1:], l[1][1:])
		if len(r.answer) == 0 {
			return nxdomain
		}
		for i := range r.answer {
			r.answer[i].Header().Name = name
		}
		if qtype != dns.TypeSRV && qtype != dns.TypeANY {
			return nodata
		}
		return r
	}
	return nxdomain
}

// service answers at a Service's own name.
func (z *zone) service(name string, svc *v1.Service, qtype uint16) result {
	if svc.Spec.Type == v1.ServiceTypeExternalName {
		target := dns.Fqdn(strings.ToLower(svc.Spec.ExternalName))
		return result{answer: []dns.RR{&dns.CNAME{Hdr: z.hdr(name, dns.TypeCNAME), Target: target}}}
	}
	if qtype == dns.TypeSRV {
		r := z.srv(svc, "", "")
		for i := range r.answer {
			r.answer[i].Header().Name = name
		}
		return r
	}
	if !headless(svc) {
		var ips []netip.Addr
		for _, s := range svc.Spec.ClusterIPs {
			if ip, err := netip.ParseAddr(s); err == nil {
				ips = append(ips, ip)
			}
		}
		return z.addrs(name, ips, qtype)
	}
	eps := z.endpoints(svc)
	if len(eps) == 0 {
		return nxdomain // a headless Service without ready endpoints has no records, as CoreDNS
	}
	ips := make([]netip.Addr, 0, len(eps))
	for _, e := range eps {
		ips = append(ips, e.ip)
	}
	return z.addrs(name, ips, qtype)
}

// srv lists the SRV records of svc's ports named port and of protocol
// proto ("" matches any), with their targets' addresses as extra; the
// records' names are left for the caller to set.
func (z *zone) srv(svc *v1.Service, port, proto string) result {
	match := func(n string, p v1.Protocol) bool {
		return (port == "" || n == port) && (proto == "" || strings.ToLower(string(p)) == proto)
	}
	svcName := svc.Name + "." + svc.Namespace + ".svc." + z.origin
	var r result
	if !headless(svc) {
		for _, p := range svc.Spec.Ports {
			if port != "" && p.Name == "" || !match(p.Name, p.Protocol) {
				continue
			}
			r.answer = append(r.answer, &dns.SRV{Hdr: z.hdr("", dns.TypeSRV), Priority: 0, Weight: 100, Port: uint16(p.Port), Target: svcName})
		}
		if len(r.answer) > 0 {
			for _, s := range svc.Spec.ClusterIPs {
				if ip, err := netip.ParseAddr(s); err == nil {
					r.extra = append(r.extra, z.addr(svcName, ip, dns.TypeANY))
				}
			}
		}
		return r
	}
	seen := map[string]bool{}
	for _, sl := range z.st.slices(svc.Namespace, svc.Name) {
		eps := sliceEndpoints(sl)
		if len(eps) == 0 {
			continue
		}
		w := uint16(max(1, 100/len(eps)))
		for _, p := range sl.Ports {
			n, pr := deref(p.Name), v1.ProtocolTCP
			if p.Protocol != nil {
				pr = *p.Protocol
			}
			if p.Port == nil || port != "" && n == "" || !match(n, pr) {
				continue
			}
			for _, e := range eps {
				target := e.host + "." + svcName
				r.answer = append(r.answer, &dns.SRV{Hdr: z.hdr("", dns.TypeSRV), Priority: 0, Weight: w, Port: uint16(*p.Port), Target: target})
				if !seen[target+e.ip.String()] {
					seen[target+e.ip.String()] = true
					r.extra = append(r.extra, z.addr(target, e.ip, dns.TypeANY))
				}
			}
		}
	}
	return r
}

// pod answers <dashed-ip>.<ns>.pod.<zone> with that address, in any
// namespace that exists (CoreDNS's "pods insecure": no Pod is looked up).
func (z *zone) pod(name, dashed string, qtype uint16) result {
	var s string
	if strings.Count(dashed, "-") == 3 {
		s = strings.ReplaceAll(dashed, "-", ".")
	} else {
		s = strings.ReplaceAll(dashed, "-", ":")
	}
	ip, err := netip.ParseAddr(s)
	if err != nil || ip.Zone() != "" {
		return nxdomain
	}
	return z.addrs(name, []netip.Addr{ip}, qtype)
}

// reverse answers a PTR query for ip: the Services with that cluster IP and
// the headless endpoints at that address; ok is false when ip is none of
// them (the name is not the cluster's).
func (z *zone) reverse(name string, ip netip.Addr) (r result, ok bool) {
	for _, svc := range z.st.servicesByIP(ip) {
		r.answer = append(r.answer, &dns.PTR{Hdr: z.hdr(name, dns.TypePTR), Ptr: svc.Name + "." + svc.Namespace + ".svc." + z.origin})
	}
	for _, sl := range z.st.slicesByAddress(ip) {
		svc := z.st.service(sl.Namespace, sl.Labels[discoveryv1.LabelServiceName])
		if svc == nil || !headless(svc) {
			continue
		}
		for _, e := range sliceEndpoints(sl) {
			if e.ip == ip {
				r.answer = append(r.answer, &dns.PTR{Hdr: z.hdr(name, dns.TypePTR), Ptr: e.host + "." + svc.Name + "." + svc.Namespace + ".svc." + z.origin})
			}
		}
	}
	return r, len(r.answer) > 0
}

// endpoint is a ready endpoint's DNS name label and address.
type endpoint struct {
	host string
	ip   netip.Addr
}

// endpoints are svc's ready endpoints over all its slices, each once.
func (z *zone) endpoints(svc *v1.Service) []endpoint {
	var out []endpoint
	seen := map[endpoint]bool{}
	for _, sl := range z.st.slices(svc.Namespace, svc.Name) {
		for _, e := range sliceEndpoints(sl) {
			if !seen[e] {
				seen[e] = true
				out = append(out, e)
			}
		}
	}
	return out
}

// sliceEndpoints are a slice's ready endpoints (the controller marks every
// endpoint ready under publishNotReadyAddresses), each by its first address:
// an endpoint's addresses are fungible.
func sliceEndpoints(sl *discoveryv1.EndpointSlice) []endpoint {
	if sl.AddressType != discoveryv1.AddressTypeIPv4 && sl.AddressType != discoveryv1.AddressTypeIPv6 {
		return nil
	}
	var out []endpoint
	for _, e := range sl.Endpoints {
		if e.Conditions.Ready != nil && !*e.Conditions.Ready || len(e.Addresses) == 0 {
			continue
		}
		ip, err := netip.ParseAddr(e.Addresses[0])
		if err != nil {
			continue
		}
		host := strings.ToLower(deref(e.Hostname))
		if host == "" {
			host = dashed(ip)
		}
		out = append(out, endpoint{host: host, ip: ip})
	}
	return out
}

// dashed is ip with '-' for its separators (10-42-0-5), a DNS label.
func dashed(ip netip.Addr) string {
	if ip.Is4() {
		return strings.ReplaceAll(ip.String(), ".", "-")
	}
	return strings.ReplaceAll(ip.String(), ":", "-")
}

func headless(svc *v1.Service) bool { return svc.Spec.ClusterIP == v1.ClusterIPNone }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
