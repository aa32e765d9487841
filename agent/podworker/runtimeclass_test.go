package podworker

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"berth/cri/critest"
)

// The pod's RuntimeClass handler goes to RunPodSandbox; a pod naming a
// class that does not exist gets no sandbox, upstream's
// FailedCreatePodSandBox event, and stays Pending until the class exists.
func TestRuntimeClassHandler(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	classes := map[string]string{"fast": "runc"}
	var created atomic.Bool
	lookup := func(pod *v1.Pod) (string, error) {
		name := pod.Spec.RuntimeClassName
		if name == nil {
			return "", nil
		}
		if h, ok := classes[*name]; ok || (*name == "late" && created.Load()) {
			return h, nil
		}
		return "", fmt.Errorf("runtimeclass.node.k8s.io %q not found", *name)
	}
	h, events := newEventHarness(t, srv, func(c *Config) { c.PodRuntimeHandler = lookup })
	fast, late := "fast", "late"
	withClass := testPod("classy", v1.RestartPolicyAlways, nil, "app")
	withClass.Spec.RuntimeClassName = &fast
	missing := testPod("missing", v1.RestartPolicyAlways, nil, "app")
	missing.Spec.RuntimeClassName = &late
	h.m.Update(withClass)
	h.m.Update(missing)
	eventually(t, "the classy pod running", func() (bool, string) { return h.running(withClass.UID, "app") != nil, "" })
	st, err := h.cri.PodSandboxStatus(context.Background(), h.sandboxes(withClass.UID)[0].GetId(), false)
	if err != nil || st.GetStatus().GetRuntimeHandler() != "runc" {
		t.Errorf("sandbox runtime handler %q (%v), want the class's runc", st.GetStatus().GetRuntimeHandler(), err)
	}
	waitEvent(t, events, `Warning FailedCreatePodSandBox Failed to create pod sandbox: runtimeclass.node.k8s.io "late" not found`)
	time.Sleep(200 * time.Millisecond)
	if n := len(h.sandboxes(missing.UID)); n != 0 {
		t.Errorf("%d sandboxes for a pod whose RuntimeClass does not exist", n)
	}
	if st := h.podStatus(missing.UID); st.Phase != v1.PodPending {
		t.Errorf("phase %s, want Pending", st.Phase)
	}
	created.Store(true) // the class appears: the next sync's retry finds it
	eventually(t, "the pod running once its class exists", func() (bool, string) { return h.running(missing.UID, "app") != nil, "" })
}
