package clusterdns

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"berth/internal/errdefs"
)

func ptr[T any](v T) *T { return &v }

func service(ns, name string, mut func(*v1.Service)) *v1.Service {
	s := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.ServiceSpec{Type: v1.ServiceTypeClusterIP}}
	mut(s)
	return s
}

func namespace(name string) *v1.Namespace {
	return &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func slice(ns, svc, name string, ports []discoveryv1.EndpointPort, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4, Ports: ports, Endpoints: eps,
	}
}

func ep(ip string, ready bool, host string) discoveryv1.Endpoint {
	e := discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}
	if host != "" {
		e.Hostname = &host
	}
	return e
}

// objects is the cluster every test's server answers from.
func objects() []runtime.Object {
	tcp, udp := v1.ProtocolTCP, v1.ProtocolUDP
	return []runtime.Object{
		namespace("default"), namespace("other"), namespace("quiet"),
		service("default", "web", func(s *v1.Service) {
			s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.43.0.10", []string{"10.43.0.10"}
			s.Spec.Ports = []v1.ServicePort{{Name: "http", Port: 80, Protocol: tcp}, {Name: "dns", Port: 53, Protocol: udp}}
		}),
		service("default", "db", func(s *v1.Service) {
			s.Spec.ClusterIP, s.Spec.ClusterIPs = v1.ClusterIPNone, []string{v1.ClusterIPNone}
			s.Spec.Ports = []v1.ServicePort{{Name: "sql", Port: 5432, Protocol: tcp}}
		}),
		slice("default", "db", "db-1", []discoveryv1.EndpointPort{{Name: ptr("sql"), Port: ptr[int32](5432), Protocol: &tcp}},
			ep("10.42.0.5", true, "db-0"), ep("10.42.0.6", true, ""), ep("10.42.0.7", false, "db-2")),
		service("default", "empty", func(s *v1.Service) {
			s.Spec.ClusterIP, s.Spec.ClusterIPs = v1.ClusterIPNone, []string{v1.ClusterIPNone}
		}),
		service("default", "ext", func(s *v1.Service) {
			s.Spec.Type, s.Spec.ExternalName = v1.ServiceTypeExternalName, "web.default.svc.cluster.local"
		}),
		service("other", "out", func(s *v1.Service) {
			s.Spec.Type, s.Spec.ExternalName = v1.ServiceTypeExternalName, "example.org"
		}),
	}
}

