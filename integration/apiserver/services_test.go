package apiserver_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	kubernetes3 "go.etcd.io/etcd/client/v3/kubernetes"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"berth/controlplane/storage"
	"berth/integration/harness"
	"berth/internal/api/scheme"
)

var serviceRange = netip.MustParsePrefix("10.43.0.0/16")

func newService(name string, typ corev1.ServiceType, mutate ...func(*corev1.Service)) *corev1.Service {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{
		Type: typ, Selector: map[string]string{"app": name},
		Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
	}}
	if typ == corev1.ServiceTypeExternalName {
		svc.Spec.ExternalName = "example.com"
	}
	for _, m := range mutate {
		m(svc)
	}
	return svc
}

// wantInvalid checks err is 422 Invalid with a message containing want.
func wantInvalidMessage(t *testing.T, err error, want string) {
	t.Helper()
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want Invalid containing %q", err, want)
	}
}

// TestServiceAllocation: every Service type gets (or does not get) its
// cluster IP and node ports as from kube-apiserver, requested ones are
// checked, type changes and deletes give them back.
func TestServiceAllocation(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, shared)
	svcs := shared.Client(t).CoreV1().Services(ns)
	create := func(svc *corev1.Service) (*corev1.Service, error) {
		return svcs.Create(ctx, svc, metav1.CreateOptions{})
	}
	mustCreate := func(svc *corev1.Service) *corev1.Service {
		t.Helper()
		out, err := create(svc)
		if err != nil {
			t.Fatalf("create %s: %v", svc.Name, err)
		}
		return out
	}

	web := mustCreate(newService("web", corev1.ServiceTypeClusterIP))
	ip, err := netip.ParseAddr(web.Spec.ClusterIP)
	if err != nil || !serviceRange.Contains(ip) || !slices.Equal(web.Spec.ClusterIPs, []string{web.Spec.ClusterIP}) ||
		!slices.Equal(web.Spec.IPFamilies, []corev1.IPFamily{corev1.IPv4Protocol}) || *web.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack {
		t.Fatalf("ClusterIP service spec %+v", web.Spec)
	}
	_, err = create(newService("taken", corev1.ServiceTypeClusterIP, func(s *corev1.Service) { s.Spec.ClusterIP = web.Spec.ClusterIP }))
	wantInvalidMessage(t, err, fmt.Sprintf(`spec.clusterIPs: Invalid value: ["%s"]: failed to allocate IP %s: provided IP is already allocated`, ip, ip))
	_, err = create(newService("outside", corev1.ServiceTypeClusterIP, func(s *corev1.Service) { s.Spec.ClusterIP = "10.99.0.1" }))
	wantInvalidMessage(t, err, "the provided IP (10.99.0.1) is not in the valid range. The range of valid IPs is 10.43.0.0/16")
	_, err = create(newService("dual", corev1.ServiceTypeClusterIP, func(s *corev1.Service) {
		p := corev1.IPFamilyPolicyRequireDualStack
		s.Spec.IPFamilyPolicy = &p
	}))
	wantInvalidMessage(t, err, "this cluster is not configured for dual-stack services")
	_, err = create(newService("v6", corev1.ServiceTypeClusterIP, func(s *corev1.Service) { s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol} }))
	wantInvalidMessage(t, err, "spec.ipFamilies[0]: Invalid value: \"IPv6\": not configured on this cluster")

	// A requested IP; a dry run checks it without taking it.
	if _, err := svcs.Create(ctx, newService("dry", corev1.ServiceTypeClusterIP, func(s *corev1.Service) { s.Spec.ClusterIP = "10.43.200.7" }),
		metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatal(err)
	}
	fixed := mustCreate(newService("fixed", corev1.ServiceTypeClusterIP, func(s *corev1.Service) { s.Spec.ClusterIP = "10.43.200.7" }))
	if fixed.Spec.ClusterIP != "10.43.200.7" {
		t.Fatalf("requested IP not kept: %s", fixed.Spec.ClusterIP)
	}
	// The cluster IP is immutable.
	fixed.Spec.ClusterIP, fixed.Spec.ClusterIPs = "10.43.200.8", []string{"10.43.200.8"}
	_, err = svcs.Update(ctx, fixed, metav1.UpdateOptions{})
	wantInvalidMessage(t, err, "may not change once set")
	// Deleting gives the IP back.
	if err := svcs.Delete(ctx, "fixed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	mustCreate(newService("fixed-again", corev1.ServiceTypeClusterIP, func(s *corev1.Service) { s.Spec.ClusterIP = "10.43.200.7" }))

	headless := mustCreate(newService("headless", corev1.ServiceTypeClusterIP, func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone }))
	if !slices.Equal(headless.Spec.ClusterIPs, []string{"None"}) || *headless.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack {
		t.Fatalf("headless spec %+v", headless.Spec)
	}
	bare := mustCreate(newService("headless-noselector", corev1.ServiceTypeClusterIP, func(s *corev1.Service) {
		s.Spec.ClusterIP, s.Spec.Selector = corev1.ClusterIPNone, nil
	}))
	if *bare.Spec.IPFamilyPolicy != corev1.IPFamilyPolicyRequireDualStack || len(bare.Spec.IPFamilies) != 2 {
		t.Fatalf("selectorless headless spec %+v", bare.Spec)
	}
	ext := mustCreate(newService("ext", corev1.ServiceTypeExternalName))
	if ext.Spec.ClusterIP != "" || len(ext.Spec.ClusterIPs) != 0 || ext.Spec.IPFamilyPolicy != nil {
		t.Fatalf("ExternalName spec %+v", ext.Spec)
	}

	// NodePort: ports with one number share a node port.
	np := mustCreate(newService("np", corev1.ServiceTypeNodePort, func(s *corev1.Service) {
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "udp", Port: 80, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(8080)})
	}))
	port := np.Spec.Ports[0].NodePort
	if port < 30000 || port > 32767 || np.Spec.Ports[1].NodePort != port {
		t.Fatalf("node ports %+v", np.Spec.Ports)
	}
	_, err = create(newService("np-taken", corev1.ServiceTypeNodePort, func(s *corev1.Service) { s.Spec.Ports[0].NodePort = port }))
	wantInvalidMessage(t, err, fmt.Sprintf("spec.ports[0].nodePort: Invalid value: %d: provided port is already allocated", port))
	_, err = create(newService("np-outside", corev1.ServiceTypeNodePort, func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 80 }))
	wantInvalidMessage(t, err, "provided port is not in the valid range. The range of valid ports is 30000-32767")
	// Back to ClusterIP: the node port is given back.
	np.Spec.Type = corev1.ServiceTypeClusterIP
	np, err = svcs.Update(ctx, np, metav1.UpdateOptions{})
	if err != nil || np.Spec.Ports[0].NodePort != 0 {
		t.Fatalf("to ClusterIP: %v %+v", err, np)
	}
	mustCreate(newService("np-reuse", corev1.ServiceTypeNodePort, func(s *corev1.Service) { s.Spec.Ports[0].NodePort = port }))

	// LoadBalancer: node ports, and a health check node port with
	// externalTrafficPolicy Local; the status stays empty (no cloud).
	lb := mustCreate(newService("lb", corev1.ServiceTypeLoadBalancer, func(s *corev1.Service) {
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	}))
	if lb.Spec.Ports[0].NodePort == 0 || lb.Spec.HealthCheckNodePort == 0 || lb.Spec.HealthCheckNodePort == lb.Spec.Ports[0].NodePort ||
		len(lb.Status.LoadBalancer.Ingress) != 0 || lb.Spec.ClusterIP == "" {
		t.Fatalf("LoadBalancer %+v", lb)
	}
	noNP := mustCreate(newService("lb-no-nodeports", corev1.ServiceTypeLoadBalancer, func(s *corev1.Service) {
		f := false
		s.Spec.AllocateLoadBalancerNodePorts = &f
	}))
	if noNP.Spec.Ports[0].NodePort != 0 {
		t.Fatalf("allocateLoadBalancerNodePorts false got %d", noNP.Spec.Ports[0].NodePort)
	}

	// ExternalName gives its IP back; leaving ExternalName takes one.
	webIP := web.Spec.ClusterIP
	web.Spec.Type, web.Spec.ExternalName = corev1.ServiceTypeExternalName, "example.org"
	web, err = svcs.Update(ctx, web, metav1.UpdateOptions{})
	if err != nil || web.Spec.ClusterIP != "" {
		t.Fatalf("to ExternalName: %v %+v", err, web)
	}
	mustCreate(newService("web-ip-reuse", corev1.ServiceTypeClusterIP, func(s *corev1.Service) { s.Spec.ClusterIP = webIP }))
	web.Spec.Type, web.Spec.ExternalName = corev1.ServiceTypeClusterIP, ""
	web, err = svcs.Update(ctx, web, metav1.UpdateOptions{})
	if err != nil || web.Spec.ClusterIP == "" || web.Spec.ClusterIP == webIP {
		t.Fatalf("from ExternalName: %v %+v", err, web)
	}

	// kubectl shows them as upstream's.
	out := shared.mustKubectl(t, "1.32", "", "-n", ns, "get", "services", "lb", "headless", "ext")
	for _, want := range []string{lb.Spec.ClusterIP + "   <pending>", fmt.Sprintf("80:%d/TCP", lb.Spec.Ports[0].NodePort), "None", "example.com"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get services lacks %q:\n%s", want, out)
		}
	}
}

