package dns

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/internal/errdefs"
)

const hostResolv = `# written by the host
nameserver 192.0.2.1
nameserver 192.0.2.2
search example.com. corp.example.com
options timeout:2 attempts:3
`

func writeResolv(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func pod(policy v1.DNSPolicy, hostNet bool, dc *v1.PodDNSConfig) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
		Spec:       v1.PodSpec{DNSPolicy: policy, HostNetwork: hostNet, DNSConfig: dc},
	}
}

func strp(s string) *string { return &s }

func TestPodDNS(t *testing.T) {
	resolv := writeResolv(t, hostResolv)
	cluster := Options{ClusterDNS: []net.IP{net.ParseIP("10.96.0.10")}, ClusterDomain: "cluster.local", ResolvConf: resolv}
	clusterSearch := []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local", "example.com", "corp.example.com"}
	hostServers := []string{"192.0.2.1", "192.0.2.2"}
	hostSearch := []string{"example.com", "corp.example.com"}
	hostOpts := []string{"timeout:2", "attempts:3"}

	tests := []struct {
		name        string
		pod         *v1.Pod
		opts        Options
		servers     []string
		searches    []string
		options     []string
		warnReasons []string
	}{
		{"ClusterFirst", pod(v1.DNSClusterFirst, false, nil), cluster,
			[]string{"10.96.0.10"}, clusterSearch, []string{"ndots:5"}, nil},
		{"empty policy defaults to ClusterFirst", pod("", false, nil), cluster,
			[]string{"10.96.0.10"}, clusterSearch, []string{"ndots:5"}, nil},
		{"ClusterFirst on hostNetwork uses the host", pod(v1.DNSClusterFirst, true, nil), cluster,
			hostServers, hostSearch, hostOpts, nil},
		{"ClusterFirstWithHostNet on hostNetwork", pod(v1.DNSClusterFirstWithHostNet, true, nil), cluster,
			[]string{"10.96.0.10"}, clusterSearch, []string{"ndots:5"}, nil},
		{"Default", pod(v1.DNSDefault, false, nil), cluster, hostServers, hostSearch, hostOpts, nil},
		{"ClusterFirst without cluster domain keeps host searches", pod(v1.DNSClusterFirst, false, nil),
			Options{ClusterDNS: cluster.ClusterDNS, ResolvConf: resolv},
			[]string{"10.96.0.10"}, hostSearch, []string{"ndots:5"}, nil},
		{"ClusterFirst without cluster DNS falls back to Default", pod(v1.DNSClusterFirst, false, nil),
			Options{ClusterDomain: "cluster.local", ResolvConf: resolv},
			hostServers, hostSearch, hostOpts, []string{ReasonMissingClusterDNS}},
		{"Default without resolv.conf uses loopback", pod(v1.DNSDefault, false, nil), Options{},
			[]string{"127.0.0.1"}, []string{"."}, nil, nil},
		{"Default without resolv.conf on dual-stack node", pod(v1.DNSDefault, false, nil),
			Options{NodeIPs: []net.IP{net.ParseIP("fd00::1"), net.ParseIP("192.0.2.9")}},
			[]string{"::1", "127.0.0.1"}, []string{"."}, nil, nil},
		{"None uses only dnsConfig", pod(v1.DNSNone, false, &v1.PodDNSConfig{
			Nameservers: []string{"1.1.1.1"}, Searches: []string{"a.example"},
			Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: strp("2")}, {Name: "edns0"}}}), cluster,
			[]string{"1.1.1.1"}, []string{"a.example"}, []string{"ndots:2", "edns0"}, nil},
		{"dnsConfig merges into ClusterFirst", pod(v1.DNSClusterFirst, false, &v1.PodDNSConfig{
			Nameservers: []string{"10.96.0.10", "1.1.1.1"}, Searches: []string{"cluster.local", "extra.example"},
			Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: strp("1")}, {Name: "single-request"}}}), cluster,
			[]string{"10.96.0.10", "1.1.1.1"}, append(append([]string{}, clusterSearch...), "extra.example"),
			[]string{"ndots:1", "single-request"}, nil},
		{"dnsConfig merges into Default", pod(v1.DNSDefault, false, &v1.PodDNSConfig{
			Options: []v1.PodDNSConfigOption{{Name: "attempts", Value: strp("5")}, {Name: "rotate"}}}), cluster,
			hostServers, hostSearch, []string{"timeout:2", "attempts:5", "rotate"}, nil},
		{"more than 3 nameservers are cut", pod(v1.DNSDefault, false, &v1.PodDNSConfig{
			Nameservers: []string{"1.1.1.1", "8.8.8.8"}}), cluster,
			[]string{"192.0.2.1", "192.0.2.2", "1.1.1.1"}, hostSearch, hostOpts, []string{ReasonDNSConfigForming}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, warnings, err := PodDNS(tt.pod, tt.opts)
			if err != nil {
				t.Fatalf("PodDNS: %v", err)
			}
			if !reflect.DeepEqual(cfg.Servers, tt.servers) && !(len(cfg.Servers) == 0 && len(tt.servers) == 0) {
				t.Errorf("servers = %q, want %q", cfg.Servers, tt.servers)
			}
			if !reflect.DeepEqual(cfg.Searches, tt.searches) && !(len(cfg.Searches) == 0 && len(tt.searches) == 0) {
				t.Errorf("searches = %q, want %q", cfg.Searches, tt.searches)
			}
			if !reflect.DeepEqual(cfg.Options, tt.options) && !(len(cfg.Options) == 0 && len(tt.options) == 0) {
				t.Errorf("options = %q, want %q", cfg.Options, tt.options)
			}
			var reasons []string
			for _, w := range warnings {
				reasons = append(reasons, w.Reason)
				if w.Message == "" {
					t.Errorf("warning %s without a message", w.Reason)
				}
			}
			if !reflect.DeepEqual(reasons, tt.warnReasons) {
				t.Errorf("warnings = %v, want reasons %v", warnings, tt.warnReasons)
			}
		})
	}
}

