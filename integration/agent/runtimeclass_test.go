package agent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"berth/agent/podworker"
	"berth/agent/runtimeclass"
	"berth/integration/nodeenv"
)

// A pod's RuntimeClass picks the containerd runtime handler its sandbox
// runs with; a class naming a handler containerd lacks, or a class that
// does not exist, fails the sandbox with FailedCreatePodSandBox and leaves
// the pod Pending. The RuntimeClasses come from client-go's fake clientset
// through the agent's informer; the pods run on the node's containerd,
// which has a second handler (nodeenv.TestRuntimeHandler).
func TestRuntimeClassHandler(t *testing.T) {
	n := newNode(t)
	client := fake.NewClientset(
		&nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "configured"}, Handler: nodeenv.TestRuntimeHandler},
		&nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "unconfigured"}, Handler: "no-such-handler"},
	)
	classes, err := runtimeclass.New(client)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- classes.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	events := record.NewFakeRecorder(1000)
	m, statuses := n.podWorkers(t, func(c *podworker.Config) { c.PodRuntimeHandler, c.Recorder = classes.Handler, events })

	var pods []*v1.Pod
	for _, class := range []string{"configured", "unconfigured", "missing"} {
		pod := hostNetworkPod(t, n, class, "app="+sleeper)
		pod.Spec.RuntimeClassName = &class
		m.Update(pod)
		pods = append(pods, pod)
	}
	eventually(t, time.Minute, "the pod of the configured class running", func() (bool, string) {
		st, _ := statuses.Status(pods[0].UID)
		return st.Phase == v1.PodRunning, fmt.Sprintf("%+v", st.ContainerStatuses)
	})
	sb := n.sandboxes(string(pods[0].UID))
	st, err := n.cri.PodSandboxStatus(ctx, sb[0].GetId(), false)
	if err != nil || st.GetStatus().GetRuntimeHandler() != nodeenv.TestRuntimeHandler {
		t.Errorf("sandbox runtime handler %q (%v), want %q", st.GetStatus().GetRuntimeHandler(), err, nodeenv.TestRuntimeHandler)
	}

	// The class that does not exist fails with upstream's message; the
	// handler containerd lacks, with containerd's naming it.
	want := []string{
		`Warning FailedCreatePodSandBox Failed to create pod sandbox: runtimeclass.node.k8s.io "missing" not found`,
		`Warning FailedCreatePodSandBox Failed to create pod sandbox: `,
	}
	var seen []string
	eventually(t, 30*time.Second, "FailedCreatePodSandBox for both pods", func() (bool, string) {
		for len(events.Events) > 0 {
			seen = append(seen, <-events.Events)
		}
		missing, unconfigured := false, false
		for _, e := range seen {
			missing = missing || e == want[0]
			unconfigured = unconfigured || strings.HasPrefix(e, want[1]) && strings.Contains(e, `no runtime for "no-such-handler" is configured`)
		}
		return missing && unconfigured, strings.Join(seen, "\n")
	})
	for _, pod := range pods[1:] {
		if sbs := n.sandboxes(string(pod.UID)); len(sbs) != 0 {
			t.Errorf("pod %s has %d sandboxes", pod.Name, len(sbs))
		}
		if st, _ := statuses.Status(pod.UID); st.Phase != v1.PodPending {
			t.Errorf("pod %s is %s, want Pending", pod.Name, st.Phase)
		}
	}
	for _, pod := range pods {
		m.Remove(pod.UID)
	}
	eventually(t, time.Minute, "the pods removed", func() (bool, string) {
		return len(n.sandboxes(string(pods[0].UID))) == 0 && len(n.containers(string(pods[0].UID))) == 0, ""
	})
}
