package podworker

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/agent/admission"
	"berth/agent/containerconfig"
	"berth/agent/lifecycle"
	"berth/agent/sysctl"
	"berth/cri/critest"
)

// TestForbiddenSysctlRejectsThePod: a pod setting an unsafe sysctl the node
// does not allow is Failed/SysctlForbidden, with upstream's message and a
// Warning event, and nothing of it ever runs; a safe one starts.
func TestForbiddenSysctlRejectsThePod(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	allow, err := sysctl.NewAllowlist(sysctl.Safe("6.1.0"))
	if err != nil {
		t.Fatal(err)
	}
	h, events := newEventHarness(t, srv, func(cfg *Config) {
		cfg.Admit = func(p *v1.Pod, _ []*v1.Pod) (string, string, bool) { return allow.Admit(p) }
	})
	bad := testPod("unsafe", v1.RestartPolicyNever, nil, "app")
	bad.Spec.SecurityContext = &v1.PodSecurityContext{Sysctls: []v1.Sysctl{{Name: "kernel.shm_rmid_forced", Value: "1"}, {Name: "kernel.msgmax", Value: "10000"}}}
	h.m.Update(bad)
	const msg = `forbidden sysctl: "kernel.msgmax" not allowlisted`
	waitEvent(t, events, "Warning SysctlForbidden "+msg)
	eventually(t, "pod Failed", func() (bool, string) {
		st := h.podStatus(bad.UID)
		return st.Phase == v1.PodFailed, fmt.Sprintf("%+v", st)
	})
	if st := h.podStatus(bad.UID); st.Reason != sysctl.ReasonForbidden || st.Message != "Pod was rejected: "+msg {
		t.Errorf("status reason %q message %q", st.Reason, st.Message)
	}
	h.m.Wake(bad.UID)
	time.Sleep(300 * time.Millisecond) // a resync: still nothing may run
	if sbs := h.sandboxes(bad.UID); len(sbs) != 0 {
		t.Fatalf("a rejected pod got sandboxes %v", sbs)
	}

	good := testPod("safe", v1.RestartPolicyAlways, nil, "app")
	good.Spec.SecurityContext = &v1.PodSecurityContext{Sysctls: []v1.Sysctl{{Name: "kernel/shm_rmid_forced", Value: "1"}}}
	h.m.Update(good)
	eventually(t, "the safe pod Running", func() (bool, string) {
		return h.podStatus(good.UID).Phase == v1.PodRunning, fmt.Sprintf("%+v", h.podStatus(good.UID))
	})
}

// TestActiveDeadlineFailsThePod: past activeDeadlineSeconds the running pod
// is stopped and Failed/DeadlineExceeded, with the Normal event, and its
// containers are not started again.
func TestActiveDeadlineFailsThePod(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	h, events := newEventHarness(t, srv, nil)
	pod := testPod("deadline", v1.RestartPolicyAlways, nil, "app")
	long := int64(3600)
	pod.Spec.ActiveDeadlineSeconds = &long
	h.m.Update(pod)
	eventually(t, "pod Running", func() (bool, string) {
		return h.running(pod.UID, "app") != nil && h.podStatus(pod.UID).Phase == v1.PodRunning, fmt.Sprintf("%+v", h.podStatus(pod.UID))
	})
	// Shortened below the time it has run: it takes effect at once.
	short := pod.DeepCopy()
	one := int64(1)
	short.Spec.ActiveDeadlineSeconds = &one
	time.Sleep(time.Second)
	h.m.Update(short)
	waitEvent(t, events, "Normal DeadlineExceeded "+lifecycle.MessageDeadlineExceeded)
	eventually(t, "pod Failed and stopped", func() (bool, string) {
		st := h.podStatus(pod.UID)
		return st.Phase == v1.PodFailed && h.running(pod.UID, "app") == nil, fmt.Sprintf("%+v", st)
	})
	st := h.podStatus(pod.UID)
	if st.Reason != lifecycle.ReasonDeadlineExceeded || st.Message != lifecycle.MessageDeadlineExceeded {
		t.Errorf("status reason %q message %q", st.Reason, st.Message)
	}
	creates := srv.Calls("CreateContainer")
	time.Sleep(300 * time.Millisecond)
	if n := srv.Calls("CreateContainer"); n != creates {
		t.Errorf("%d containers created after the deadline", n-creates)
	}
}

// envFunc is an Env resolver from a function.
type envFunc func(ctx context.Context, pod *v1.Pod, c *v1.Container, opts *containerconfig.Options) error

func (f envFunc) Fill(ctx context.Context, pod *v1.Pod, c *v1.Container, opts *containerconfig.Options) error {
	return f(ctx, pod, c, opts)
}

