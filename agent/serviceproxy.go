package agent

import (
	"fmt"
	"net/netip"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"

	"berth/agent/proxy"
)

// serviceProxy builds the node's service proxy (kube-proxy's job) on the
// agent's client, owning cfg.ProxyTable.
func (a *Agent) serviceProxy(kube kubernetes.Interface, podCIDR string, reg prometheus.Registerer) (*proxy.Proxier, error) {
	cfg := &a.cfg
	pcfg := proxy.Config{Client: kube, Table: cfg.ProxyTable, NodeName: cfg.NodeName, Registerer: reg, HealthzBindAddress: cfg.ProxyHealthzBindAddress,
		KeepTableOnStop: !cfg.ProxyCleanupOnExit, Logger: cfg.Logger.With("component", "service-proxy")}
	if ip, err := netip.ParseAddr(cfg.NodeIP); err == nil {
		pcfg.NodeIPs = []netip.Addr{ip.Unmap()}
	}
	if p, err := netip.ParsePrefix(podCIDR); err == nil {
		pcfg.PodCIDR = p
	}
	p, err := proxy.New(pcfg)
	if err != nil {
		return nil, fmt.Errorf("agent: service proxy (--disable-service-proxy turns it off): %w", err)
	}
	return p, nil
}
