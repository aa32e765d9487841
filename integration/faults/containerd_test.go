package faults

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/integration/harness"
)

// containerdKilledPods is how many pods run while containerd is SIGKILLed.
const containerdKilledPods = 10

// containerd SIGKILLed under running pods: the node turns NotReady
// ("container runtime is down"); containerd started again, it turns Ready,
// and the pods, whose shims never stopped, keep their containers: none is
// recreated or restarted.
func TestContainerdKilledAndRestarted(t *testing.T) {
	c := harness.StartCluster(t, harness.ClusterOptions{})
	ns := newNamespace(t, c)
	defer deletePods(t, c, ns)
	createPods(t, c, ns, "p", containerdKilledPods, v1.RestartPolicyAlways, sleeper)
	before := views(waitPods(t, c, ns, containerdKilledPods, "every pod running", running))
	rt := runtime(t, c.Env)
	containersBefore := runningContainers(t, rt, ns)

	if err := c.Env.KillContainerd(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	harness.WaitFor(t, time.Minute, "the node NotReady with the runtime down", func() (bool, string) {
		st, msg := nodeReady(t, c)
		return st == v1.ConditionFalse && strings.Contains(msg, "container runtime is down"), string(st) + ": " + msg
	})
	t.Logf("containerd SIGKILLed: node NotReady after %s", time.Since(killed).Round(time.Millisecond))

	if err := c.Env.RestartContainerd(context.Background()); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	harness.WaitFor(t, time.Minute, "the node Ready again", func() (bool, string) {
		st, msg := nodeReady(t, c)
		return st == v1.ConditionTrue, string(st) + ": " + msg
	})
	t.Logf("containerd restarted: node Ready %s after containerd answered again", time.Since(back).Round(time.Millisecond))

	after := runningContainers(t, rt, ns)
	if !slices.Equal(after, containersBefore) {
		t.Errorf("running containers changed across containerd's restart:\nbefore %v\nafter  %v", containersBefore, after)
	}
	list, err := c.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	compareViews(t, before, views(list.Items))
	m := agentMetrics(t, c.Config, c.KubeletPort, nil)
	if got := m["kubelet_started_containers_total"]; got != containerdKilledPods {
		t.Errorf("the agent started %v containers in all, want %d (none again after containerd's restart)", got, containerdKilledPods)
	}
}
