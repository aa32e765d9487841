package testbed

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"berth/agent"
	"berth/agent/apilb"
	"berth/clusterdns"
)

// startClusterDNS runs the cluster DNS (clusterdns, in this process, as
// `berth up` runs it in its own) on the underlay bridge's address, port 53:
// every agent's --cluster-dns. Pods on every node reach it through their
// node's uplink (masqueraded, as all traffic leaving the pod network). It
// reads the API through a balancer across every server replica (apilb,
// as the agents do), so it rides out a replica going away, and it
// forwards no other names: the test bed is offline.
func (b *Bed) startClusterDNS() error {
	lb, err := apilb.New(apilb.Config{Servers: strings.Split(b.ServerURLs(), ",")})
	if err != nil {
		return fmt.Errorf("testbed: cluster DNS: %w", err)
	}
	cfg := rest.CopyConfig(b.Config)
	cfg.TLSClientConfig.ServerName = apilb.ServerName
	cfg.Dial = lb.DialContext
	client, err := kubernetes.NewForConfig(rest.AddUserAgent(cfg, "berth-testbed-cluster-dns"))
	if err != nil {
		return fmt.Errorf("testbed: cluster DNS: %w", err)
	}
	b.ClusterDNS = b.addr(1)
	s, err := clusterdns.New(clusterdns.Config{
		Client: client, Listen: netip.AddrPortFrom(b.ClusterDNS, 53), Domain: agent.DefaultClusterDomain,
	})
	if err != nil {
		return fmt.Errorf("testbed: cluster DNS: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	b.stopDNS = func() error {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("cluster DNS: %w", err)
		}
		return nil
	}
	return nil
}