// start runs a server on 127.0.0.1 over objects, returning its address.
func start(t testing.TB, cfg Config, objs ...runtime.Object) netip.AddrPort {
	t.Helper()
	cfg.Client = fake.NewClientset(objs...)
	cfg.Listen = netip.MustParseAddrPort("127.0.0.1:0")
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	// Serving begins once the caches synced: the first answer tells.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := query(s.Addr(), "udp", "dns-version.cluster.local.", dns.TypeTXT); err == nil {
			return s.Addr()
		}
		if time.Now().After(deadline) {
			t.Fatal("the server never answered")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func query(addr netip.AddrPort, network, name string, qtype uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	c := &dns.Client{Net: network, Timeout: 5 * time.Second}
	r, _, err := c.Exchange(m, addr.String())
	return r, err
}

// rrs renders a section as sorted "name type data" lines, no TTL.
func rrs(section []dns.RR) []string {
	var out []string
	for _, rr := range section {
		h := rr.Header()
		f := strings.Fields(rr.String())
		out = append(out, h.Name+" "+dns.TypeToString[h.Rrtype]+" "+strings.Join(f[4:], " "))
	}
	sort.Strings(out)
	return out
}

func TestRecords(t *testing.T) {
	addr := start(t, Config{}, objects()...)
	const z = ".cluster.local."
	for _, tc := range []struct {
		name   string
		qtype  uint16
		rcode  int
		answer []string
		extra  []string
	}{
		{"web.default.svc" + z, dns.TypeA, dns.RcodeSuccess, []string{"web.default.svc" + z + " A 10.43.0.10"}, nil},
		{"WEB.Default.svc" + z, dns.TypeA, dns.RcodeSuccess, []string{"web.default.svc" + z + " A 10.43.0.10"}, nil},
		// The name exists without that type: NODATA.
		{"web.default.svc" + z, dns.TypeAAAA, dns.RcodeSuccess, nil, nil},
		{"web.default.svc" + z, dns.TypeSRV, dns.RcodeSuccess,
			[]string{"web.default.svc" + z + " SRV 0 100 53 web.default.svc" + z, "web.default.svc" + z + " SRV 0 100 80 web.default.svc" + z},
			[]string{"web.default.svc" + z + " A 10.43.0.10"}},
		{"_http._tcp.web.default.svc" + z, dns.TypeSRV, dns.RcodeSuccess,
			[]string{"_http._tcp.web.default.svc" + z + " SRV 0 100 80 web.default.svc" + z}, []string{"web.default.svc" + z + " A 10.43.0.10"}},
		{"_dns._udp.web.default.svc" + z, dns.TypeSRV, dns.RcodeSuccess,
			[]string{"_dns._udp.web.default.svc" + z + " SRV 0 100 53 web.default.svc" + z}, []string{"web.default.svc" + z + " A 10.43.0.10"}},
		{"_http._udp.web.default.svc" + z, dns.TypeSRV, dns.RcodeNameError, nil, nil},
		{"_http._tcp.web.default.svc" + z, dns.TypeA, dns.RcodeSuccess, nil, nil},
		{"nope.default.svc" + z, dns.TypeA, dns.RcodeNameError, nil, nil},
		{"web.nope.svc" + z, dns.TypeA, dns.RcodeNameError, nil, nil},
		// Headless: the ready endpoints, by hostname or dashed address.
		{"db.default.svc" + z, dns.TypeA, dns.RcodeSuccess, []string{"db.default.svc" + z + " A 10.42.0.5", "db.default.svc" + z + " A 10.42.0.6"}, nil},
		{"db-0.db.default.svc" + z, dns.TypeA, dns.RcodeSuccess, []string{"db-0.db.default.svc" + z + " A 10.42.0.5"}, nil},
		{"10-42-0-6.db.default.svc" + z, dns.TypeA, dns.RcodeSuccess, []string{"10-42-0-6.db.default.svc" + z + " A 10.42.0.6"}, nil},
		{"db-2.db.default.svc" + z, dns.TypeA, dns.RcodeNameError, nil, nil},  // not ready
		{"db-0.web.default.svc" + z, dns.TypeA, dns.RcodeNameError, nil, nil}, // not headless
		{"_sql._tcp.db.default.svc" + z, dns.TypeSRV, dns.RcodeSuccess,
			[]string{"_sql._tcp.db.default.svc" + z + " SRV 0 50 5432 10-42-0-6.db.default.svc" + z, "_sql._tcp.db.default.svc" + z + " SRV 0 50 5432 db-0.db.default.svc" + z},
			[]string{"10-42-0-6.db.default.svc" + z + " A 10.42.0.6", "db-0.db.default.svc" + z + " A 10.42.0.5"}},
		{"empty.default.svc" + z, dns.TypeA, dns.RcodeNameError, nil, nil},
		// ExternalName: a CNAME, followed inside the zone.
		{"ext.default.svc" + z, dns.TypeA, dns.RcodeSuccess,
			[]string{"ext.default.svc" + z + " CNAME web.default.svc" + z, "web.default.svc" + z + " A 10.43.0.10"}, nil},
		{"ext.default.svc" + z, dns.TypeCNAME, dns.RcodeSuccess, []string{"ext.default.svc" + z + " CNAME web.default.svc" + z}, nil},
		{"_http._tcp.ext.default.svc" + z, dns.TypeSRV, dns.RcodeNameError, nil, nil},
		// Pods.
		{"10-42-0-9.default.pod" + z, dns.TypeA, dns.RcodeSuccess, []string{"10-42-0-9.default.pod" + z + " A 10.42.0.9"}, nil},
		{"10-42-0-9.default.pod" + z, dns.TypeAAAA, dns.RcodeSuccess, nil, nil},
		{"fd00--1.default.pod" + z, dns.TypeAAAA, dns.RcodeSuccess, []string{"fd00--1.default.pod" + z + " AAAA fd00::1"}, nil},
		{"not-an-ip.default.pod" + z, dns.TypeA, dns.RcodeNameError, nil, nil},
		// The zone's own names and empty non-terminals.
		{"cluster.local.", dns.TypeSOA, dns.RcodeSuccess, []string{"cluster.local. SOA ns.dns.cluster.local. hostmaster.cluster.local. 1 7200 1800 86400 5"}, nil},
		{"cluster.local.", dns.TypeNS, dns.RcodeSuccess, []string{"cluster.local. NS ns.dns.cluster.local."}, []string{"ns.dns.cluster.local. A 127.0.0.1"}},
		{"dns-version" + z, dns.TypeTXT, dns.RcodeSuccess, []string{"dns-version" + z + ` TXT "1.1.0"`}, nil},
		{"svc" + z, dns.TypeA, dns.RcodeSuccess, nil, nil},
		{"default.svc" + z, dns.TypeA, dns.RcodeSuccess, nil, nil},
		{"quiet.svc" + z, dns.TypeA, dns.RcodeSuccess, nil, nil}, // a namespace without Services
		{"nope.svc" + z, dns.TypeA, dns.RcodeNameError, nil, nil},
		{"default.pod" + z, dns.TypeA, dns.RcodeSuccess, nil, nil},
		{"10-42-0-9.nope.pod" + z, dns.TypeA, dns.RcodeNameError, nil, nil},
		{"nothing" + z, dns.TypeA, dns.RcodeNameError, nil, nil},
		// Reverse lookups of the cluster's addresses.
		{"10.0.43.10.in-addr.arpa.", dns.TypePTR, dns.RcodeSuccess, []string{"10.0.43.10.in-addr.arpa. PTR web.default.svc" + z}, nil},
		{"5.0.42.10.in-addr.arpa.", dns.TypePTR, dns.RcodeSuccess, []string{"5.0.42.10.in-addr.arpa. PTR db-0.db.default.svc" + z}, nil},
	} {
		for _, network := range []string{"udp", "tcp"} {
			r, err := query(addr, network, tc.name, tc.qtype)
			if err != nil {
				t.Errorf("%s %s over %s: %v", tc.name, dns.TypeToString[tc.qtype], network, err)
				continue
			}
			what := tc.name + " " + dns.TypeToString[tc.qtype] + " over " + network
			if r.Rcode != tc.rcode {
				t.Errorf("%s: rcode %s, want %s", what, dns.RcodeToString[r.Rcode], dns.RcodeToString[tc.rcode])
			}
			if !r.Authoritative {
				t.Errorf("%s: not authoritative", what)
			}
			if got := rrs(r.Answer); !slices.Equal(got, tc.answer) {
				t.Errorf("%s: answer\n%q\nwant\n%q", what, got, tc.answer)
			}
			if tc.extra != nil {
				if got := rrs(r.Extra); !slices.Equal(got, tc.extra) {
					t.Errorf("%s: extra\n%q\nwant\n%q", what, got, tc.extra)
				}
			}
			// Negative answers carry the zone's SOA as authority.
			wantNs := 0
			if len(tc.answer) == 0 {
				wantNs = 1
			}
			if len(r.Ns) != wantNs || wantNs == 1 && r.Ns[0].Header().Rrtype != dns.TypeSOA {
				t.Errorf("%s: authority %v, want %d SOA", what, r.Ns, wantNs)
			}
			for _, rr := range append(r.Answer, r.Ns...) {
				if rr.Header().Ttl != 5 {
					t.Errorf("%s: TTL %d, want 5", what, rr.Header().Ttl)
				}
			}
		}
	}
}

// TestEDNSQueryGetsEDNSAnswer: a query with an OPT record gets one back.
func TestEDNSQueryGetsEDNSAnswer(t *testing.T) {
	addr := start(t, Config{}, objects()...)
	m := new(dns.Msg)
	m.SetQuestion("web.default.svc.cluster.local.", dns.TypeA)
	m.SetEdns0(4096, false)
	r, err := dns.Exchange(m, addr.String())
	if err != nil {
		t.Fatal(err)
	}
	if o := r.IsEdns0(); o == nil || o.UDPSize() != ednsSize {
		t.Errorf("EDNS answer's OPT = %v, want UDP size %d", o, ednsSize)
	}
	if len(r.Answer) != 1 {
		t.Errorf("answer %v", r.Answer)
	}
}

// TestRecordsFollowChanges: a Service created, changed and deleted after
// the start is answered, answered anew and gone.
func TestRecordsFollowChanges(t *testing.T) {
	client := fake.NewClientset(namespace("default"))
	s, err := New(Config{Client: client, Listen: netip.MustParseAddrPort("127.0.0.1:0")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)
	const name = "late.default.svc.cluster.local."
	waitFor := func(what string, ok func(*dns.Msg) bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			r, err := query(s.Addr(), "udp", name, dns.TypeA)
			if err == nil && ok(r) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: last answer %v (%v)", what, r, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	hasIP := func(ip string) func(*dns.Msg) bool {
		return func(r *dns.Msg) bool {
			return len(r.Answer) == 1 && r.Answer[0].(*dns.A).A.String() == ip
		}
	}
	waitFor("NXDOMAIN before the Service", func(r *dns.Msg) bool { return r.Rcode == dns.RcodeNameError })
	svc := service("default", "late", func(s *v1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.43.1.1", []string{"10.43.1.1"} })
	if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("the created Service", hasIP("10.43.1.1"))
	svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "10.43.1.2", []string{"10.43.1.2"}
	if _, err := client.CoreV1().Services("default").Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("the changed Service", hasIP("10.43.1.2"))
	if err := client.CoreV1().Services("default").Delete(ctx, "late", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("NXDOMAIN after the delete", func(r *dns.Msg) bool { return r.Rcode == dns.RcodeNameError })
}

// upstream serves one A record for every name on 127.0.0.1.
func upstream(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		m.RecursionAvailable = true
		m.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: r.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 30}, A: net.IPv4(192, 0, 2, 1)}}
		_ = w.WriteMsg(m)
	})}
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	go srv.ActivateAndServe()
	<-started
	t.Cleanup(func() { _ = srv.Shutdown() })
	return pc.LocalAddr().String()
}

