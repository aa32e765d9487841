package service

import (
	"context"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"

	"berth/controlplane/registry/core/service/allocator"
	"berth/controlplane/registry/core/service/ipallocator"
	"berth/controlplane/registry/core/service/ipallocator/ipallocatortest"
	"berth/controlplane/storage"
	"berth/internal/api/defaults"
	"berth/internal/api/scheme"
)

// testAllocators are Allocators with their IPAddress store at hand.
type testAllocators struct {
	*Allocators
	ips *ipallocatortest.Store
}

func newAllocators(t *testing.T) testAllocators {
	t.Helper()
	f, err := storage.New(storage.Config{Client: testserver.RunEtcd(t, nil), Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	newRA := func() runtime.Object { return &v1.RangeAllocation{} }
	st, closeFn, err := f.Raw(schema.GroupResource{Resource: "rangeallocations"}, "/ranges", newRA, newRA)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeFn)
	ports, _ := allocator.ParsePortRange("30000-30099")
	ips := ipallocatortest.New(networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes"},
		Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.43.0.0/24"}}})
	return testAllocators{&Allocators{IPs: ipallocator.New(ips, v1.IPv4Protocol), Ports: allocator.New(ports, st, allocator.ServiceNodePortsKey)}, ips}
}

func svcOf(typ v1.ServiceType, ports ...v1.ServicePort) *v1.Service {
	s := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}, Spec: v1.ServiceSpec{Type: typ, Ports: ports, Selector: map[string]string{"a": "b"}}}
	defaults.Service(s)
	return s
}

// isHeld reports whether a node port or cluster IP is taken.
func isHeld(al testAllocators, item string) (bool, error) {
	if len(item) > 5 {
		return al.ips.Get(item) != nil, nil
	}
	return al.Ports.Has(context.Background(), item)
}

func mustHold(t *testing.T, al testAllocators, items ...string) {
	t.Helper()
	for _, it := range items {
		if has, err := isHeld(al, it); err != nil || !has {
			t.Errorf("%s not held (%v)", it, err)
		}
	}
}

func mustBeFree(t *testing.T, al testAllocators, items ...string) {
	t.Helper()
	for _, it := range items {
		if has, _ := isHeld(al, it); has {
			t.Errorf("%s still held", it)
		}
	}
}

