package proxy

import (
	"context"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/knftables"
)

func service(name string, mutate func(*v1.Service)) *v1.Service {
	s := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: v1.ServiceSpec{
			Type: v1.ServiceTypeClusterIP, ClusterIP: "10.96.0.10", ClusterIPs: []string{"10.96.0.10"},
			Ports: []v1.ServicePort{{Name: "http", Protocol: v1.ProtocolTCP, Port: 80}},
		},
	}
	if mutate != nil {
		mutate(s)
	}
	return s
}

type ep struct {
	ip    string
	ready *bool
}

func slice(svc, portName string, port int32, eps ...ep) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", Name: svc + "-abc", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(portName), Protocol: ptr.To(v1.ProtocolTCP), Port: ptr.To(port)}},
	}
	for _, e := range eps {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{e.ip}, Conditions: discoveryv1.EndpointConditions{Ready: e.ready}})
	}
	return s
}

var testParams = Params{NodeIPs: []netip.Addr{netip.MustParseAddr("192.168.1.5"), netip.MustParseAddr("127.0.0.1")}, PodCIDR: netip.MustParsePrefix("10.244.0.0/24")}

// apply runs rs's transaction (over the previous chains) on a fake and
// returns its table.
func apply(t *testing.T, fake *knftables.Fake, rs *Ruleset, previous *Ruleset) *knftables.FakeTable {
	t.Helper()
	tx := fake.NewTransaction()
	rs.Transaction(tx, previous, "test")
	if err := fake.Run(context.Background(), tx); err != nil {
		t.Fatalf("transaction rejected: %v\n%s", err, tx)
	}
	return fake.Table
}

func rules(tb *knftables.FakeTable, chain string) []string {
	c := tb.Chains[chain]
	if c == nil {
		return nil
	}
	var out []string
	for _, r := range c.Rules {
		out = append(out, r.Rule)
	}
	return out
}

func value(tb *knftables.FakeTable, m string, key ...string) string {
	if e := tb.Maps[m].FindElement(key...); e != nil {
		return strings.Join(e.Value, " ")
	}
	return ""
}

