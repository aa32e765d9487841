// Package proxy tests the agent's service proxy on real nftables, in network
// namespaces the test creates: the proxier runs in a "node" namespace whose
// veth leads to a "pod" namespace serving HTTP.
package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"berth/agent/proxy"
	"berth/integration/harness"
	"berth/internal/containerd"
	"berth/internal/prereq"
)

const (
	nodeAddr  = "10.250.0.1"
	podAddr   = "10.250.0.2"
	clusterIP = "10.96.0.10"
	emptyIP   = "10.96.0.11" // a Service without endpoints
	twoIP     = "10.96.0.12" // a Service of two endpoints
	stickyIP  = "10.96.0.13" // the same with sessionAffinity ClientIP
	udpIP     = "10.96.0.14" // a UDP Service
	nodePort  = 30080
	table     = "berth-proxy-itest"

	// modeEnv runs the test binary as one of the helpers below.
	modeEnv = "BERTH_PROXY_TEST_MODE"
	// targetEnv is the "get" helper's host:port; podNSEnv names the pod
	// namespace for the node side.
	targetEnv = "BERTH_PROXY_TEST_TARGET"
	podNSEnv  = "BERTH_PROXY_TEST_POD_NS"
)

// TestMain runs the helpers the test starts inside its namespaces.
func TestMain(m *testing.M) {
	switch os.Getenv(modeEnv) {
	case "serve":
		serve()
	case "node":
		os.Exit(nodeSide())
	case "proxier":
		if err := runProxier(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	case "get":
		body, err := get(os.Getenv(targetEnv))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Print(body)
		os.Exit(0)
	}
	code := m.Run()
	harness.RemoveBinary()
	os.Exit(code)
}

// serve answers every request with "hello from <addr> to <client>" on
// podAddr:8080 and :8081 (two endpoints), and every UDP datagram with
// "udp from <addr>" on podAddr:9053 and :9054.
func serve() {
	errs := make(chan error)
	for _, port := range []string{"9053", "9054"} {
		addr := net.JoinHostPort(podAddr, port)
		conn, err := net.ListenPacket("udp", addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		go func() {
			buf := make([]byte, 512)
			for {
				_, from, err := conn.ReadFrom(buf)
				if err != nil {
					errs <- err
					return
				}
				_, _ = conn.WriteTo([]byte("udp from "+addr), from)
			}
		}()
	}
	for _, port := range []string{"8080", "8081"} {
		addr := net.JoinHostPort(podAddr, port)
		go func() {
			errs <- http.ListenAndServe(addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprintf(w, "hello from %s to %s", addr, r.RemoteAddr)
			}))
		}()
	}
	fmt.Fprintln(os.Stderr, <-errs)
	os.Exit(1)
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestClusterIPInNetns(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the nftables integration test")
	}
	if os.Geteuid() != 0 {
		prereq.Missing(t, "needs root for network namespaces and nftables")
	}
	for _, bin := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(bin); err != nil {
			prereq.Missing(t, "%s not found (hack/deps.sh installs it)", bin)
		}
	}
	// As containerd's pods do: a later `ip netns add` must not strand
	// their namespaces' mounts.
	if err := containerd.EnsureNetnsMount(); err != nil {
		t.Fatal(err)
	}
	suffix := fmt.Sprint(os.Getpid())
	nodeNS, podNS := "berth-px-node-"+suffix, "berth-px-pod-"+suffix
	for _, ns := range []string{nodeNS, podNS} {
		run(t, "ip", "netns", "add", ns)
		t.Cleanup(func() { exec.Command("ip", "netns", "delete", ns).Run() })
	}
	vethNode, vethPod := "bpxn"+suffix, "bpxp"+suffix
	run(t, "ip", "link", "add", vethNode, "netns", nodeNS, "type", "veth", "peer", "name", vethPod, "netns", podNS)
	for _, c := range [][]string{
		{"-n", nodeNS, "link", "set", "lo", "up"},
		{"-n", podNS, "link", "set", "lo", "up"},
		{"-n", nodeNS, "addr", "add", nodeAddr + "/24", "dev", vethNode},
		{"-n", podNS, "addr", "add", podAddr + "/24", "dev", vethPod},
		{"-n", nodeNS, "link", "set", vethNode, "up"},
		{"-n", podNS, "link", "set", vethPod, "up"},
		// As on a node: ClusterIPs need a route to be dialled at all.
		{"-n", nodeNS, "route", "add", "default", "dev", vethNode},
		{"-n", podNS, "route", "add", "default", "via", nodeAddr},
	} {
		run(t, "ip", c...)
	}
	run(t, "ip", "netns", "exec", nodeNS, "sysctl", "-qw", "net.ipv4.ip_forward=1")

	server := exec.Command("ip", "netns", "exec", podNS, os.Args[0])
	server.Env = append(os.Environ(), modeEnv+"=serve")
	server.Stderr = os.Stderr
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Process.Kill(); server.Wait() })

	node := exec.Command("ip", "netns", "exec", nodeNS, os.Args[0])
	node.Env = append(os.Environ(), modeEnv+"=node", podNSEnv+"="+podNS)
	out, err := node.CombinedOutput()
	t.Logf("node side:\n%s", out)
	if err != nil {
		t.Fatalf("node side failed: %v", err)
	}
	if tables := run(t, "ip", "netns", "exec", nodeNS, "nft", "list", "tables"); strings.Contains(tables, table) {
		t.Errorf("table %s left after the proxier stopped:\n%s", table, tables)
	}
}