// TestEnvErrorIsCreateContainerConfigErrorAndRetried: a container whose
// environment cannot be resolved waits in CreateContainerConfigError with
// the resolver's message (and a Failed event), and starts once it can.
func TestEnvErrorIsCreateContainerConfigErrorAndRetried(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	ready := make(chan struct{})
	h, events := newEventHarness(t, srv, func(cfg *Config) {
		cfg.Env = envFunc(func(_ context.Context, pod *v1.Pod, _ *v1.Container, opts *containerconfig.Options) error {
			select {
			case <-ready:
				opts.EnvValues = map[string]string{"V": "x"}
				return nil
			default:
				return fmt.Errorf(`configmap "cm" not found`)
			}
		})
	})
	pod := testPod("env", v1.RestartPolicyAlways, nil, "app")
	pod.Spec.Containers[0].Env = []v1.EnvVar{{Name: "V", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
		LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, Key: "k"}}}}
	h.m.Update(pod)
	waitEvent(t, events, `Warning Failed Error: configmap "cm" not found`)
	eventually(t, "CreateContainerConfigError", func() (bool, string) {
		cs := containerStatus(h.podStatus(pod.UID), "app")
		w := cs.State.Waiting
		return w != nil && w.Reason == ReasonCreateContainerConfigError && w.Message == `configmap "cm" not found`, fmt.Sprintf("%+v", cs.State)
	})
	close(ready)
	eventually(t, "the container running once the configMap exists", func() (bool, string) {
		return h.running(pod.UID, "app") != nil, fmt.Sprintf("%+v", h.podStatus(pod.UID))
	})
}

// TestActiveDeadlineOfAFinishedPod: a pod that succeeded before its
// deadline stays Succeeded, with no DeadlineExceeded event.
func TestActiveDeadlineOfAFinishedPod(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	h, events := newEventHarness(t, srv, nil)
	pod := testPod("done", v1.RestartPolicyNever, nil, "app")
	one := int64(1)
	pod.Spec.ActiveDeadlineSeconds = &one
	h.m.Update(pod)
	eventually(t, "app running", func() (bool, string) { return h.running(pod.UID, "app") != nil, "" })
	c := h.running(pod.UID, "app")
	if err := srv.ExitContainer(c.GetId(), 0, "Completed"); err != nil {
		t.Fatal(err)
	}
	h.m.Wake(pod.UID)
	eventually(t, "pod Succeeded", func() (bool, string) {
		return h.podStatus(pod.UID).Phase == v1.PodSucceeded, fmt.Sprintf("%+v", h.podStatus(pod.UID))
	})
	time.Sleep(1500 * time.Millisecond) // past the deadline
	h.m.Wake(pod.UID)
	time.Sleep(300 * time.Millisecond)
	if st := h.podStatus(pod.UID); st.Phase != v1.PodSucceeded || st.Reason != "" {
		t.Errorf("status %s %q, want Succeeded", st.Phase, st.Reason)
	}
	if events.has("Normal DeadlineExceeded") {
		t.Errorf("DeadlineExceeded recorded for a pod that finished in time")
	}
}

// TestAdmissionCountsTheAdmittedPods: the node's admission sees the pods
// admitted before and not finished — a pod wanting a host port a running
// pod holds is Failed/NodePorts with upstream's message and never started
// (the StatefulSet conformance spec "Should recreate evicted statefulset"),
// of pods arriving together wanting one port exactly one runs, and once
// the holder is removed the port is free again.
func TestAdmissionCountsTheAdmittedPods(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1"}, Status: v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourcePods: resource.MustParse("110")}}}
	predicates := admission.New(func() (*v1.Node, error) { return node, nil })
	h, events := newEventHarness(t, srv, func(cfg *Config) { cfg.Admit = predicates.Admit })
	withPort := func(name string, port int32) *v1.Pod {
		p := testPod(name, v1.RestartPolicyAlways, nil, "app")
		p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: port, HostPort: port, Protocol: v1.ProtocolTCP}}
		return p
	}
	holder := withPort("holder", 21017)
	h.m.Update(holder)
	eventually(t, "the holder Running", func() (bool, string) {
		return h.podStatus(holder.UID).Phase == v1.PodRunning, fmt.Sprintf("%+v", h.podStatus(holder.UID))
	})

	conflicting := withPort("conflicting", 21017)
	h.m.Update(conflicting)
	const msg = "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"
	waitEvent(t, events, "Warning NodePorts "+msg)
	eventually(t, "the conflicting pod Failed", func() (bool, string) {
		st := h.podStatus(conflicting.UID)
		return st.Phase == v1.PodFailed && st.Reason == "NodePorts" && st.Message == "Pod was rejected: "+msg, fmt.Sprintf("%+v", st)
	})
	if sbs := h.sandboxes(conflicting.UID); len(sbs) != 0 {
		t.Fatalf("a rejected pod got sandboxes %v", sbs)
	}

	racers := []*v1.Pod{withPort("racer-a", 9000), withPort("racer-b", 9000), withPort("racer-c", 9000)}
	for _, p := range racers {
		h.m.Update(p)
	}
	eventually(t, "one racer Running, the others Failed", func() (bool, string) {
		phases := map[v1.PodPhase]int{}
		for _, p := range racers {
			phases[h.podStatus(p.UID).Phase]++
		}
		return phases[v1.PodRunning] == 1 && phases[v1.PodFailed] == 2, fmt.Sprint(phases)
	})

	h.m.Remove(holder.UID)
	eventually(t, "the holder gone", func() (bool, string) { return !h.m.Known(holder.UID), "" })
	successor := withPort("successor", 21017)
	h.m.Update(successor)
	eventually(t, "the successor Running on the freed port", func() (bool, string) {
		return h.podStatus(successor.UID).Phase == v1.PodRunning, fmt.Sprintf("%+v", h.podStatus(successor.UID))
	})
}