func TestPodDNSSearchLimits(t *testing.T) {
	var searches []string
	for i := 0; i < 40; i++ {
		searches = append(searches, fmt.Sprintf("d%02d.example", i))
	}
	long := strings.Repeat("a", 254)
	p := pod(v1.DNSNone, false, &v1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}, Searches: append([]string{long}, searches...)})
	cfg, warnings, err := PodDNS(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The first 32 are kept, then the 254-character one is dropped: 31 left.
	if want := searches[:31]; !reflect.DeepEqual(cfg.Searches, want) {
		t.Fatalf("searches = %q, want %q", cfg.Searches, want)
	}
	if len(warnings) != 1 || warnings[0].Reason != ReasonDNSConfigForming ||
		!strings.Contains(warnings[0].Message, "the applied search line is: d00.example d01.example") {
		t.Fatalf("warnings = %v", warnings)
	}

	// Ten 250-character domains: 10*251-1 = 2509 characters; dropping from the
	// end until ≤ 2048 keeps 8 (2007 characters).
	var big []string
	for i := 0; i < 10; i++ {
		big = append(big, fmt.Sprintf("%d%s", i, strings.Repeat("b", 249)))
	}
	p = pod(v1.DNSNone, false, &v1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}, Searches: big})
	cfg, warnings, err = PodDNS(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg.Searches, big[:8]) || len(warnings) != 1 {
		t.Fatalf("got %d searches (%d warnings), want the first 8 and one warning", len(cfg.Searches), len(warnings))
	}
}

func TestPodDNSErrors(t *testing.T) {
	tests := []struct {
		name    string
		pod     *v1.Pod
		opts    Options
		wantIs  error
		wantSub string
	}{
		{"unknown policy", pod("Sometimes", false, nil), Options{}, errdefs.ErrInvalidArgument, "spec.dnsPolicy"},
		{"None without dnsConfig", pod(v1.DNSNone, false, nil), Options{}, errdefs.ErrInvalidArgument, "spec.dnsConfig"},
		{"missing resolv.conf", pod(v1.DNSDefault, false, nil), Options{ResolvConf: "/nonexistent/resolv.conf"}, errdefs.ErrNotFound, "/nonexistent/resolv.conf"},
		{"bad resolv.conf", pod(v1.DNSDefault, false, nil), Options{ResolvConf: writeResolv(t, "nameserver\n")}, errdefs.ErrInvalidArgument, "nameserver without an address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := PodDNS(tt.pod, tt.opts)
			if !errors.Is(err, tt.wantIs) || !strings.Contains(err.Error(), tt.wantSub) {
				t.Fatalf("err = %v, want %v mentioning %q", err, tt.wantIs, tt.wantSub)
			}
		})
	}
}

