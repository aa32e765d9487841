package clusterdns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/sys/unix"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// ednsSize is the UDP payload size the server advertises (DNS Flag Day
// 2020's 1232, as CoreDNS).
const ednsSize = 1232

// maxChase bounds following CNAMEs (ExternalName Services may point at
// each other).
const maxChase = 8

// Server is the cluster DNS server.
type Server struct {
	cfg     Config
	udp     net.PacketConn
	tcp     net.Listener
	factory informers.SharedInformerFactory
	synced  []cache.InformerSynced
	zone    *zone
}

// New validates cfg and binds its address over UDP and TCP; Run serves it.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	udp, tcp, err := listen(cfg.Listen)
	if err != nil {
		return nil, err
	}
	factory := informers.NewSharedInformerFactory(cfg.Client, 0)
	nss := factory.Core().V1().Namespaces().Informer()
	svcs := factory.Core().V1().Services().Informer()
	eps := factory.Discovery().V1().EndpointSlices().Informer()
	if err := errors.Join(svcs.AddIndexers(serviceIndexers), eps.AddIndexers(sliceIndexers)); err != nil {
		udp.Close()
		tcp.Close()
		return nil, fmt.Errorf("clusterdns: %w", err)
	}
	s := &Server{cfg: cfg, udp: udp, tcp: tcp, factory: factory,
		synced: []cache.InformerSynced{nss.HasSynced, svcs.HasSynced, eps.HasSynced}}
	s.zone = &zone{origin: cfg.Domain + ".", ttl: uint32(cfg.TTL / time.Second), self: cfg.Listen.Addr(),
		st: informerStore{nss: nss.GetIndexer(), svcs: svcs.GetIndexer(), eps: eps.GetIndexer()}}
	return s, nil
}

// Addr is the bound address (its port, when Config.Listen's was 0).
func (s *Server) Addr() netip.AddrPort {
	return s.udp.LocalAddr().(*net.UDPAddr).AddrPort()
}

// Run serves until ctx ends, once the informers have synced, then closes
// the sockets.
func (s *Server) Run(ctx context.Context) error {
	defer s.udp.Close()
	defer s.tcp.Close()
	s.factory.Start(ctx.Done())
	defer s.factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), s.synced...) {
		return nil // stopped before the caches synced
	}
	servers := []*dns.Server{
		{PacketConn: s.udp, Handler: s, UDPSize: dns.DefaultMsgSize},
		{Listener: s.tcp, Handler: s, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second},
	}
	errs := make(chan error, len(servers))
	for _, srv := range servers {
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		go func() { errs <- srv.ActivateAndServe() }()
		select {
		case <-started:
		case err := <-errs:
			return fmt.Errorf("clusterdns: serving %s: %w", s.cfg.Listen, err)
		}
	}
	s.cfg.Logger.Info("cluster DNS serving", "address", s.Addr().String(), "domain", s.cfg.Domain, "upstreams", s.cfg.Upstreams)
	var err error
	select {
	case <-ctx.Done():
	case err = <-errs:
		err = fmt.Errorf("clusterdns: serving %s: %w", s.cfg.Listen, err)
	}
	for _, srv := range servers {
		_ = srv.Shutdown()
	}
	return err
}

// ServeDNS answers one query: from the zone, else (a PTR of the cluster's
// addresses aside) through the upstreams.
func (s *Server) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	m := s.answer(req, w.RemoteAddr().Network())
	if req.IsEdns0() != nil && m.IsEdns0() == nil {
		m.SetEdns0(ednsSize, false) // an EDNS query gets an EDNS answer
	}
	if _, udp := w.RemoteAddr().(*net.UDPAddr); udp {
		size := dns.MinMsgSize
		if o := req.IsEdns0(); o != nil {
			size = int(o.UDPSize())
		}
		m.Truncate(size)
	}
	if err := w.WriteMsg(m); err != nil {
		s.cfg.Logger.Debug("cluster DNS: write reply", "err", err)
	}
}

func (s *Server) answer(req *dns.Msg, network string) *dns.Msg {
	m := new(dns.Msg)
	switch {
	case req.Opcode != dns.OpcodeQuery:
		return m.SetRcode(req, dns.RcodeNotImplemented)
	case len(req.Question) != 1:
		return m.SetRcode(req, dns.RcodeFormatError)
	}
	q := req.Question[0]
	name := strings.ToLower(q.Name)
	z := s.zone
	if dns.IsSubDomain(z.origin, name) {
		r := z.resolve(name, q.Qtype)
		m.SetRcode(req, r.rcode)
		m.Authoritative, m.RecursionAvailable = true, true
		m.Answer, m.Extra = r.answer, r.extra
		s.chase(m, q.Qtype, network)
		if len(m.Answer) == 0 {
			m.Ns = []dns.RR{z.soa()}
		}
		return m
	}
	if q.Qtype == dns.TypePTR {
		if ip, ok := reverseAddr(name); ok {
			if r, ok := z.reverse(q.Name, ip); ok {
				m.SetReply(req)
				m.Authoritative, m.RecursionAvailable = true, true
				m.Answer = r.answer
				return m
			}
		}
	}
	resp, err := s.forward(req, network)
	if err != nil {
		s.cfg.Logger.Debug("cluster DNS: forward", "name", q.Name, "err", err)
		m.SetRcode(req, dns.RcodeServerFailure)
		m.RecursionAvailable = true
		return m
	}
	resp.Id = req.Id
	return resp
}