func TestAllocatorsCreateFinish(t *testing.T) {
	ctx := context.Background()
	al := newAllocators(t)
	// Two protocols on port 53 share a node port; 80 gets its own.
	svc := svcOf(v1.ServiceTypeNodePort,
		v1.ServicePort{Name: "dns", Port: 53, Protocol: v1.ProtocolUDP},
		v1.ServicePort{Name: "dns-tcp", Port: 53, Protocol: v1.ProtocolTCP},
		v1.ServicePort{Name: "http", Port: 80, Protocol: v1.ProtocolTCP, NodePort: 30005})
	finish, err := al.BeginCreate(ctx, svc, &metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := svc.Spec.Ports
	if p[0].NodePort == 0 || p[1].NodePort != p[0].NodePort || p[2].NodePort != 30005 || svc.Spec.ClusterIP == "" {
		t.Fatalf("ports %+v ip %q", p, svc.Spec.ClusterIP)
	}
	items := append(nodePortsOf(svc), svc.Spec.ClusterIP)
	mustHold(t, al, items...)
	// The write failed: everything goes back.
	finish(ctx, false)
	mustBeFree(t, al, items...)

	// A failure part-way (the node port taken) leaves no IP behind.
	other := svcOf(v1.ServiceTypeNodePort, v1.ServicePort{Port: 80, Protocol: v1.ProtocolTCP, NodePort: 30007})
	if _, err := al.BeginCreate(ctx, other, &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	again := svcOf(v1.ServiceTypeNodePort, v1.ServicePort{Port: 80, Protocol: v1.ProtocolTCP, NodePort: 30007})
	_, err = al.BeginCreate(ctx, again, &metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || err.Error() != `Service "s" is invalid: spec.ports[0].nodePort: Invalid value: 30007: provided port is already allocated` {
		t.Fatalf("taken node port: %v", err)
	}
	if again.Spec.ClusterIP != "" {
		mustBeFree(t, al, again.Spec.ClusterIP)
	}
}

func TestAllocatorsUpdate(t *testing.T) {
	ctx := context.Background()
	al := newAllocators(t)
	old := svcOf(v1.ServiceTypeLoadBalancer, v1.ServicePort{Name: "http", Port: 80, Protocol: v1.ProtocolTCP})
	old.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
	finish, err := al.BeginCreate(ctx, old, &metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	finish(ctx, true)
	hc, np := old.Spec.HealthCheckNodePort, old.Spec.Ports[0].NodePort
	if hc == 0 || np == 0 || hc == np {
		t.Fatalf("hc %d np %d", hc, np)
	}

	// A PUT of the original manifest keeps everything.
	put := svcOf(v1.ServiceTypeLoadBalancer, v1.ServicePort{Name: "http", Port: 80, Protocol: v1.ProtocolTCP})
	put.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
	finish, err = al.BeginUpdate(ctx, put, old.DeepCopy(), &metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	finish(ctx, true)
	if put.Spec.ClusterIP != old.Spec.ClusterIP || put.Spec.Ports[0].NodePort != np || put.Spec.HealthCheckNodePort != hc {
		t.Fatalf("PUT lost allocations: %+v", put.Spec)
	}
	mustHold(t, al, nodePortsOf(old)...)

	// To ClusterIP: node ports and health check port go back on success only.
	toCIP := old.DeepCopy()
	toCIP.Spec.Type = v1.ServiceTypeClusterIP
	toCIP.Spec.ExternalTrafficPolicy = ""
	finish, err = al.BeginUpdate(ctx, toCIP, old.DeepCopy(), &metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if toCIP.Spec.Ports[0].NodePort != 0 || toCIP.Spec.HealthCheckNodePort != 0 {
		t.Fatalf("type fields kept: %+v", toCIP.Spec)
	}
	finish(ctx, false)
	mustHold(t, al, nodePortsOf(old)...)
	finish, _ = al.BeginUpdate(ctx, toCIP, old.DeepCopy(), &metav1.UpdateOptions{})
	finish(ctx, true)
	mustBeFree(t, al, nodePortsOf(old)...)
	mustHold(t, al, old.Spec.ClusterIP)

	// Dry run: nothing taken.
	toNP := toCIP.DeepCopy()
	toNP.Spec.Type = v1.ServiceTypeNodePort
	toNP.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyCluster
	toNP.Spec.Ports[0].NodePort = 30050
	finish, err = al.BeginUpdate(ctx, toNP, toCIP.DeepCopy(), &metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatal(err)
	}
	finish(ctx, true)
	mustBeFree(t, al, "30050")

	// Delete gives back the IP.
	al.AfterDelete(toCIP, &metav1.DeleteOptions{})
	mustBeFree(t, al, old.Spec.ClusterIP)
}

func TestRepairUses(t *testing.T) {
	np := *svcOf(v1.ServiceTypeNodePort, v1.ServicePort{Port: 80, NodePort: 30001}, v1.ServicePort{Port: 81, NodePort: 30001})
	np.Spec.ClusterIPs = []string{"10.43.0.5"}
	ext := *svcOf(v1.ServiceTypeExternalName)
	ext.Spec.ClusterIPs = []string{"10.43.0.6"} // ignored: not held by an ExternalName
	hl := *svcOf(v1.ServiceTypeClusterIP)
	hl.Spec.ClusterIPs = []string{"None"}
	all := []v1.Service{np, ext, hl}
	if got := ClusterIPUses(all); len(got) != 1 || got[0].IP != "10.43.0.5" || got[0].Service.Name != "s" {
		t.Errorf("ip uses %+v", got)
	}
	if got := NodePortUses(all); len(got) != 1 || got[0].Item != "30001" {
		t.Errorf("port uses %+v", got)
	}
	if !slices.Equal(allocatedIPs(&hl), nil) {
		t.Error("headless holds an IP")
	}
}
