package multinode

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"berth/integration/testbed"
)

// fetchScript fetches url until it answers with want (up to 60 tries) and
// exits 0, else 1: the pod's phase is the verdict.
func fetchScript(url, want string) string {
	return fmt.Sprintf(`for i in $(seq 60); do out=$(timeout 3 wget -q -O- %s) && [ "$out" = %q ] && echo "got $out" && exit 0; sleep 1; done; echo "last: $out"; exit 1`, url, want)
}

// TestCrossNodeKeepsSourceAddress checks that pod-to-pod traffic between
// nodes is not masqueraded: a pod on the first node answers each
// connection with its socket table (netstat), in which the client on the
// second node must find its own pod IP as the peer.
func TestCrossNodeKeepsSourceAddress(t *testing.T) {
	bed := testbed.Current(t)
	c := bed.Client
	ctx := context.Background()
	ns := namespace(t, c)
	if _, err := c.CoreV1().Pods(ns).Create(ctx, busyboxPod(bed, "sockets", bed.Nodes[0].Name, `exec nc -ll -p 9000 -e netstat -tn`, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	server := waitPod(t, c, ns, "sockets", 2*time.Minute, "running", running)
	script := fmt.Sprintf(`me=$(hostname -i); for i in $(seq 60); do out=$(timeout 3 nc %s 9000 </dev/null); echo "$out" | grep -qE "[ :]$me:" && echo "seen as $me" && exit 0; sleep 1; done; echo "I am $me; the server saw: $out"; exit 1`, server.Status.PodIP)
	if _, err := c.CoreV1().Pods(ns).Create(ctx, busyboxPod(bed, "client", bed.Nodes[1].Name, script, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := waitPod(t, c, ns, "client", 2*time.Minute, "finished", finished)
	if p.Status.Phase != v1.PodSucceeded {
		logs, _ := c.CoreV1().Pods(ns).GetLogs("client", &v1.PodLogOptions{}).DoRaw(ctx)
		t.Errorf("the server on %s did not see the client's pod IP %s: %s; log: %s", bed.Nodes[0].Name, p.Status.PodIP, describe(p), logs)
	}
}

// TestCrossNodePodNetwork runs a web server pod on the first node, reached
// through the apiserver's pod proxy, and clients on the others: each reaches the server by its pod IP (routed
// host-gw through the underlay), through a ClusterIP Service whose only
// endpoint is on the other node, and through that Service's name, resolved
// by the cluster DNS (every agent's --cluster-dns).
func TestCrossNodePodNetwork(t *testing.T) {
	bed := testbed.Current(t)
	c := bed.Client
	ctx := context.Background()
	ns := namespace(t, c)
	server := busyboxPod(bed, "web", bed.Nodes[0].Name,
		`mkdir -p /www && echo hello-from-node-1 > /www/index.html && exec httpd -f -p 8080 -h /www`, map[string]string{"app": "web"})
	server.Spec.Containers[0].ReadinessProbe = &v1.Probe{PeriodSeconds: 1,
		ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(8080)}}}
	if _, err := c.CoreV1().Pods(ns).Create(ctx, server, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc, err := c.CoreV1().Services(ns).Create(ctx, &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: v1.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []v1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: v1.ProtocolTCP}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	web := waitPod(t, c, ns, "web", 2*time.Minute, "ready", ready)
	// The servers (on the underlay, beside the nodes) reach it too: the
	// apiserver's pod proxy.
	if out, err := c.CoreV1().Pods(ns).ProxyGet("http", "web", "8080", "/", nil).DoRaw(ctx); err != nil || strings.TrimSpace(string(out)) != "hello-from-node-1" {
		t.Errorf("GET pods/web:8080/proxy/ = %q, %v; want hello-from-node-1", out, err)
	}

	ways := []string{"ip", "service", "dns"}
	for _, n := range bed.Nodes[1:] {
		for what, url := range map[string]string{
			"ip":      fmt.Sprintf("http://%s:8080/", web.Status.PodIP),
			"service": fmt.Sprintf("http://%s/", svc.Spec.ClusterIP),
			"dns":     fmt.Sprintf("http://web.%s.svc.cluster.local/", ns),
		} {
			name := fmt.Sprintf("by-%s-from-%s", what, n.Name)
			if _, err := c.CoreV1().Pods(ns).Create(ctx, busyboxPod(bed, name, n.Name, fetchScript(url, "hello-from-node-1"), nil), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, n := range bed.Nodes[1:] {
		for _, what := range ways {
			name := fmt.Sprintf("by-%s-from-%s", what, n.Name)
			p := waitPod(t, c, ns, name, 2*time.Minute, "finished", finished)
			if p.Status.Phase != v1.PodSucceeded {
				logs, _ := c.CoreV1().Pods(ns).GetLogs(name, &v1.PodLogOptions{}).DoRaw(ctx)
				t.Errorf("pod %s on %s could not reach the web pod on %s (%s): %s; log: %s", name, n.Name, bed.Nodes[0].Name, what, describe(p), logs)
			}
		}
	}
}