// nodeSide runs the proxier in the node namespace and checks the traffic;
// it returns the exit code.
func nodeSide() int {
	if err := checkNode(); err != nil {
		fmt.Println("FAIL:", err)
		return 1
	}
	fmt.Println("PASS")
	return 0
}

func checkNode() error {
	ctx := context.Background()
	svc := func(name, ip string, typ v1.ServiceType) *v1.Service {
		s := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: v1.ServiceSpec{
			Type: typ, ClusterIP: ip, ClusterIPs: []string{ip},
			Ports: []v1.ServicePort{{Name: "http", Protocol: v1.ProtocolTCP, Port: 80}},
		}}
		if typ == v1.ServiceTypeNodePort {
			s.Spec.Ports[0].NodePort = nodePort
		}
		return s
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: "web-1", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(v1.ProtocolTCP), Port: ptr.To[int32](8080)}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{podAddr}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
	}
	two := func(name string) *discoveryv1.EndpointSlice {
		s := slice.DeepCopy()
		s.Name, s.Labels[discoveryv1.LabelServiceName] = name+"-1", name
		return s
	}
	two2 := func(name string) *discoveryv1.EndpointSlice {
		s := two(name)
		s.Name, s.Ports[0].Port = name+"-2", ptr.To[int32](8081)
		return s
	}
	sticky := svc("sticky", stickyIP, v1.ServiceTypeClusterIP)
	sticky.Spec.SessionAffinity = v1.ServiceAffinityClientIP
	udp := svc("udp", udpIP, v1.ServiceTypeClusterIP)
	udp.Spec.Ports[0].Protocol = v1.ProtocolUDP
	udpSlice := two("udp")
	udpSlice.Ports[0].Protocol, udpSlice.Ports[0].Port = ptr.To(v1.ProtocolUDP), ptr.To[int32](9053)
	client := fake.NewClientset(svc("web", clusterIP, v1.ServiceTypeNodePort), svc("empty", emptyIP, v1.ServiceTypeClusterIP), slice,
		svc("two", twoIP, v1.ServiceTypeClusterIP), two("two"), two2("two"), sticky, two("sticky"), two2("sticky"), udp, udpSlice)
	p, err := proxy.New(proxy.Config{
		Client: client, Table: table, MinSyncInterval: 10 * time.Millisecond,
		NodeIPs: []netip.Addr{netip.MustParseAddr(nodeAddr)}, PodCIDR: netip.MustParsePrefix("10.250.0.0/24"), // the pod is inside: only hairpin masquerades it
	})
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(runCtx) }()
	defer func() {
		if runCtx.Err() == nil {
			stop()
			<-done
		}
	}()

	// Through the ClusterIP and the NodePort to the pod.
	for _, target := range []string{net.JoinHostPort(clusterIP, "80"), net.JoinHostPort(nodeAddr, fmt.Sprint(nodePort))} {
		body, err := eventually(func() (string, error) { return get(target) })
		if err != nil {
			return fmt.Errorf("GET %s: %w", target, err)
		}
		if !strings.HasPrefix(body, "hello from "+podAddr+":8080") {
			return fmt.Errorf("GET %s answered %q", target, body)
		}
		fmt.Printf("GET %s: %s\n", target, body)
	}
	// Random balancing reaches both endpoints; with sessionAffinity
	// ClientIP every request goes to the first one chosen.
	for _, tc := range []struct {
		ip   string
		want int
	}{{twoIP, 2}, {stickyIP, 1}} {
		seen := map[string]bool{}
		for range 30 {
			body, err := eventually(func() (string, error) { return get(net.JoinHostPort(tc.ip, "80")) })
			if err != nil {
				return fmt.Errorf("GET %s: %w", tc.ip, err)
			}
			seen[strings.Fields(body)[2]] = true
		}
		if len(seen) != tc.want {
			return fmt.Errorf("30 GETs of %s reached %v, want %d endpoint(s)", tc.ip, seen, tc.want)
		}
		fmt.Printf("30 GETs of %s reached %v\n", tc.ip, seen)
	}
	// Hairpin: the pod reaches itself through its Service, masqueraded to
	// the node's address (else it would answer itself directly and the
	// connection would never complete).
	hairpin := exec.Command("ip", "netns", "exec", os.Getenv(podNSEnv), os.Args[0])
	hairpin.Env = append(os.Environ(), modeEnv+"=get", targetEnv+"="+net.JoinHostPort(clusterIP, "80"))
	body, err := hairpin.CombinedOutput()
	if err != nil {
		return fmt.Errorf("hairpin GET from the pod: %v: %s", err, body)
	}
	if !strings.Contains(string(body), " to "+nodeAddr+":") {
		return fmt.Errorf("hairpin GET answered %q, want it from the node's address %s", body, nodeAddr)
	}
	fmt.Printf("hairpin GET %s from the pod: %s\n", clusterIP, body)
	// UDP: a client keeps sending from one port; when its endpoint goes,
	// the flow's conntrack entry is deleted and the next datagram reaches
	// the new endpoint (else it would go on reaching the old one).
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP(nodeAddr), Port: 40053})
	if err != nil {
		return err
	}
	defer conn.Close()
	udpGet := func() (string, error) {
		if _, err := conn.WriteTo([]byte("hi"), &net.UDPAddr{IP: net.ParseIP(udpIP), Port: 80}); err != nil {
			return "", err
		}
		buf := make([]byte, 512)
		_ = conn.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		n, _, err := conn.ReadFrom(buf)
		return string(buf[:n]), err
	}
	if body, err := eventually(udpGet); err != nil || body != "udp from "+podAddr+":9053" {
		return fmt.Errorf("UDP to the service: %q, %v", body, err)
	}
	udpSlice.Ports[0].Port = ptr.To[int32](9054)
	if _, err := client.DiscoveryV1().EndpointSlices("default").Update(ctx, udpSlice, metav1.UpdateOptions{}); err != nil {
		return err
	}
	if _, err := eventually(func() (string, error) {
		body, err := udpGet()
		if err == nil && body != "udp from "+podAddr+":9054" {
			err = fmt.Errorf("answered %q", body)
		}
		return body, err
	}); err != nil {
		return fmt.Errorf("UDP after the endpoint moved to :9054: %w", err)
	}
	fmt.Println("UDP flow moved to the new endpoint after its old one went")

	// No endpoints: refused at once, not a time-out.
	if _, err := get(net.JoinHostPort(emptyIP, "80")); !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("GET the service without endpoints: %v, want connection refused", err)
	}
	// The endpoint turns unready: the service rejects.
	slice.Endpoints[0].Conditions.Ready = ptr.To(false)
	if _, err := client.DiscoveryV1().EndpointSlices("default").Update(ctx, slice, metav1.UpdateOptions{}); err != nil {
		return err
	}
	if _, err := eventually(func() (string, error) {
		if _, err := get(net.JoinHostPort(clusterIP, "80")); !errors.Is(err, syscall.ECONNREFUSED) {
			return "", fmt.Errorf("still %v, want connection refused", err)
		}
		return "", nil
	}); err != nil {
		return fmt.Errorf("after the endpoint turned unready: %w", err)
	}
	stop()
	if err := <-done; err != nil {
		return fmt.Errorf("Run: %w", err)
	}
	out, err := exec.Command("nft", "list", "tables").CombinedOutput()
	if err != nil {
		return fmt.Errorf("nft list tables: %v: %s", err, out)
	}
	if strings.Contains(string(out), table) {
		return fmt.Errorf("table left after stop: %s", out)
	}
	return nil
}

func get(target string) (string, error) {
	c := http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + target + "/")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// eventually retries fn for up to 10 s (the first sync, the server's start).
func eventually(fn func() (string, error)) (string, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := fn()
		if err == nil || time.Now().After(deadline) {
			return s, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}