func TestParseResolvConf(t *testing.T) {
	in := `
# comment
nameserver 10.0.0.1
search first.example
  nameserver   10.0.0.2  # trailing words ignored
search second.example. third.example
options ndots:1
options rotate
domain ignored.example
`
	servers, searches, options, err := ParseResolvConf(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(servers, []string{"10.0.0.1", "10.0.0.2"}) {
		t.Errorf("servers = %q", servers)
	}
	if !reflect.DeepEqual(searches, []string{"second.example", "third.example"}) {
		t.Errorf("searches = %q (last search line wins, trailing dot trimmed)", searches)
	}
	if !reflect.DeepEqual(options, []string{"rotate"}) {
		t.Errorf("options = %q (last options line wins)", options)
	}
}

func TestHostname(t *testing.T) {
	long := strings.Repeat("x", 62) + "-y"
	tests := []struct {
		name, podName, hostname, subdomain string
		wantHost, wantDomain               string
	}{
		{"pod name", "web-0", "", "", "web-0", ""},
		{"spec.hostname wins", "web-0", "frontend", "", "frontend", ""},
		{"subdomain", "web-0", "web", "svc1", "web", "svc1.shop.svc.cluster.local"},
		{"long pod name cut to 63 without trailing dash", long, "", "", strings.Repeat("x", 62), ""},
		{"exactly 63 kept", strings.Repeat("z", 63), "", "", strings.Repeat("z", 63), ""},
		{"cut keeps inner dots", strings.Repeat("a", 60) + ".bc.d", "", "", strings.Repeat("a", 60) + ".bc", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: tt.podName, Namespace: "shop"},
				Spec: v1.PodSpec{Hostname: tt.hostname, Subdomain: tt.subdomain}}
			h, d, err := Hostname(p, "cluster.local")
			if err != nil {
				t.Fatal(err)
			}
			if h != tt.wantHost || d != tt.wantDomain {
				t.Fatalf("Hostname = (%q, %q), want (%q, %q)", h, d, tt.wantHost, tt.wantDomain)
			}
		})
	}
	for _, bad := range []struct{ hostname, subdomain, field string }{
		{"Not_A_Label", "", "spec.hostname"},
		{"", "bad.sub", "spec.subdomain"},
	} {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "shop"},
			Spec: v1.PodSpec{Hostname: bad.hostname, Subdomain: bad.subdomain}}
		_, _, err := Hostname(p, "cluster.local")
		if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), bad.field) {
			t.Errorf("Hostname(%q, %q) err = %v, want invalid argument naming %s", bad.hostname, bad.subdomain, err, bad.field)
		}
	}
}

func TestKernelHostname(t *testing.T) {
	yes, no := true, false
	p := &v1.Pod{}
	if got, _ := KernelHostname(p, "web", "svc1.shop.svc.cluster.local"); got != "web" {
		t.Errorf("unset setHostnameAsFQDN: %q, want web", got)
	}
	p.Spec.SetHostnameAsFQDN = &no
	if got, _ := KernelHostname(p, "web", "svc1.shop.svc.cluster.local"); got != "web" {
		t.Errorf("false: %q, want web", got)
	}
	p.Spec.SetHostnameAsFQDN = &yes
	if got, _ := KernelHostname(p, "web", ""); got != "web" {
		t.Errorf("no domain: %q, want web", got)
	}
	if got, err := KernelHostname(p, "web", "svc1.shop.svc.cluster.local"); err != nil || got != "web.svc1.shop.svc.cluster.local" {
		t.Errorf("fqdn: %q, %v", got, err)
	}
	_, err := KernelHostname(p, strings.Repeat("h", 40), "svc1.shop.svc.cluster.local")
	if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), "too long") {
		t.Errorf("long fqdn err = %v", err)
	}
}

// A ClusterFirst pod on a node without cluster DNS gets the kubelet's
// MissingClusterDNS wording: the pod's event names the pod, the node's
// does not; other warnings are for the pod alone.
func TestMissingClusterDNSMessages(t *testing.T) {
	p := pod(v1.DNSClusterFirst, false, nil)
	p.UID = "0d6c5e0a-1111-2222-3333-444455556666"
	_, warnings, err := PodDNS(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	const node = `kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`
	want := Warning{
		Reason:      ReasonMissingClusterDNS,
		Message:     `pod: "web_shop(0d6c5e0a-1111-2222-3333-444455556666)". ` + node,
		NodeMessage: node,
	}
	if len(warnings) != 1 || warnings[0] != want {
		t.Fatalf("warnings = %+v, want %+v", warnings, want)
	}

	p.Spec.DNSPolicy = v1.DNSNone
	p.Spec.DNSConfig = &v1.PodDNSConfig{Nameservers: []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"}}
	_, warnings, err = PodDNS(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || warnings[0].Reason != ReasonDNSConfigForming || warnings[0].NodeMessage != "" {
		t.Fatalf("warnings = %+v, want one DNSConfigForming for the pod only", warnings)
	}
}
