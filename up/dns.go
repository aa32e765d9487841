package up

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/netip"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"berth/agent"
	"berth/clusterdns"
	"berth/internal/supervisor"
)

// clusterDNSAddr is where the cluster DNS serves: the pod bridge's gateway
// (the pod CIDR's first address, host-local's default gateway), port 53.
// The pods reach it over their bridge with no service proxy, and nothing
// off the node can.
func clusterDNSAddr(podCIDR string) netip.AddrPort {
	return netip.AddrPortFrom(netip.MustParsePrefix(podCIDR).Addr().Next(), 53)
}

// startClusterDNS runs the cluster DNS on addr, forwarding other names to
// the nameservers of resolvConf.
func startClusterDNS(sup *supervisor.Supervisor, kubeconfig, resolvConf string, addr netip.AddrPort, log *slog.Logger) error {
	log = log.With("component", "cluster-dns")
	upstreams, err := clusterdns.Upstreams(resolvConf, addr.Addr())
	if errors.Is(err, fs.ErrNotExist) {
		log.Warn("no resolv.conf on the node: names outside the cluster domain get SERVFAIL", "path", resolvConf)
	} else if err != nil {
		return fmt.Errorf("cluster: cluster DNS: %w", err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("cluster: cluster DNS: %w", err)
	}
	client, err := kubernetes.NewForConfig(rest.AddUserAgent(rc, "berth-cluster-dns"))
	if err != nil {
		return fmt.Errorf("cluster: cluster DNS: %w", err)
	}
	s, err := clusterdns.New(clusterdns.Config{
		Client: client, Listen: addr, Domain: agent.DefaultClusterDomain, Upstreams: upstreams, Logger: log,
	})
	if err != nil {
		return fmt.Errorf("cluster: cluster DNS: %w", err)
	}
	sup.Go("cluster-dns", s.Run)
	return nil
}