func TestForwardsOtherNames(t *testing.T) {
	addr := start(t, Config{Upstreams: []string{upstream(t)}}, objects()...)
	r, err := query(addr, "udp", "example.com.", dns.TypeA)
	if err != nil {
		t.Fatal(err)
	}
	if got := rrs(r.Answer); r.Rcode != dns.RcodeSuccess || !slices.Equal(got, []string{"example.com. A 192.0.2.1"}) {
		t.Errorf("forwarded: rcode %s answer %q", dns.RcodeToString[r.Rcode], got)
	}
	// An ExternalName outside the zone: the CNAME and its target's address.
	r, err = query(addr, "udp", "out.other.svc.cluster.local.", dns.TypeA)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"example.org. A 192.0.2.1", "out.other.svc.cluster.local. CNAME example.org."}
	if got := rrs(r.Answer); !slices.Equal(got, want) {
		t.Errorf("ExternalName out of the zone: %q, want %q", got, want)
	}
}

// TestUnreachableUpstreamIsPromptServfail: an upstream that never answers
// gives SERVFAIL within the forward timeout, not a hang.
func TestUnreachableUpstreamIsPromptServfail(t *testing.T) {
	silent, err := net.ListenPacket("udp", "127.0.0.1:0") // reads nothing, answers nothing
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	addr := start(t, Config{Upstreams: []string{silent.LocalAddr().String()}, ForwardTimeout: 300 * time.Millisecond}, objects()...)
	began := time.Now()
	r, err := query(addr, "udp", "example.com.", dns.TypeA)
	if err != nil {
		t.Fatal(err)
	}
	if r.Rcode != dns.RcodeServerFailure {
		t.Errorf("rcode %s, want SERVFAIL", dns.RcodeToString[r.Rcode])
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("SERVFAIL took %s with a 300ms forward timeout", took)
	}
	// No upstream at all: SERVFAIL at once.
	addr = start(t, Config{}, objects()...)
	if r, err := query(addr, "udp", "example.com.", dns.TypeA); err != nil || r.Rcode != dns.RcodeServerFailure {
		t.Errorf("no upstreams: %v (%v), want SERVFAIL", r, err)
	}
}

