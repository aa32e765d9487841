package scheduler

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	fw "berth/controlplane/scheduler/framework"
	st "berth/controlplane/scheduler/schedtest"
)

func snapshotOf(c *Cache) *fw.Snapshot {
	s := fw.NewSnapshot(nil)
	c.UpdateSnapshot(s)
	return s
}

func TestCacheAssumeForgetConfirm(t *testing.T) {
	c := NewCache()
	c.AddNode(st.Node("n1"))
	snap := fw.NewSnapshot(nil)
	c.UpdateSnapshot(snap)

	pod := st.Pod("p", st.Req("cpu", "1"))
	assumed := pod.DeepCopy()
	assumed.Spec.NodeName = "n1"
	if err := c.AssumePod(assumed); err != nil {
		t.Fatal(err)
	}
	if !c.IsAssumed(pod) {
		t.Fatal("IsAssumed = false after AssumePod")
	}
	if err := c.AssumePod(assumed); err == nil {
		t.Error("assuming the same pod twice succeeded")
	}
	c.UpdateSnapshot(snap)
	if got := snap.Get("n1").Requested.MilliCPU; got != 1000 {
		t.Fatalf("requested after assume = %dm, want 1000m", got)
	}
	c.ForgetPod(assumed)
	c.UpdateSnapshot(snap)
	if got := len(snap.Get("n1").Pods); got != 0 {
		t.Fatalf("pods after forget = %d, want 0", got)
	}

	// Assume then the informer confirms: counted once, no longer assumed.
	if err := c.AssumePod(assumed); err != nil {
		t.Fatal(err)
	}
	c.AddPod(assumed)
	c.UpdateSnapshot(snap)
	if c.IsAssumed(pod) || len(snap.Get("n1").Pods) != 1 || snap.Get("n1").Requested.MilliCPU != 1000 {
		t.Fatalf("after confirm: assumed=%v pods=%d cpu=%d", c.IsAssumed(pod), len(snap.Get("n1").Pods), snap.Get("n1").Requested.MilliCPU)
	}
	c.ForgetPod(assumed) // a confirmed pod is not forgotten
	c.RemovePod(assumed)
	c.UpdateSnapshot(snap)
	if len(snap.Get("n1").Pods) != 0 {
		t.Fatal("RemovePod left the pod on the node")
	}
}

func TestCacheAssumeNeedsNode(t *testing.T) {
	if err := NewCache().AssumePod(st.Pod("p")); err == nil {
		t.Fatal("assuming a pod without spec.nodeName succeeded")
	}
}

func TestCachePodBeforeNode(t *testing.T) {
	c := NewCache()
	c.AddPod(st.Pod("p", st.OnNode("late"), st.Req("cpu", "1")))
	if s := snapshotOf(c); len(s.Nodes) != 0 {
		t.Fatalf("snapshot has %d nodes before any Node object, want 0", len(s.Nodes))
	}
	c.AddNode(st.Node("late"))
	s := snapshotOf(c)
	if n := s.Get("late"); n == nil || n.Requested.MilliCPU != 1000 {
		t.Fatalf("node added after its pod: %+v", n)
	}
	c.RemoveNode("late")
	c.UpdateSnapshot(s)
	if len(s.Nodes) != 0 {
		t.Fatal("removed node still in the snapshot")
	}
}

func TestSnapshotUpdatesOnlyChangedNodes(t *testing.T) {
	c := NewCache()
	for _, n := range []string{"a", "b", "c"} {
		c.AddNode(st.Node(n, st.Labels("zone", n)))
	}
	snap := snapshotOf(c)
	before := map[string]*fw.NodeInfo{"a": snap.Get("a"), "b": snap.Get("b"), "c": snap.Get("c")}
	c.AddPod(st.Pod("p", st.OnNode("b"), st.WithAffinity(&v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{TopologyKey: "zone"}},
	}})))
	c.UpdateSnapshot(snap)
	if snap.Get("a") != before["a"] || snap.Get("c") != before["c"] {
		t.Error("unchanged nodes were re-cloned")
	}
	if snap.Get("b") == before["b"] || len(snap.Get("b").Pods) != 1 || len(before["b"].Pods) != 0 {
		t.Error("changed node not replaced by a fresh clone (or the old clone was mutated)")
	}
	if len(snap.HavePodsWithRequiredAntiAffinity) != 1 || snap.HavePodsWithRequiredAntiAffinity[0].Name() != "b" {
		t.Errorf("HavePodsWithRequiredAntiAffinity = %d nodes, want [b]", len(snap.HavePodsWithRequiredAntiAffinity))
	}
	// A node update (new labels) is seen.
	c.AddNode(st.Node("a", st.Labels("zone", "z")))
	c.UpdateSnapshot(snap)
	if snap.Get("a").Node.Labels["zone"] != "z" || len(snap.Nodes) != 3 {
		t.Error("node update not in the snapshot")
	}
}
