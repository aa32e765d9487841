package multinode

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"berth/integration/testbed"
)

// TestServerFailover kills the server replica the agents use (SIGKILL, as
// a crash; the last node was told of that server only and knows the other
// from the kubernetes EndpointSlice) and watches, through the other replica, that every agent keeps
// renewing its Lease and its pods' status keeps flowing, with no Node ever
// NotReady. It prints how long each agent took to switch servers and to
// renew its Lease after the kill, then restarts the killed replica.
func TestServerFailover(t *testing.T) {
	bed := testbed.Current(t)
	victim, survivor := bed.Servers[0], bed.Servers[1]
	cfg := rest.CopyConfig(bed.Config)
	cfg.Host = survivor.URL
	obs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := namespace(t, obs)

	// Every Ready transition away from True, from now on.
	nodes, err := obs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := obs.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{ResourceVersion: nodes.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var mu sync.Mutex
	var notReady []string
	go func() {
		for e := range w.ResultChan() {
			if n, ok := e.Object.(*v1.Node); ok && !testbed.IsReady(n) {
				mu.Lock()
				notReady = append(notReady, fmt.Sprintf("%s at %s (%s)", n.Name, time.Now().Format(time.RFC3339Nano), e.Type))
				mu.Unlock()
			}
		}
	}()

	killed := time.Now()
	victim.Kill()
	t.Logf("killed server %s", victim.URL)
	t.Cleanup(func() {
		if err := bed.StartServer(context.Background(), victim); err != nil {
			t.Errorf("restarting server %s: %v", victim.URL, err)
		}
	})

	// Each agent renews its Lease through the survivor.
	renewed := map[string]time.Duration{}
	for _, n := range bed.Nodes {
		deadline := time.Now().Add(90 * time.Second)
		for {
			l, err := obs.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(ctx, n.Name, metav1.GetOptions{})
			if err == nil && l.Spec.RenewTime != nil && l.Spec.RenewTime.After(killed) {
				renewed[n.Name] = l.Spec.RenewTime.Sub(killed)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %s did not renew its Lease within 90s of the kill (last: %v, %v)", n.Name, l, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	// Each agent still runs new pods and reports their status.
	for _, n := range bed.Nodes {
		if _, err := obs.CoreV1().Pods(ns).Create(ctx, busyboxPod(bed, "after-"+n.Name, n.Name, "exec sleep 3600", nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range bed.Nodes {
		waitPod(t, obs, ns, "after-"+n.Name, 90*time.Second, "running", running)
	}

	t.Logf("failover after killing %s (agents switched to %s):", victim.URL, survivor.URL)
	t.Logf("%-8s %-22s %-22s", "node", "switched servers after", "Lease renewed after")
	for _, n := range bed.Nodes {
		switched := switchedAfter(t, n.Agent.LogPath, killed)
		t.Logf("%-8s %-22s %-22s", n.Name, switched, renewed[n.Name].Round(time.Millisecond))
		if switched == "none" {
			t.Errorf("the agent of %s logged no switch to %s", n.Name, survivor.URL)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("NotReady transitions: %d", len(notReady))
	if len(notReady) > 0 {
		t.Errorf("nodes went NotReady while a server was healthy: %v", notReady)
	}
}

// switchedAfter reads the agent's log for its first "apiserver failover"
// line after killed and returns how long after killed it came ("none"
// when the agent never switched: it was on the survivor already).
func switchedAfter(t *testing.T, logPath string, killed time.Time) string {
	f, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, "apiserver failover") {
			continue
		}
		ts, _, _ := strings.Cut(strings.TrimPrefix(line, "time="), " ")
		at, err := time.Parse(time.RFC3339Nano, ts)
		if err == nil && at.After(killed) {
			return at.Sub(killed).Round(time.Millisecond).String()
		}
	}
	return "none"
}