func TestUpstreamsFromResolvConf(t *testing.T) {
	path := t.TempDir() + "/resolv.conf"
	if err := writeFile(path, "search example.com\nnameserver 10.42.0.1\nnameserver 192.0.2.53\nnameserver fd00::53\noptions ndots:1\n"); err != nil {
		t.Fatal(err)
	}
	got, err := Upstreams(path, netip.MustParseAddr("10.42.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"192.0.2.53:53", "[fd00::53]:53"}; !slices.Equal(got, want) {
		t.Errorf("Upstreams = %q, want %q (itself left out)", got, want)
	}
	if err := writeFile(path, "nameserver 10.42.0.1\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := Upstreams(path, netip.MustParseAddr("10.42.0.1")); err == nil {
		t.Error("a resolv.conf naming only the cluster DNS: no error")
	}
}

func TestConfigValidateNamesTheField(t *testing.T) {
	client := fake.NewClientset()
	listen := netip.MustParseAddrPort("127.0.0.1:0")
	for _, tc := range []struct {
		cfg   Config
		field string
	}{
		{Config{Listen: listen}, "Client"},
		{Config{Client: client}, "Listen"},
		{Config{Client: client, Listen: listen, Domain: "bad..domain"}, "Domain"},
		{Config{Client: client, Listen: listen, Upstreams: []string{"8.8.8.8"}}, "Upstreams"},
		{Config{Client: client, Listen: listen, TTL: 1500 * time.Millisecond}, "TTL"},
	} {
		err := tc.cfg.Validate()
		if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("Validate(%+v) = %v, want an invalid-argument error naming %s", tc.cfg, err, tc.field)
		}
	}
}

// TestListenBeforeTheAddressExists: the bridge's gateway address appears
// with the first pod; binding it before must work (IP_FREEBIND).
func TestListenBeforeTheAddressExists(t *testing.T) {
	udp, tcp, err := listen(netip.MustParseAddrPort("192.0.2.77:0"))
	if err != nil {
		t.Fatalf("binding an address not on any interface: %v", err)
	}
	udp.Close()
	tcp.Close()
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o644) }