// TestKubernetesService: default/kubernetes has the range's first IP, port
// 443 to the apiserver's secure port, and Endpoints and an EndpointSlice
// naming the server's (non-loopback) address.
func TestKubernetesService(t *testing.T) {
	cs := shared.Client(t)
	_, port, _ := strings.Cut(shared.Addr, ":")
	wantPort, _ := strconv.Atoi(port)
	waitKubernetesEndpoints(t, cs, wantPort, func(ips []string) bool { return len(ips) == 1 })
	svc, err := cs.CoreV1().Services("default").Get(context.Background(), "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.ClusterIP != "10.43.0.1" || svc.Spec.Ports[0].Port != 443 || svc.Spec.Ports[0].Name != "https" ||
		svc.Spec.Ports[0].TargetPort.IntValue() != wantPort || svc.Labels["component"] != "apiserver" || len(svc.Spec.Selector) != 0 {
		t.Fatalf("kubernetes service %+v", svc)
	}
	// In-cluster clients reach it by the Service's IP and name.
	data, err := os.ReadFile(filepath.Join(shared.Dir, "serving.crt"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if err := cert.VerifyHostname("10.43.0.1"); err != nil {
		t.Error(err)
	}
	if err := cert.VerifyHostname("kubernetes.default.svc.cluster.local"); err != nil {
		t.Error(err)
	}
}

// kubernetesEndpoints are the IPs of default/kubernetes's Endpoints and
// EndpointSlice when they agree and carry port, else nil.
func kubernetesEndpoints(cs kubernetes.Interface, port int) ([]string, string) {
	ctx := context.Background()
	ep, err := cs.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		return nil, err.Error()
	}
	var epIPs []string
	for _, s := range ep.Subsets {
		if len(s.Ports) != 1 || s.Ports[0].Port != int32(port) {
			return nil, fmt.Sprintf("endpoints ports %+v", s.Ports)
		}
		for _, a := range s.Addresses {
			epIPs = append(epIPs, a.IP)
		}
	}
	slice, err := cs.DiscoveryV1().EndpointSlices("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		return nil, err.Error()
	}
	var sliceIPs []string
	for _, e := range slice.Endpoints {
		if e.Conditions.Ready == nil || !*e.Conditions.Ready {
			return nil, "slice endpoint not ready"
		}
		sliceIPs = append(sliceIPs, e.Addresses...)
	}
	if slice.Labels[discoveryv1.LabelServiceName] != "kubernetes" || len(slice.Ports) != 1 || *slice.Ports[0].Port != int32(port) {
		return nil, fmt.Sprintf("slice %+v", slice)
	}
	if !slices.Equal(epIPs, sliceIPs) {
		return nil, fmt.Sprintf("endpoints %v, slice %v", epIPs, sliceIPs)
	}
	for _, ip := range epIPs {
		if a, err := netip.ParseAddr(ip); err != nil || a.IsLoopback() {
			return nil, "loopback or bad address " + ip
		}
	}
	return epIPs, fmt.Sprint(epIPs)
}

func waitKubernetesEndpoints(t *testing.T, cs kubernetes.Interface, port int, ok func([]string) bool) []string {
	t.Helper()
	var ips []string
	harness.WaitFor(t, 60*time.Second, "default/kubernetes endpoints", func() (bool, string) {
		var msg string
		ips, msg = kubernetesEndpoints(cs, port)
		return ips != nil && ok(ips), msg
	})
	return ips
}

// TestServiceAllocationsRepair: allocations survive a restart; a Service
// deleted from etcd behind the allocator's back (its IP and node port
// leaked) is freed after three repairs; a lost bitmap is rebuilt from the
// Services; a double allocation is reported on both Services as Events.
func TestServiceAllocationsRepair(t *testing.T) {
	ctx := context.Background()
	_, urls := startEtcdCluster(t)
	dir := filepath.Join(t.TempDir(), "server")
	args := append([]string{"--etcd-servers", strings.Join(urls, ","), "--service-repair-interval", "500ms"}, apiOnly...)
	srv, err := startServer(dir, "127.0.0.1:0", args...)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { srv.stop() }()
	etcd, err := clientv3.New(clientv3.Config{Endpoints: urls, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()

	svcs := srv.Client(t).CoreV1().Services("default")
	keep, err := svcs.Create(ctx, newService("keep", corev1.ServiceTypeNodePort), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	leak, err := svcs.Create(ctx, newService("leak", corev1.ServiceTypeNodePort), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	conflicts := func(c *corev1.Service) error {
		_, err := svcs.Create(ctx, newService("probe", corev1.ServiceTypeNodePort, func(s *corev1.Service) {
			s.Spec.ClusterIP = c.Spec.ClusterIP
		}), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil {
			return fmt.Errorf("%s is free", c.Spec.ClusterIP)
		}
		_, err = svcs.Create(ctx, newService("probe", corev1.ServiceTypeNodePort, func(s *corev1.Service) {
			s.Spec.Ports[0].NodePort = c.Spec.Ports[0].NodePort
		}), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil {
			return fmt.Errorf("%d is free", c.Spec.Ports[0].NodePort)
		}
		return nil
	}

	// Across a restart the allocations hold.
	addr := srv.Addr
	srv.stop()
	if srv, err = startServer(dir, addr, args...); err != nil {
		t.Fatal(err)
	}
	svcs = srv.Client(t).CoreV1().Services("default")
	if err := conflicts(keep); err != nil {
		t.Fatalf("after restart: %v", err)
	}

	// Behind the allocator's back: the Service goes, its items leak until
	// the repair frees them.
	if _, err := etcd.Delete(ctx, "/registry/services/default/leak"); err != nil {
		t.Fatal(err)
	}
	if err := conflicts(leak); err != nil {
		t.Fatalf("a leaked allocation was freed at once: %v", err)
	}
	harness.WaitFor(t, 30*time.Second, "the leaked IP and node port freed", func() (bool, string) {
		_, err1 := svcs.Create(ctx, newService("probe", corev1.ServiceTypeClusterIP, func(s *corev1.Service) { s.Spec.ClusterIP = leak.Spec.ClusterIP }),
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		_, err2 := svcs.Create(ctx, newService("probe", corev1.ServiceTypeNodePort, func(s *corev1.Service) { s.Spec.Ports[0].NodePort = leak.Spec.Ports[0].NodePort }),
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err1 == nil && err2 == nil, fmt.Sprint(err1, err2)
	})

	// The bitmaps lost: rebuilt from the Services.
	if _, err := etcd.Delete(ctx, "/registry/ranges/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, 30*time.Second, "the allocations rebuilt", func() (bool, string) {
		err := conflicts(keep)
		return err == nil, fmt.Sprint(err)
	})
	// A double allocation (a Service copied in etcd with the other's IP and
	// node port) is reported on both Services.
	resp, err := etcd.Get(ctx, "/registry/services/default/keep")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("reading keep from etcd: %v", err)
	}
	f, err := storage.New(storage.Config{Client: &kubernetes3.Client{}, Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	codec := f.Codec(corev1.SchemeGroupVersion)
	dup := &corev1.Service{}
	if err := runtime.DecodeInto(codec, resp.Kvs[0].Value, dup); err != nil {
		t.Fatal(err)
	}
	dup.Name, dup.UID, dup.ResourceVersion = "dup", "dup-uid", ""
	data, err := runtime.Encode(codec, dup)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := etcd.Put(ctx, "/registry/services/default/dup", string(data)); err != nil {
		t.Fatal(err)
	}
	events := srv.Client(t).CoreV1().Events("default")
	harness.WaitFor(t, 30*time.Second, "double allocation events", func() (bool, string) {
		l, err := events.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		got := map[string]bool{}
		for _, e := range l.Items {
			got[e.InvolvedObject.Name+"/"+e.Reason] = true
		}
		return got["dup/ClusterIPAlreadyAllocated"] && got["keep/ClusterIPAlreadyAllocated"] && got["dup/PortAlreadyAllocated"], fmt.Sprint(got)
	})
	for _, want := range []string{"kind=Leaked", "kind=Repaired", "kind=Duplicate"} {
		if !strings.Contains(srv.Log(), want) {
			t.Errorf("the repair logged no %s:\n%s", want, srv.LogTail())
		}
	}
}

// TestKubernetesServiceReplicas: two servers on one etcd each publish
// their address in default/kubernetes; one stopping cleanly leaves at once,
// one killed leaves when its lease expires.
func TestKubernetesServiceReplicas(t *testing.T) {
	_, urls := startEtcdCluster(t)
	port := harness.FreePort(t)
	var servers []*serverProc
	for i, ip := range []string{"192.0.2.101", "192.0.2.102", "192.0.2.103"} {
		// One port for all, as upstream's reconciler expects (each
		// listens on its own loopback address).
		srv, err := startServer(filepath.Join(t.TempDir(), fmt.Sprint("replica", i)), fmt.Sprintf("127.0.0.%d:%d", i+1, port),
			append([]string{"--etcd-servers", strings.Join(urls, ","), "--advertise-address", ip}, apiOnly...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.stop)
		servers = append(servers, srv)
	}
	cs := servers[0].Client(t)
	waitKubernetesEndpoints(t, cs, port, func(ips []string) bool {
		return slices.Equal(ips, []string{"192.0.2.101", "192.0.2.102", "192.0.2.103"})
	})
	servers[1].stop()
	start := time.Now()
	waitKubernetesEndpoints(t, cs, port, func(ips []string) bool { return slices.Equal(ips, []string{"192.0.2.101", "192.0.2.103"}) })
	t.Logf("a stopped server left the endpoints in %s", time.Since(start))
	if err := syscall.Kill(servers[2].Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-servers[2].Done()
	start = time.Now()
	waitKubernetesEndpoints(t, cs, port, func(ips []string) bool { return slices.Equal(ips, []string{"192.0.2.101"}) })
	if d := time.Since(start); d < 3*time.Second {
		t.Errorf("a killed server left the endpoints after %s, before its lease could expire", d)
	} else {
		t.Logf("a killed server left the endpoints in %s", d)
	}
}
