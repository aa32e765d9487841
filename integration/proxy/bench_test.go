package proxy

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/knftables"

	"berth/agent/proxy"
	"berth/internal/prereq"
)

// BenchmarkSync measures the proxier's transaction on real nftables, in a
// namespace of its own, at 100, 1000 and 5000 Services of 10 endpoints:
// the first sync (empty table) and a resync after one endpoint changed
// (berth rewrites the table in one transaction either way).
func BenchmarkSync(b *testing.B) {
	if os.Geteuid() != 0 {
		prereq.Missing(b, "needs root for network namespaces and nftables")
	}
	ns := "berth-px-bench-" + strconv.Itoa(os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		b.Fatalf("ip netns add: %v: %s", err, out)
	}
	defer exec.Command("ip", "netns", "delete", ns).Run()
	for _, n := range []int{100, 1000, 5000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for range b.N {
				cmd := exec.Command("ip", "netns", "exec", ns, os.Args[0])
				cmd.Env = append(os.Environ(), modeEnv+"=bench", targetEnv+"="+strconv.Itoa(n))
				out, err := cmd.CombinedOutput()
				if err != nil {
					b.Fatalf("bench child: %v: %s", err, out)
				}
				b.Logf("%d services × 10 endpoints: %s", n, strings.TrimSpace(string(out)))
			}
		})
	}
}

// benchSide syncs n Services twice in the current namespace and prints the
// durations; the table is deleted after.
func benchSide(n int) error {
	ctx := context.Background()
	nft, err := knftables.New(knftables.IPv4Family, table)
	if err != nil {
		return err
	}
	defer proxy.DeleteTable(ctx, nft)
	var svcs []*v1.Service
	var slices []*discoveryv1.EndpointSlice
	for i := range n {
		name := fmt.Sprintf("svc-%d", i)
		ip := fmt.Sprintf("10.96.%d.%d", i/250, i%250+1)
		svcs = append(svcs, &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: v1.ServiceSpec{
			Type: v1.ServiceTypeClusterIP, ClusterIP: ip, ClusterIPs: []string{ip},
			Ports: []v1.ServicePort{{Name: "http", Protocol: v1.ProtocolTCP, Port: 80}},
		}})
		s := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: name + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(v1.ProtocolTCP), Port: ptr.To[int32](8080)}},
		}
		for j := range 10 {
			k := i*10 + j
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.%d.%d.%d", 100+k>>16, k>>8&255, k&255)}})
		}
		slices = append(slices, s)
	}
	params := proxy.Params{PodCIDR: netipPrefix("10.100.0.0/16")}
	sync := func(prev *proxy.Ruleset) (*proxy.Ruleset, time.Duration, error) {
		start := time.Now()
		rs := proxy.Build(svcs, slices, params)
		tx := nft.NewTransaction()
		rs.Transaction(tx, prev, "bench")
		err := nft.Run(ctx, tx)
		return rs, time.Since(start), err
	}
	first, full, err := sync(nil)
	if err != nil {
		return err
	}
	slices[n/2].Endpoints[0].Addresses[0] = "10.200.0.1"
	_, change, err := sync(first)
	if err != nil {
		return err
	}
	fmt.Printf("first sync %v, resync after an endpoint change %v", full.Round(time.Millisecond), change.Round(time.Millisecond))
	return nil
}
