package testbed

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"sync"

	"berth/internal/containerd"
)

// relay forwards TCP connections from a listener on the underlay to a
// loopback address of the host, so the nodes' containerd reach registries
// the host serves on 127.0.0.1 only.
type relay struct {
	l  net.Listener
	to string
	wg sync.WaitGroup
}

func startRelay(listen, to string) (*relay, error) {
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("testbed: relay to %s: %w", to, err)
	}
	r := &relay{l: l, to: to}
	r.wg.Add(1)
	go r.serve()
	return r, nil
}

func (r *relay) serve() {
	defer r.wg.Done()
	for {
		c, err := r.l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			up, err := net.Dial("tcp", r.to)
			if err != nil {
				return
			}
			defer up.Close()
			done := make(chan struct{}, 2)
			go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
			go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
			<-done
		}()
	}
}

func (r *relay) close() {
	r.l.Close()
	r.wg.Wait()
}

// relayRegistries rewrites every mirror endpoint on the host's loopback to
// a relay on the underlay address at, started here.
func (b *Bed) relayRegistries(regs containerd.Registries, at netip.Addr) (containerd.Registries, error) {
	out := containerd.Registries{Mirrors: map[string]containerd.Mirror{}, Configs: regs.Configs}
	relayed := map[string]string{}
	for host, m := range regs.Mirrors {
		var eps []string
		for _, ep := range m.Endpoints {
			u, err := url.Parse(ep)
			if err != nil || u.Hostname() != "127.0.0.1" && u.Hostname() != "localhost" {
				eps = append(eps, ep)
				continue
			}
			to := net.JoinHostPort("127.0.0.1", u.Port())
			if relayed[to] == "" {
				listen := net.JoinHostPort(at.String(), u.Port())
				r, err := startRelay(listen, to)
				if err != nil {
					return out, err
				}
				b.relays = append(b.relays, r)
				relayed[to] = listen
			}
			u.Host = relayed[to]
			eps = append(eps, u.String())
		}
		out.Mirrors[host] = containerd.Mirror{Endpoints: eps}
	}
	return out, nil
}
