// Package clusterdns is berth's cluster DNS server: an authoritative server
// for the cluster domain, answering from informers over Namespaces,
// Services and EndpointSlices as the Kubernetes DNS-Based Service Discovery
// specification describes, and forwarding every other name to the node's
// upstream resolvers.
//
// Records (zone = the cluster domain, TTL 5 s as CoreDNS's kubernetes plugin):
//
//   - <svc>.<ns>.svc.<zone>: A/AAAA of a ClusterIP Service's cluster IPs; of
//     a headless Service, its ready endpoints' addresses; CNAME of an
//     ExternalName Service (its target resolved too when asked for A/AAAA);
//   - <host>.<svc>.<ns>.svc.<zone>: a headless Service's endpoint, by its
//     hostname or, without one, its dashed address (10-42-0-5);
//   - _<port>._<proto>.<svc>.<ns>.svc.<zone>: SRV of a named port; SRV at the
//     Service name lists every port;
//   - <a-b-c-d>.<ns>.pod.<zone>: A of that address in an existing namespace
//     (CoreDNS's "pods insecure");
//   - PTR of a Service's cluster IP and of a headless endpoint's address;
//   - the zone's SOA and NS, and dns-version.<zone> TXT "1.1.0".
//
// A name in the zone that does not exist is NXDOMAIN, one that exists
// without the asked type is NOERROR with no answer (NODATA); both carry the
// zone's SOA in the authority section. Forwarding that gets no answer in
// time is SERVFAIL.
package clusterdns

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"time"

	"github.com/miekg/dns"
	"k8s.io/client-go/kubernetes"

	"berth/internal/errdefs"
)

// DefaultTTL is the records' TTL, CoreDNS's kubernetes plugin default.
const DefaultTTL = 5 * time.Second

// DefaultForwardTimeout bounds one forwarded query over all upstreams.
const DefaultForwardTimeout = 2 * time.Second

// Config configures a Server.
type Config struct {
	// Client reads Namespaces, Services and EndpointSlices.
	Client kubernetes.Interface
	// Listen is the address served over UDP and TCP, e.g. the pod bridge's
	// gateway 10.42.0.1:53. It may not be on an interface yet (the bridge
	// appears with the first pod): the sockets bind it anyway. Port 0 picks
	// one port free for both.
	Listen netip.AddrPort
	// Domain is the cluster domain; default cluster.local.
	Domain string
	// Upstreams are host:port resolvers for names outside Domain; empty:
	// such names are SERVFAIL. See Upstreams.
	Upstreams []string
	// TTL of the records; default DefaultTTL.
	TTL time.Duration
	// ForwardTimeout bounds forwarding; default DefaultForwardTimeout.
	ForwardTimeout time.Duration
	// Logger; nil discards.
	Logger *slog.Logger
}

// Validate fills the defaults and checks the fields, naming the bad one.
func (c *Config) Validate() error {
	bad := func(field, format string, a ...any) error {
		return fmt.Errorf("clusterdns: %s: %s: %w", field, fmt.Sprintf(format, a...), errdefs.ErrInvalidArgument)
	}
	if c.Client == nil {
		return bad("Client", "required")
	}
	if !c.Listen.Addr().IsValid() {
		return bad("Listen", "required")
	}
	if c.Domain == "" {
		c.Domain = "cluster.local"
	}
	c.Domain = strings.ToLower(strings.TrimSuffix(c.Domain, "."))
	if _, ok := dns.IsDomainName(c.Domain); !ok || c.Domain == "" {
		return bad("Domain", "%q is not a domain name", c.Domain)
	}
	for _, u := range c.Upstreams {
		if _, err := netip.ParseAddrPort(u); err != nil {
			return bad("Upstreams", "%q is not an IP:port", u)
		}
	}
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if c.TTL < 0 || c.TTL%time.Second != 0 {
		return bad("TTL", "%s is not a whole number of seconds", c.TTL)
	}
	if c.ForwardTimeout == 0 {
		c.ForwardTimeout = DefaultForwardTimeout
	}
	if c.ForwardTimeout < 0 {
		return bad("ForwardTimeout", "%s is negative", c.ForwardTimeout)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Upstreams reads the nameservers of a resolv.conf as host:port, leaving out
// self (the cluster DNS's own address, which would loop).
func Upstreams(resolvConf string, self netip.Addr) ([]string, error) {
	cc, err := dns.ClientConfigFromFile(resolvConf)
	if err != nil {
		return nil, fmt.Errorf("clusterdns: upstreams from %s: %w", resolvConf, err)
	}
	var out []string
	for _, s := range cc.Servers {
		a, err := netip.ParseAddr(s)
		if err != nil || a.WithZone("") == self {
			continue
		}
		out = append(out, netip.AddrPortFrom(a, 53).String())
	}
	if len(cc.Servers) > 0 && len(out) == 0 {
		return nil, errors.New("clusterdns: " + resolvConf + " names only the cluster DNS itself")
	}
	return out, nil
}
