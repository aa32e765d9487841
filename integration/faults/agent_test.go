package faults

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/integration/harness"
)

// agentKilledPods is how many pods run while the agent is SIGKILLed.
const agentKilledPods = 100

// An agent SIGKILLed under 100 running pods and started again on its root
// dir adopts them: no container is stopped, restarted or created again,
// and every pod's status (container ID, start time, restarts, readiness)
// is what it was.
func TestAgentKilledKeepsItsPods(t *testing.T) {
	c := harness.StartCluster(t, harness.ClusterOptions{})
	ns := newNamespace(t, c)
	defer deletePods(t, c, ns)
	createPods(t, c, ns, "p", agentKilledPods, v1.RestartPolicyAlways, sleeper)
	pods := waitPods(t, c, ns, agentKilledPods, "every pod running", running)
	before := views(pods)
	rt := runtime(t, c.Env)
	containersBefore := runningContainers(t, rt, ns)
	if len(containersBefore) != agentKilledPods {
		t.Fatalf("%d running containers in %s, want %d", len(containersBefore), ns, agentKilledPods)
	}

	killed := time.Now()
	c.RestartAgent(t, true)
	// A pod created after the restart runs once the new agent has listed
	// every pod; its syncs of the old ones are counted by its pod workers.
	createPods(t, c, ns, "after", 1, v1.RestartPolicyAlways, sleeper)
	waitPods(t, c, ns, agentKilledPods+1, "every pod running after the restart", running)
	harness.WaitFor(t, podTimeout, "the restarted agent to sync every pod", func() (bool, string) {
		m := agentMetrics(t, c.Config, c.KubeletPort, nil)
		synced := m["kubelet_pod_worker_duration_seconds"]
		return synced >= agentKilledPods+1, "pod worker syncs so far: " + ftoa(synced)
	})
	t.Logf("agent SIGKILLed with %d pods: every pod synced again %s after the kill", agentKilledPods, time.Since(killed).Round(time.Millisecond))

	m := agentMetrics(t, c.Config, c.KubeletPort, nil)
	if got := m["kubelet_started_pods_total"]; got != 1 {
		t.Errorf("the restarted agent ran %v pod sandboxes, want 1 (the pod created after it)", got)
	}
	if got := m["kubelet_started_containers_total"]; got != 1 {
		t.Errorf("the restarted agent started %v containers, want 1 (the pod created after it)", got)
	}
	list, err := c.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	compareViews(t, before, views(list.Items))
	after := runningContainers(t, rt, ns)
	for _, id := range containersBefore {
		if !slices.Contains(after, id) {
			t.Errorf("container %s no longer running after the agent's restart", id)
		}
	}
	if len(after) != agentKilledPods+1 {
		t.Errorf("%d running containers after the restart, want %d", len(after), agentKilledPods+1)
	}
}