func sortedLines(s string) string {
	lines := strings.Split(s, "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// targets are the endpoints (ip:port) a chain's dnat rules reach: a plain
// dnat's, or every element of the endpoint map a numgen dnat indexes.
func targets(tb *knftables.FakeTable, chain string) []string {
	var out []string
	for _, r := range rules(tb, chain) {
		if _, m, ok := strings.Cut(r, " map @"); ok {
			for i := 0; ; i++ {
				e := tb.Maps[m].FindElement(strconv.Itoa(i))
				if e == nil {
					break
				}
				out = append(out, strings.Join(e.Value, ":"))
			}
		} else if _, to, ok := strings.Cut(r, " dnat ip to "); ok {
			out = append(out, to)
		}
	}
	return out
}

func chainsWith(tb *knftables.FakeTable, prefix string) []string {
	var out []string
	for name := range tb.Chains {
		if strings.HasPrefix(name, prefix) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func TestBuild(t *testing.T) {
	svcChain := chainName("service", "ns/web/tcp/http")
	extChain := chainName("external", "ns/web/tcp/http")
	epMap := endpointsPrefix + svcChain
	for _, tc := range []struct {
		name     string
		services []*v1.Service
		slices   []*discoveryv1.EndpointSlice
		check    func(t *testing.T, tb *knftables.FakeTable)
	}{{
		name:     "ClusterIP balances over the ready endpoints only",
		services: []*v1.Service{service("web", nil)},
		slices:   []*discoveryv1.EndpointSlice{slice("web", "http", 8080, ep{ip: "10.244.0.6"}, ep{ip: "10.244.0.5", ready: ptr.To(true)}, ep{ip: "10.244.0.7", ready: ptr.To(false)})},
		check: func(t *testing.T, tb *knftables.FakeTable) {
			if got := value(tb, serviceIPsMap, "10.96.0.10", "tcp", "80"); got != "goto "+svcChain {
				t.Errorf("service-ips[10.96.0.10 . tcp . 80] = %q, want goto %s", got, svcChain)
			}
			want := []string{
				"ip daddr 10.96.0.10 tcp dport 80 ip saddr != 10.244.0.0/24 jump mark-for-masquerade",
				"meta l4proto tcp dnat ip to numgen random mod 2 map @" + epMap,
			}
			if got := rules(tb, svcChain); !slices.Equal(got, want) {
				t.Errorf("service chain rules:\n got %q\nwant %q", got, want)
			}
			if got := targets(tb, svcChain); !slices.Equal(got, []string{"10.244.0.5:8080", "10.244.0.6:8080"}) {
				t.Errorf("endpoints %q, want the two ready ones", got)
			}
			// Hairpin: each endpoint reaching itself is masqueraded.
			for _, ip := range []string{"10.244.0.5", "10.244.0.6"} {
				if tb.Sets[hairpinSet].FindElement(ip, ip) == nil {
					t.Errorf("%s . %s not in %s", ip, ip, hairpinSet)
				}
			}
			if got := chainsWith(tb, "endpoint-"); len(got) != 0 {
				t.Errorf("endpoint chains %q without session affinity", got)
			}
			if len(tb.Maps[noEndpointSvcs].Elements) != 0 || len(chainsWith(tb, "external-")) != 0 {
				t.Errorf("a ClusterIP service with endpoints got reject or external rules")
			}
		},
	}, {
		name:     "no ready endpoint rejects",
		services: []*v1.Service{service("web", func(s *v1.Service) { s.Spec.Type = v1.ServiceTypeNodePort; s.Spec.Ports[0].NodePort = 30080 })},
		slices:   []*discoveryv1.EndpointSlice{slice("web", "http", 8080, ep{ip: "10.244.0.7", ready: ptr.To(false)})},
		check: func(t *testing.T, tb *knftables.FakeTable) {
			if got := value(tb, noEndpointSvcs, "10.96.0.10", "tcp", "80"); got != "goto "+rejectChain {
				t.Errorf("no-endpoint-services element = %q", got)
			}
			if got := value(tb, noEndpointNPs, "tcp", "30080"); got != "goto "+rejectChain {
				t.Errorf("no-endpoint-nodeports element = %q", got)
			}
			if len(tb.Maps[serviceIPsMap].Elements) != 0 || len(chainsWith(tb, "service-")) != 0 {
				t.Errorf("a service without endpoints got dispatch rules")
			}
		},
	}, {
		name: "NodePort and ExternalIP go through the masquerading external chain",
		services: []*v1.Service{service("web", func(s *v1.Service) {
			s.Spec.Type = v1.ServiceTypeNodePort
			s.Spec.Ports[0].NodePort = 30080
			s.Spec.ExternalIPs = []string{"203.0.113.9"}
		})},
		slices: []*discoveryv1.EndpointSlice{slice("web", "http", 8080, ep{ip: "10.244.0.5"})},
		check: func(t *testing.T, tb *knftables.FakeTable) {
			if got := value(tb, serviceNodePorts, "tcp", "30080"); got != "goto "+extChain {
				t.Errorf("service-nodeports element = %q", got)
			}
			if got := value(tb, serviceIPsMap, "203.0.113.9", "tcp", "80"); got != "goto "+extChain {
				t.Errorf("external IP element = %q", got)
			}
			if got := rules(tb, extChain); !slices.Equal(got, []string{"jump mark-for-masquerade", "goto " + svcChain}) {
				t.Errorf("external chain rules %q", got)
			}
			if tb.Sets[nodePortIPsSet].FindElement("192.168.1.5") == nil || len(tb.Sets[nodePortIPsSet].Elements) != 1 {
				t.Errorf("%s is not exactly the node's non-loopback IP: %v", nodePortIPsSet, tb.Sets[nodePortIPsSet].Elements)
			}
		},
	}, {
		name: "headless, ExternalName and IPv6 services get no rules",
		services: []*v1.Service{
			service("headless", func(s *v1.Service) {
				s.Spec.ClusterIP, s.Spec.ClusterIPs = v1.ClusterIPNone, []string{v1.ClusterIPNone}
			}),
			service("ext", func(s *v1.Service) {
				s.Spec.Type, s.Spec.ClusterIP, s.Spec.ClusterIPs, s.Spec.ExternalName = v1.ServiceTypeExternalName, "", nil, "example.org"
			}),
			service("v6", func(s *v1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "fd00::10", []string{"fd00::10"} }),
		},
		slices: []*discoveryv1.EndpointSlice{slice("headless", "http", 8080, ep{ip: "10.244.0.5"}), slice("ext", "http", 8080, ep{ip: "10.244.0.5"})},
		check: func(t *testing.T, tb *knftables.FakeTable) {
			for _, m := range []string{serviceIPsMap, noEndpointSvcs, serviceNodePorts, noEndpointNPs} {
				if n := len(tb.Maps[m].Elements); n != 0 {
					t.Errorf("%s has %d elements, want none", m, n)
				}
			}
		},
	}, {
		name:     "endpoints of another port name are not the port's",
		services: []*v1.Service{service("web", nil)},
		slices:   []*discoveryv1.EndpointSlice{slice("web", "metrics", 9090, ep{ip: "10.244.0.5"})},
		check: func(t *testing.T, tb *knftables.FakeTable) {
			if got := value(tb, noEndpointSvcs, "10.96.0.10", "tcp", "80"); got != "goto "+rejectChain {
				t.Errorf("want a reject for the port without endpoints, got %q", got)
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			fake := knftables.NewFake(knftables.IPv4Family, "berth-test")
			tc.check(t, apply(t, fake, Build(tc.services, tc.slices, testParams), nil))
			// The base chains hook into the kernel in every ruleset.
			for _, bc := range baseChains {
				c := fake.Table.Chains[bc.name]
				if c == nil || c.Hook == nil || *c.Hook != bc.hook || !slices.Equal(rules(fake.Table, bc.name), bc.jumps) {
					t.Errorf("base chain %s missing or wrong", bc.name)
				}
			}
		})
	}
}

// A replacement leaves nothing of the previous ruleset: stale chains are
// deleted and map elements do not pile up.
func TestTransactionReplacesPreviousRuleset(t *testing.T) {
	fake := knftables.NewFake(knftables.IPv4Family, "berth-test")
	svc := service("web", nil)
	first := Build([]*v1.Service{svc}, []*discoveryv1.EndpointSlice{slice("web", "http", 8080, ep{ip: "10.244.0.5"}, ep{ip: "10.244.0.6"})}, testParams)
	apply(t, fake, first, nil)
	second := Build([]*v1.Service{svc}, []*discoveryv1.EndpointSlice{slice("web", "http", 8080, ep{ip: "10.244.0.6"})}, testParams)
	tb := apply(t, fake, second, first)
	svcChain := chainName("service", "ns/web/tcp/http")
	if got := targets(tb, svcChain); !slices.Equal(got, []string{"10.244.0.6:8080"}) {
		t.Errorf("endpoints after one left: %q", got)
	}
	if tb.Maps[endpointsPrefix+svcChain] != nil || tb.Sets[hairpinSet].FindElement("10.244.0.5", "10.244.0.5") != nil {
		t.Errorf("the endpoint map or the gone endpoint's hairpin element is left")
	}
	if n := len(tb.Maps[serviceIPsMap].Elements); n != 1 {
		t.Errorf("service-ips has %d elements, want 1", n)
	}
	third := Build(nil, nil, testParams)
	tb = apply(t, fake, third, second)
	if got := chainsWith(tb, "service-"); len(got) != 0 {
		t.Errorf("service chains left after the service was deleted: %q", got)
	}
	if len(tb.Chains) != len(third.Chains) {
		t.Errorf("table has %d chains, ruleset %d", len(tb.Chains), len(third.Chains))
	}
}

// sessionAffinity ClientIP: clients return to the endpoint their address is
// remembered by, syncs keep what the packet path recorded, and the sets go
// with the affinity.
func TestSessionAffinityClientIP(t *testing.T) {
	fake := knftables.NewFake(knftables.IPv4Family, "berth-test")
	sticky := service("web", func(s *v1.Service) {
		s.Spec.SessionAffinity = v1.ServiceAffinityClientIP
		s.Spec.SessionAffinityConfig = &v1.SessionAffinityConfig{ClientIP: &v1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](60)}}
	})
	sl := slice("web", "http", 8080, ep{ip: "10.244.0.5"}, ep{ip: "10.244.0.6"})
	first := Build([]*v1.Service{sticky}, []*discoveryv1.EndpointSlice{sl}, testParams)
	tb := apply(t, fake, first, nil)

	epA := chainName("endpoint", "ns/web/tcp/http__10.244.0.5/8080")
	setA := chainName("affinity", "ns/web/tcp/http__10.244.0.5/8080/60s")
	set := tb.Sets[setA]
	if set == nil || set.Timeout == nil || *set.Timeout != 60*time.Second || len(first.AffinitySets) != 2 {
		t.Fatalf("affinity set %s missing or without the 60 s timeout; sets %v", setA, first.AffinitySets)
	}
	if got := rules(tb, epA); !slices.Contains(got, "update @"+setA+" { ip saddr }") {
		t.Errorf("endpoint chain does not record its clients: %q", got)
	}
	svcRules := rules(tb, chainName("service", "ns/web/tcp/http"))
	i := slices.Index(svcRules, "ip saddr @"+setA+" goto "+epA)
	if i < 0 || !strings.HasPrefix(svcRules[len(svcRules)-2], "numgen") || i > len(svcRules)-3 {
		t.Errorf("service chain does not send known clients back before balancing: %q", svcRules)
	}

	// The packet path recorded a client; a resync keeps it.
	tx := fake.NewTransaction()
	tx.Add(&knftables.Element{Set: setA, Key: []string{"10.244.0.9"}})
	if err := fake.Run(context.Background(), tx); err != nil {
		t.Fatal(err)
	}
	tb = apply(t, fake, Build([]*v1.Service{sticky}, []*discoveryv1.EndpointSlice{sl}, testParams), first)
	if tb.Sets[setA].FindElement("10.244.0.9") == nil {
		t.Errorf("a resync dropped the recorded client")
	}

	// Affinity off: the sets are deleted.
	tb = apply(t, fake, Build([]*v1.Service{service("web", nil)}, []*discoveryv1.EndpointSlice{sl}, testParams), first)
	for name := range tb.Sets {
		if strings.HasPrefix(name, affinityPrefix) {
			t.Errorf("affinity set %s left after the affinity was turned off", name)
		}
	}
}

// After a first full sync, a change rewrites only what it touches.
func TestTransactionIsIncremental(t *testing.T) {
	fake := knftables.NewFake(knftables.IPv4Family, "berth-test")
	other := service("other", func(s *v1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.0.20", []string{"10.96.0.20"} })
	otherSlice := slice("other", "http", 8080, ep{ip: "10.244.0.9"})
	otherSlice.Name = "other-abc"
	svcs := []*v1.Service{service("web", nil), other}
	first := Build(svcs, []*discoveryv1.EndpointSlice{slice("web", "http", 8080, ep{ip: "10.244.0.5"}), otherSlice}, testParams)
	apply(t, fake, first, nil)
	second := Build(svcs, []*discoveryv1.EndpointSlice{slice("web", "http", 8080, ep{ip: "10.244.0.6"}), otherSlice}, testParams)
	tx := fake.NewTransaction()
	second.Transaction(tx, first, "test")
	if err := fake.Run(context.Background(), tx); err != nil {
		t.Fatal(err)
	}
	ops := tx.String()
	for _, untouched := range []string{"ns/other/", "chain ip berth-test " + servicesChain + "\n", "rule ip berth-test " + masqueradingChain + " ", "nat-prerouting", "element ip berth-test " + serviceIPsMap} {
		if strings.Contains(ops, untouched) {
			t.Errorf("the transaction touches %q, which did not change:\n%s", untouched, ops)
		}
	}
	if !strings.Contains(ops, "delete element ip berth-test "+hairpinSet+" { 10.244.0.5 . 10.244.0.5 }") {
		t.Errorf("the gone endpoint's hairpin element is not deleted:\n%s", ops)
	}
	// The result equals a full sync of the same objects.
	full := knftables.NewFake(knftables.IPv4Family, "berth-test")
	apply(t, full, second, nil)
	// (As sets of lines: the fake dumps elements in insertion order.)
	if sortedLines(fake.Dump()) != sortedLines(full.Dump()) {
		t.Errorf("incremental result differs from a full sync:\n%s\nfull:\n%s", fake.Dump(), full.Dump())
	}
}

// The balance cascade picks each of n endpoints with probability 1/n.
func TestBalanceRulesAreUniform(t *testing.T) {
	for n := 1; n <= 12; n++ {
		reach := 1.0 // probability a connection reaches the i-th rule
		for i := range n {
			rule := balanceRule(i, n, "ep")
			p := 1.0
			if i < n-1 {
				var mod int
				if _, err := fmt.Sscanf(rule, "numgen random mod %d == 0 goto ep", &mod); err != nil {
					t.Fatalf("rule %d of %d: %q: %v", i, n, rule, err)
				}
				p = 1 / float64(mod)
			} else if rule != "goto ep" {
				t.Fatalf("last rule of %d: %q, want an unconditional goto", n, rule)
			}
			if got := reach * p; math.Abs(got-1/float64(n)) > 1e-9 {
				t.Errorf("n=%d: endpoint %d chosen with probability %v, want %v", n, i, got, 1/float64(n))
			}
			reach *= 1 - p
		}
	}
}

// epOn is an endpoint on node with the given conditions.
func epOn(ip, node string, ready, serving, terminating bool) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{Addresses: []string{ip}, NodeName: ptr.To(node),
		Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready), Serving: ptr.To(serving), Terminating: ptr.To(terminating)}}
}

func TestTrafficPolicies(t *testing.T) {
	params := testParams
	params.NodeName = "here"
	local := epOn("10.244.0.5", "here", true, true, false)
	remote := epOn("10.244.1.5", "there", true, true, false)
	clusterChain := chainName("service", "ns/web/tcp/http")
	localChain := chainName("local", "ns/web/tcp/http")
	extChain := chainName("external", "ns/web/tcp/http")
	internalLocal := func(s *v1.Service) {
		s.Spec.InternalTrafficPolicy = ptr.To(v1.ServiceInternalTrafficPolicyLocal)
	}
	externalLocal := func(s *v1.Service) {
		s.Spec.Type, s.Spec.Ports[0].NodePort = v1.ServiceTypeNodePort, 30080
		s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
	}
	for _, tc := range []struct {
		name   string
		mutate func(*v1.Service)
		eps    []discoveryv1.Endpoint
		check  func(t *testing.T, tb *knftables.FakeTable)
	}{{
		name:   "internalTrafficPolicy Local: the ClusterIP reaches only this node's endpoints",
		mutate: internalLocal, eps: []discoveryv1.Endpoint{local, remote},
		check: func(t *testing.T, tb *knftables.FakeTable) {
			if got := value(tb, serviceIPsMap, "10.96.0.10", "tcp", "80"); got != "goto "+localChain {
				t.Errorf("service-ips = %q, want goto %s", got, localChain)
			}
			if got := targets(tb, localChain); !slices.Equal(got, []string{"10.244.0.5:8080"}) {
				t.Errorf("local chain reaches %q, want only the local endpoint", got)
			}
			if tb.Chains[clusterChain] != nil {
				t.Errorf("the cluster chain was programmed")
			}
		},
	}, {
		name:   "internalTrafficPolicy Local without a local endpoint drops",
		mutate: internalLocal, eps: []discoveryv1.Endpoint{remote},
		check: func(t *testing.T, tb *knftables.FakeTable) {
			if got := value(tb, noEndpointSvcs, "10.96.0.10", "tcp", "80"); got != "drop" {
				t.Errorf("no-endpoint-services = %q, want drop", got)
			}
			if got := value(tb, serviceIPsMap, "10.96.0.10", "tcp", "80"); got != "" {
				t.Errorf("service-ips = %q, want none", got)
			}
		},
	}, {
		name:   "externalTrafficPolicy Local: NodePort to this node's endpoints unmasqueraded, the ClusterIP to all",
		mutate: externalLocal, eps: []discoveryv1.Endpoint{local, remote},
		check: func(t *testing.T, tb *knftables.FakeTable) {
			if got := value(tb, serviceIPsMap, "10.96.0.10", "tcp", "80"); got != "goto "+clusterChain {
				t.Errorf("service-ips = %q, want goto %s", got, clusterChain)
			}
			if got := value(tb, serviceNodePorts, "tcp", "30080"); got != "goto "+extChain {
				t.Errorf("service-nodeports = %q, want goto %s", got, extChain)
			}
			want := []string{
				"ip saddr 10.244.0.0/24 goto " + clusterChain,
				"fib saddr type local jump " + markMasqChain,
				"fib saddr type local goto " + clusterChain,
				"goto " + localChain,
			}
			if got := rules(tb, extChain); !slices.Equal(got, want) {
				t.Errorf("external chain:\n got %q\nwant %q", got, want)
			}
			if got := targets(tb, localChain); !slices.Equal(got, []string{"10.244.0.5:8080"}) {
				t.Errorf("local chain reaches %q, want the local endpoint only", got)
			}
			if got := targets(tb, clusterChain); !slices.Equal(got, []string{"10.244.0.5:8080", "10.244.1.5:8080"}) {
				t.Errorf("cluster chain reaches %q, want both", got)
			}
			if got := value(tb, noEndpointNPs, "tcp", "30080"); got != "" {
				t.Errorf("no-endpoint-nodeports = %q, want none", got)
			}
		},
	}, {
		name:   "externalTrafficPolicy Local without a local endpoint: the NodePort drops",
		mutate: externalLocal, eps: []discoveryv1.Endpoint{remote},
		check: func(t *testing.T, tb *knftables.FakeTable) {
			if got := value(tb, noEndpointNPs, "tcp", "30080"); got != "drop" {
				t.Errorf("no-endpoint-nodeports = %q, want drop", got)
			}
			if got := rules(tb, extChain); slices.Contains(got, "goto "+localChain) {
				t.Errorf("external chain %q goes to a local chain without endpoints", got)
			}
			if got := value(tb, serviceIPsMap, "10.96.0.10", "tcp", "80"); got != "goto "+clusterChain {
				t.Errorf("the ClusterIP (Cluster policy) = %q, want goto %s", got, clusterChain)
			}
		},
	}, {
		name: "no ready endpoint: the serving terminating ones are used",
		eps:  []discoveryv1.Endpoint{epOn("10.244.0.5", "here", false, true, true), epOn("10.244.1.5", "there", false, false, true)},
		check: func(t *testing.T, tb *knftables.FakeTable) {
			if got := targets(tb, clusterChain); !slices.Equal(got, []string{"10.244.0.5:8080"}) {
				t.Errorf("service chain reaches %q, want the serving terminating endpoint only", got)
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			sl := slice("web", "http", 8080)
			sl.Endpoints = tc.eps
			rs := Build([]*v1.Service{service("web", tc.mutate)}, []*discoveryv1.EndpointSlice{sl}, params)
			tc.check(t, apply(t, knftables.NewFake(knftables.IPv4Family, "berth-test"), rs, nil))
		})
	}
}

// benchObjects are n Services of one port with a slice of 10 endpoints.
func benchObjects(n int) ([]*v1.Service, []*discoveryv1.EndpointSlice) {
	var svcs []*v1.Service
	var sls []*discoveryv1.EndpointSlice
	for i := range n {
		name := fmt.Sprintf("svc-%d", i)
		ip := fmt.Sprintf("10.96.%d.%d", i/250, i%250+1)
		svcs = append(svcs, service(name, func(s *v1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = ip, []string{ip} }))
		var eps []ep
		for j := range 10 {
			k := i*10 + j
			eps = append(eps, ep{ip: fmt.Sprintf("10.%d.%d.%d", 100+k>>16, k>>8&255, k&255)})
		}
		s := slice(name, "http", 8080, eps...)
		s.Name, s.UID, s.ResourceVersion = name+"-1", types.UID(name+"-1"), "1"
		svcs[len(svcs)-1].UID, svcs[len(svcs)-1].ResourceVersion = types.UID(name), "1"
		sls = append(sls, s)
	}
	return svcs, sls
}

// BenchmarkBuildAndDiff: the Go side of a sync of 5000 Services × 10
// endpoints after one endpoint changed (Build, then the transaction of the
// difference), from scratch and with the Builder's memory of the services
// that did not change.
func BenchmarkBuildAndDiff(b *testing.B) {
	for _, cached := range []bool{false, true} {
		b.Run(map[bool]string{false: "uncached", true: "cached"}[cached], func(b *testing.B) {
			svcs, sls := benchObjects(5000)
			var builder Builder
			prev := builder.Build(svcs, sls, testParams)
			fake := knftables.NewFake(knftables.IPv4Family, "bench")
			changed := sls[2500].DeepCopy()
			changed.Endpoints[0].Addresses = []string{"10.200.0.1"}
			changed.ResourceVersion = "2"
			sls[2500] = changed
			for b.Loop() {
				if !cached {
					builder = Builder{}
				}
				b.StopTimer()
				if cached {
					builder.Build(svcs, append(append([]*discoveryv1.EndpointSlice(nil), sls[:2500]...), slice("svc-2500", "http", 8080)), testParams)
				}
				b.StartTimer()
				rs := builder.Build(svcs, sls, testParams)
				tx := fake.NewTransaction()
				rs.Transaction(tx, prev, "bench")
				if tx.NumOperations() > 40 { // the two endpoint chains and the service chain
					b.Fatalf("%d operations for one endpoint change", tx.NumOperations())
				}
			}
		})
	}
}

// A Builder reuses the rules of unchanged services only: after changes its
// result equals a fresh Build's.
func TestBuilderReusesOnlyUnchangedServices(t *testing.T) {
	svcs, sls := benchObjects(3)
	var b Builder
	b.Build(svcs, sls, testParams)
	// A new endpoint (new resourceVersion), a service changed, one gone.
	sls[0] = sls[0].DeepCopy()
	sls[0].Endpoints = sls[0].Endpoints[:1]
	sls[0].ResourceVersion = "2"
	svcs[1] = svcs[1].DeepCopy()
	svcs[1].Spec.SessionAffinity, svcs[1].ResourceVersion = v1.ServiceAffinityClientIP, "2"
	svcs = svcs[:2]
	got, want := knftables.NewFake(knftables.IPv4Family, "t"), knftables.NewFake(knftables.IPv4Family, "t")
	apply(t, got, b.Build(svcs, sls, testParams), nil)
	apply(t, want, Build(svcs, sls, testParams), nil)
	if got.Dump() != want.Dump() {
		t.Errorf("cached build differs from a fresh one:\n%s\nfresh:\n%s", got.Dump(), want.Dump())
	}
	if len(b.cache) != 2 {
		t.Errorf("the builder remembers %d services, want the 2 left", len(b.cache))
	}
}

// A first sync into a table known to be empty flushes no chain; one over a
// table of unknown content flushes every chain it writes.
func TestFirstSyncFlushesOnlyExistingChains(t *testing.T) {
	rs := Build([]*v1.Service{service("web", nil)}, []*discoveryv1.EndpointSlice{slice("web", "http", 8080, ep{ip: "10.244.0.5"})}, testParams)
	fake := knftables.NewFake(knftables.IPv4Family, "berth-test")
	tx := fake.NewTransaction()
	rs.Transaction(tx, &Ruleset{Chains: map[string]bool{servicesChain: true}}, "test")
	if err := fake.Run(context.Background(), tx); err != nil {
		t.Fatal(err)
	}
	if flushes := strings.Count(tx.String(), "flush chain"); flushes != 1 {
		t.Errorf("%d chains flushed over a table holding only %s, want 1:\n%s", flushes, servicesChain, tx)
	}
	tx = fake.NewTransaction()
	rs.Transaction(tx, nil, "test")
	if flushes := strings.Count(tx.String(), "flush chain"); flushes != len(rs.Chains) {
		t.Errorf("%d chains flushed over an unknown table, want all %d", flushes, len(rs.Chains))
	}
}

// A big ruleset applied in chunks ends as the single transaction does,
// from nothing and incrementally, and each chunk holds whole chains.
func TestTransactionsInChunks(t *testing.T) {
	svcs, sls := benchObjects(30)
	// Some with one endpoint, one with session affinity, one NodePort.
	sls[3].Endpoints = sls[3].Endpoints[:1]
	svcs[4].Spec.SessionAffinity = v1.ServiceAffinityClientIP
	svcs[5].Spec.Type, svcs[5].Spec.Ports[0].NodePort = v1.ServiceTypeNodePort, 30080
	first := Build(svcs, sls, testParams)
	apply2 := func(fake *knftables.Fake, rs, previous *Ruleset, chunk int) int {
		t.Helper()
		txs := rs.Transactions(fake.NewTransaction, previous, "test", chunk)
		for i, tx := range txs {
			if err := fake.Run(context.Background(), tx); err != nil {
				t.Fatalf("transaction %d of %d rejected: %v\n%s", i+1, len(txs), err, tx)
			}
		}
		return len(txs)
	}
	chunked := knftables.NewFake(knftables.IPv4Family, "berth-test")
	if n := apply2(chunked, first, nil, 10); n < 4 {
		t.Fatalf("%d transactions for %d service chains in chunks of 10", n, len(first.Chains)-len(fixedChains))
	}
	whole := knftables.NewFake(knftables.IPv4Family, "berth-test")
	if n := apply2(whole, first, nil, 0); n != 1 {
		t.Fatalf("%d transactions without chunks", n)
	}
	if sortedLines(chunked.Dump()) != sortedLines(whole.Dump()) {
		t.Fatalf("chunked differs from whole:\n%s\nwhole:\n%s", chunked.Dump(), whole.Dump())
	}
	// Incrementally: endpoints change, services go, one comes.
	sls2 := slices.Clone(sls)
	sls2[7] = sls2[7].DeepCopy()
	sls2[7].Endpoints = sls2[7].Endpoints[2:]
	sls2[7].ResourceVersion = "2"
	svcs2 := append(slices.Clone(svcs[2:]), service("late", func(s *v1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.9.9", []string{"10.96.9.9"} }))
	second := Build(svcs2, append(sls2, slice("late", "http", 8080, ep{ip: "10.244.9.9"})), testParams)
	apply2(chunked, second, first, 10)
	fresh := knftables.NewFake(knftables.IPv4Family, "berth-test")
	apply2(fresh, second, nil, 0)
	if sortedLines(chunked.Dump()) != sortedLines(fresh.Dump()) {
		t.Fatalf("chunked incremental differs from a full sync:\n%s\nfull:\n%s", chunked.Dump(), fresh.Dump())
	}
	// A full resync of a table that has it all, in chunks.
	apply2(chunked, second, &Ruleset{Chains: second.Chains, AffinitySets: second.AffinitySets, EndpointMaps: second.EndpointMaps}, 10)
	if sortedLines(chunked.Dump()) != sortedLines(fresh.Dump()) {
		t.Fatalf("chunked resync differs from a full sync")
	}
}
