// Package apilb is the agent's client-side load balancer across the
// apiserver replicas, as k3s's agent load balancer: every connection the
// agent's clients open goes through Balancer.DialContext, which dials the
// server in use and, when that fails, the others in turn, sticking to the
// first that answers. The servers are the configured ones (--server) plus
// those the default/kubernetes EndpointSlice names (Run keeps them), so a
// replica added later is used and one that goes away is passed over within
// a dial timeout.
//
// TLS is unchanged: the agent verifies every replica's certificate against
// the cluster CA with the server name all replicas' certificates hold
// (ServerName), whichever replica it reaches.
package apilb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"berth/internal/errdefs"
)

// ServerName is the name the agent verifies the apiservers' certificates
// against when it balances: every apiserver's serving certificate holds it
// (the in-cluster name of the kubernetes Service), berth's and upstream's.
const ServerName = "kubernetes.default.svc"

// DefaultDialTimeout bounds one connection attempt to one server.
const DefaultDialTimeout = 3 * time.Second

// Config configures a Balancer.
type Config struct {
	// Servers are the configured apiserver URLs (https://HOST:PORT), at
	// least one; the first is used first.
	Servers []string
	// DialTimeout bounds each attempt; zero is DefaultDialTimeout.
	DialTimeout time.Duration
	// Logger; nil discards.
	Logger *slog.Logger
}

// Balancer picks the apiserver each new connection goes to.
type Balancer struct {
	cfg        Config
	configured []string // host:port, in the given order
	dialer     net.Dialer

	mu      sync.Mutex
	learned []string // host:port from the EndpointSlice, sorted
	current string
}

// New validates cfg and returns a Balancer using cfg.Servers[0] first.
func New(cfg Config) (*Balancer, error) {
	if len(cfg.Servers) == 0 {
		return nil, fmt.Errorf("apilb config: Servers: at least one apiserver URL is required: %w", errdefs.ErrInvalidArgument)
	}
	b := &Balancer{cfg: cfg}
	for i, s := range cfg.Servers {
		hp, err := HostPort(s)
		if err != nil {
			return nil, fmt.Errorf("apilb config: Servers[%d]: %w", i, err)
		}
		if !slices.Contains(b.configured, hp) {
			b.configured = append(b.configured, hp)
		}
	}
	if b.cfg.DialTimeout <= 0 {
		b.cfg.DialTimeout = DefaultDialTimeout
	}
	if b.cfg.Logger == nil {
		b.cfg.Logger = slog.New(slog.DiscardHandler)
	}
	b.current = b.configured[0]
	return b, nil
}

// HostPort is the host:port an https URL names (port 443 when it names none).
func HostPort(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "https" || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return "", fmt.Errorf("%q must be an https:// URL with no path, such as https://10.0.0.1:6443: %w", s, errdefs.ErrInvalidArgument)
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	return net.JoinHostPort(u.Hostname(), port), nil
}

// Current is the server new connections go to first.
func (b *Balancer) Current() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.current
}

// Servers are the servers in the order the next dial tries them: the
// current one, the ones the EndpointSlice names, the configured ones.
func (b *Balancer) Servers() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := []string{b.current}
	for _, s := range append(slices.Clone(b.learned), b.configured...) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// DialContext connects to the current server or, failing that, to the
// next that answers, which becomes current; the address asked for is
// ignored (every apiserver serves the same API). It is rest.Config.Dial.
func (b *Balancer) DialContext(ctx context.Context, network, _ string) (net.Conn, error) {
	var errs []error
	for _, addr := range b.Servers() {
		dctx, cancel := context.WithTimeout(ctx, b.cfg.DialTimeout)
		conn, err := b.dialer.DialContext(dctx, network, addr)
		cancel()
		if err == nil {
			b.use(addr)
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("apilb: no apiserver answers: %w", errors.Join(errs...))
}

// use makes addr current, logging a change.
func (b *Balancer) use(addr string) {
	b.mu.Lock()
	prev := b.current
	b.current = addr
	b.mu.Unlock()
	if prev != addr {
		b.cfg.Logger.Warn("apiserver failover: switched to another server", "from", prev, "to", addr)
	}
}

// SetEndpoints replaces the servers learned from the EndpointSlice.
func (b *Balancer) SetEndpoints(servers []string) {
	servers = slices.Clone(servers)
	slices.Sort(servers)
	servers = slices.Compact(servers)
	b.mu.Lock()
	changed := !slices.Equal(b.learned, servers)
	b.learned = servers
	b.mu.Unlock()
	if changed {
		b.cfg.Logger.Info("apiservers from the kubernetes EndpointSlice", "servers", servers)
	}
}

// Endpoints are the ready endpoints' host:port of the default/kubernetes
// EndpointSlices (its "https" port, or its only one).
func Endpoints(slices []*discoveryv1.EndpointSlice) []string {
	var out []string
	for _, s := range slices {
		var port int32
		for _, p := range s.Ports {
			if p.Port != nil && (len(s.Ports) == 1 || (p.Name != nil && *p.Name == "https")) {
				port = *p.Port
			}
		}
		if port == 0 {
			continue
		}
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			for _, a := range ep.Addresses {
				out = append(out, net.JoinHostPort(a, strconv.Itoa(int(port))))
			}
		}
	}
	return out
}

// Run keeps the learned servers in step with the default/kubernetes
// EndpointSlices until ctx ends.
func (b *Balancer) Run(ctx context.Context, client kubernetes.Interface) error {
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace("default"),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = discoveryv1.LabelServiceName + "=kubernetes" }))
	inf := factory.Discovery().V1().EndpointSlices()
	update := func() {
		list, err := inf.Lister().EndpointSlices("default").List(labels.Everything())
		if err == nil {
			b.SetEndpoints(Endpoints(list))
		}
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { update() }, UpdateFunc: func(any, any) { update() }, DeleteFunc: func(any) { update() },
	}); err != nil {
		return fmt.Errorf("apilb: %w", err)
	}
	factory.Start(ctx.Done())
	<-ctx.Done()
	factory.Shutdown()
	return nil
}