// chase follows a CNAME that ends m's answer when qtype asked for something
// else: in the zone from the records, outside it through the upstreams
// (no answer there leaves the CNAME alone, as a stub resolver can still
// follow it).
func (s *Server) chase(m *dns.Msg, qtype uint16, network string) {
	if qtype == dns.TypeCNAME {
		return
	}
	for range maxChase {
		if len(m.Answer) == 0 {
			return
		}
		cname, ok := m.Answer[len(m.Answer)-1].(*dns.CNAME)
		if !ok {
			return
		}
		if dns.IsSubDomain(s.zone.origin, cname.Target) {
			r := s.zone.resolve(cname.Target, qtype)
			m.Answer = append(m.Answer, r.answer...)
			continue
		}
		q := new(dns.Msg)
		q.SetQuestion(cname.Target, qtype)
		q.RecursionDesired = true
		if resp, err := s.forward(q, network); err == nil && resp.Rcode == dns.RcodeSuccess {
			m.Answer = append(m.Answer, resp.Answer...)
		}
		return
	}
}

// forward asks the upstreams in turn, within the forward timeout, over UDP
// then TCP when the answer was truncated (or the client asked over TCP).
func (s *Server) forward(req *dns.Msg, network string) (*dns.Msg, error) {
	if len(s.cfg.Upstreams) == 0 {
		return nil, errors.New("no upstream resolvers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ForwardTimeout)
	defer cancel()
	var errs []error
	for _, up := range s.cfg.Upstreams {
		nets := []string{"udp", "tcp"}
		if network == "tcp" {
			nets = nets[1:]
		}
		for _, n := range nets {
			deadline, _ := ctx.Deadline()
			c := &dns.Client{Net: n, Timeout: time.Until(deadline)}
			resp, _, err := c.ExchangeContext(ctx, req, up)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s/%s: %w", up, n, err))
				break
			}
			if !resp.Truncated || n == "tcp" {
				return resp, nil
			}
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// reverseAddr parses an in-addr.arpa or ip6.arpa name.
func reverseAddr(name string) (netip.Addr, bool) {
	l := dns.SplitDomainName(name)
	n := len(l)
	switch {
	case n == 6 && l[4] == "in-addr" && l[5] == "arpa":
		ip, err := netip.ParseAddr(l[3] + "." + l[2] + "." + l[1] + "." + l[0])
		return ip, err == nil
	case n == 34 && l[32] == "ip6" && l[33] == "arpa":
		var b strings.Builder
		for i := 31; i >= 0; i-- {
			b.WriteString(l[i])
			if i%4 == 0 && i > 0 {
				b.WriteByte(':')
			}
		}
		ip, err := netip.ParseAddr(b.String())
		return ip, err == nil
	}
	return netip.Addr{}, false
}

// listen binds addr over UDP and TCP (the same port when addr's is 0),
// with IP_FREEBIND: the address may not be on an interface yet.
func listen(addr netip.AddrPort) (net.PacketConn, net.Listener, error) {
	lc := net.ListenConfig{Control: func(network, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			if strings.HasSuffix(network, "6") {
				serr = unix.SetsockoptInt(int(fd), unix.SOL_IPV6, unix.IPV6_FREEBIND, 1)
			} else {
				serr = unix.SetsockoptInt(int(fd), unix.SOL_IP, unix.IP_FREEBIND, 1)
			}
		})
		return errors.Join(err, serr)
	}}
	ctx := context.Background()
	for range 10 {
		udp, err := lc.ListenPacket(ctx, "udp", addr.String())
		if err != nil {
			return nil, nil, fmt.Errorf("clusterdns: Listen: %w", err)
		}
		bound := netip.AddrPortFrom(addr.Addr(), uint16(udp.LocalAddr().(*net.UDPAddr).Port))
		tcp, err := lc.Listen(ctx, "tcp", bound.String())
		if err == nil {
			return udp, tcp, nil
		}
		udp.Close()
		if addr.Port() != 0 {
			return nil, nil, fmt.Errorf("clusterdns: Listen: %w", err)
		}
	}
	return nil, nil, fmt.Errorf("clusterdns: Listen: no port of %s free over both UDP and TCP", addr.Addr())
}
