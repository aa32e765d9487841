// Command berth-testbed runs integration/testbed's multi-node cluster until
// it gets SIGINT or SIGTERM, for `make conformance TARGET=testbed`: once
// every node is Ready it copies the admin kubeconfig to -kubeconfig and
// creates -ready. The berth binary is $BERTH_BIN (or built).
package main

import (
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"syscall"

	"berth/integration/testbed"
	"berth/internal/containerd"
)

func main() {
	var opts testbed.Options
	var registries, kubeconfig, ready string
	flag.IntVar(&opts.Nodes, "nodes", 3, "nodes (network namespaces with containerd and berth agent)")
	flag.IntVar(&opts.Servers, "servers", 2, "berth server replicas")
	flag.StringVar(&opts.Prefix, "prefix", "bmn", "prefix of every bridge, netns and veth name")
	flag.Func("underlay", "the nodes' shared segment (default 10.254.64.0/24)", func(v string) (err error) {
		opts.Underlay, err = netip.ParsePrefix(v)
		return err
	})
	flag.StringVar(&opts.ClusterCIDR, "cluster-cidr", "", "the pods' addresses, split among the nodes (default 10.64.0.0/16)")
	flag.IntVar(&opts.MaskBits, "node-cidr-mask-size", 24, "the prefix length of each node's pod CIDR")
	flag.StringVar(&opts.ServiceCIDR, "service-cluster-ip-range", "", "the Services' cluster IPs (default 10.164.0.0/20)")
	flag.StringVar(&registries, "registries", "", "registries.yaml (k3s's format) for the nodes' containerd")
	flag.StringVar(&kubeconfig, "kubeconfig", "", "where to copy the admin kubeconfig once ready (required)")
	flag.StringVar(&ready, "ready", "", "file created once every node is Ready (required)")
	flag.Parse()
	if kubeconfig == "" || ready == "" {
		fmt.Fprintln(os.Stderr, "berth-testbed: -kubeconfig and -ready are required")
		os.Exit(2)
	}
	if registries != "" {
		regs, err := containerd.LoadRegistries(registries)
		if err != nil {
			fmt.Fprintf(os.Stderr, "berth-testbed: %v\n", err)
			os.Exit(2)
		}
		opts.Registries = regs
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	bed, err := testbed.Start(ctx, opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "berth-testbed: %v\n", err)
		os.Exit(1)
	}
	code := 0
	if err := run(bed, kubeconfig, ready); err != nil {
		fmt.Fprintf(os.Stderr, "berth-testbed: %v\n", err)
		code = 1
	} else {
		fmt.Printf("berth-testbed: ready: %d nodes, servers %s; kubeconfig %s\n", len(bed.Nodes), bed.ServerURLs(), kubeconfig)
		<-ctx.Done()
	}
	fmt.Println("berth-testbed: tearing down")
	if err := bed.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "berth-testbed: teardown: %v\n", err)
		code = 1
	}
	os.Exit(code)
}

func run(bed *testbed.Bed, kubeconfig, ready string) error {
	data, err := os.ReadFile(bed.Kubeconfig())
	if err != nil {
		return err
	}
	if err := os.WriteFile(kubeconfig, data, 0o600); err != nil {
		return err
	}
	return os.WriteFile(ready, nil, 0o644)
}
