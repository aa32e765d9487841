package podworker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"berth/agent/backoff"
	"berth/agent/dns"
	"berth/cri/critest"
)

// newEventHarness is a harness whose manager records events on client-go's
// fake recorder; configure, if set, adjusts the Config further.
func newEventHarness(t *testing.T, srv *critest.Server, configure func(*Config)) (*harness, *eventLog) {
	t.Helper()
	events := &eventLog{rec: record.NewFakeRecorder(10000)}
	h := newConfiguredHarness(t, srv, func(cfg *Config) {
		cfg.Recorder = events.rec
		if configure != nil {
			configure(cfg)
		}
	})
	return h, events
}

// waitEvent waits for an event "<type> <reason> <message>" starting with want.
func waitEvent(t *testing.T, events *eventLog, want string) {
	t.Helper()
	eventually(t, fmt.Sprintf("event %q", want), func() (bool, string) {
		return events.has(want), strings.Join(events.list(), "\n")
	})
}

func TestEventsOfAStartedPod(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	h, events := newEventHarness(t, srv, nil)
	pod := testPod("web", v1.RestartPolicyAlways, nil, "app")
	h.m.Update(pod)
	waitEvent(t, events, "Normal Started Started container app")
	for _, want := range []string{
		`Normal Pulling Pulling image "busybox"`,
		`Normal Pulled Successfully pulled image "busybox" in `,
		"Normal Created Created container: app",
	} {
		if !events.has(want) {
			t.Errorf("no event %q in\n%s", want, strings.Join(events.list(), "\n"))
		}
	}
	// The harness's node has no cluster DNS: a ClusterFirst pod falls back
	// to the host's resolver, with a warning on the pod.
	if !events.has("Warning " + dns.ReasonMissingClusterDNS + " ") {
		t.Errorf("no MissingClusterDNS event in\n%s", strings.Join(events.list(), "\n"))
	}
	if events.has("Normal " + ReasonSandboxChanged) {
		t.Errorf("SandboxChanged recorded for a pod's first sandbox:\n%s", strings.Join(events.list(), "\n"))
	}
}

func TestBackOffEventWhileCrashLooping(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	// A back-off long enough for a sync to land inside it.
	h, events := newEventHarness(t, srv, func(cfg *Config) {
		cfg.BackOff = backoff.New(backoff.Policy{Initial: 5 * time.Second, Max: 5 * time.Second, ResetAfter: time.Minute})
	})
	pod := testPod("crash", v1.RestartPolicyAlways, nil, "app")
	h.m.Update(pod)
	// The first restart is immediate; the second exit starts the back-off.
	for attempt := uint32(0); attempt < 2; attempt++ {
		var id string
		eventually(t, fmt.Sprintf("instance %d running", attempt), func() (bool, string) {
			c := h.running(pod.UID, "app")
			if c == nil || c.GetMetadata().GetAttempt() != attempt {
				return false, fmt.Sprintf("%v", c)
			}
			id = c.GetId()
			return true, ""
		})
		if err := srv.ExitContainer(id, 1, ""); err != nil {
			t.Fatal(err)
		}
	}
	waitEvent(t, events, "Warning BackOff Back-off restarting failed container app in pod crash_default(uid-crash)")
}

func TestImageEventsOfAFailingPull(t *testing.T) {
	srv := critest.NewServer(t)
	h, events := newEventHarness(t, srv, nil)
	pod := testPod("img", v1.RestartPolicyAlways, nil, "app")
	pod.Spec.Containers[0].Image = "example.invalid/nope:1"
	h.m.Update(pod)
	for _, want := range []string{
		`Normal Pulling Pulling image "example.invalid/nope:1"`,
		`Warning Failed Failed to pull image "example.invalid/nope:1": rpc error: code = `,
		"Warning Failed Error: ErrImagePull",
		`Normal BackOff Back-off pulling image "example.invalid/nope:1"`,
		"Warning Failed Error: ImagePullBackOff",
	} {
		waitEvent(t, events, want)
	}
}

func TestFailedCreatePodSandBoxEvent(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	srv.InjectN("RunPodSandbox", status.Error(codes.Unknown, "failed to setup network for sandbox: no IP left"), 1)
	h, events := newEventHarness(t, srv, nil)
	pod := testPod("sb", v1.RestartPolicyAlways, nil, "app")
	h.m.Update(pod)
	waitEvent(t, events, "Warning FailedCreatePodSandBox Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox: no IP left")
	eventually(t, "running after the retry", func() (bool, string) { return h.running(pod.UID, "app") != nil, "" })
}

func TestSandboxChangedEventWhenTheSandboxDies(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	h, events := newEventHarness(t, srv, nil)
	pod := testPod("dies", v1.RestartPolicyAlways, nil, "app")
	h.m.Update(pod)
	eventually(t, "running", func() (bool, string) { return h.running(pod.UID, "app") != nil, "" })
	sbs := h.sandboxes(pod.UID)
	if len(sbs) != 1 {
		t.Fatalf("sandboxes %v, want one", sbs)
	}
	if err := h.cri.StopPodSandbox(context.Background(), sbs[0].GetId()); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, events, "Normal SandboxChanged Pod sandbox changed, it will be killed and re-created.")
	eventually(t, "running in a new sandbox", func() (bool, string) {
		c := h.running(pod.UID, "app")
		return c != nil && c.GetPodSandboxId() != sbs[0].GetId(), fmt.Sprintf("%v", c)
	})
}

func TestFailedEventsOfContainerCreateAndStart(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	srv.InjectN("CreateContainer", status.Error(codes.Unknown, "no space left on device"), 1)
	srv.InjectN("StartContainer", status.Error(codes.Unknown, "exec: \"/app\": permission denied"), 1)
	h, events := newEventHarness(t, srv, nil)
	pod := testPod("cc", v1.RestartPolicyAlways, nil, "app")
	h.m.Update(pod)
	waitEvent(t, events, "Warning Failed Error: no space left on device")
	waitEvent(t, events, `Warning Failed Error: exec: "/app": permission denied`)
}

func TestFailedEventOfAContainerConfigError(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	h, events := newEventHarness(t, srv, nil)
	pod := testPod("cfg", v1.RestartPolicyAlways, nil, "app")
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "missing", MountPath: "/data"}}
	h.m.Update(pod)
	waitEvent(t, events, "Warning Failed Error: ")
	eventually(t, "waiting "+ReasonCreateContainerConfigError, func() (bool, string) {
		st := containerStatus(h.podStatus(pod.UID), "app")
		return st.State.Waiting != nil && st.State.Waiting.Reason == ReasonCreateContainerConfigError, fmt.Sprintf("%+v", st.State)
	})
}

func TestNetworkNotReadyEvent(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	h, events := newEventHarness(t, srv, func(cfg *Config) {
		cfg.NetworkReady = func() error { return errors.New("cni config uninitialized") }
	})
	h.m.Update(testPod("net", v1.RestartPolicyAlways, nil, "app"))
	waitEvent(t, events, "Warning NetworkNotReady network is not ready: cni config uninitialized")
}

func TestDNSConfigFormingEvent(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	h, events := newEventHarness(t, srv, nil)
	pod := testPod("dns", v1.RestartPolicyAlways, nil, "app")
	pod.Spec.DNSPolicy = v1.DNSNone
	pod.Spec.DNSConfig = &v1.PodDNSConfig{Nameservers: []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"}}
	h.m.Update(pod)
	waitEvent(t, events, "Warning DNSConfigForming Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 10.0.0.1 10.0.0.2 10.0.0.3")
}

// A container whose definition changed is killed with upstream's Killing
// message and started again from the new spec.
func TestKillingEventOfAChangedDefinition(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	srv.AddImage("busybox:2")
	h, events := newEventHarness(t, srv, nil)
	pod := testPod("changed", v1.RestartPolicyAlways, nil, "app")
	h.m.Update(pod)
	var first string
	eventually(t, "running", func() (bool, string) {
		c := h.running(pod.UID, "app")
		if c == nil {
			return false, ""
		}
		first = c.GetId()
		return true, ""
	})
	changed := pod.DeepCopy()
	changed.Spec.Containers[0].Image = "busybox:2"
	h.m.Update(changed)
	waitEvent(t, events, "Normal Killing Container app definition changed, will be restarted")
	eventually(t, "the new definition running", func() (bool, string) {
		c := h.running(pod.UID, "app")
		return c != nil && c.GetId() != first && c.GetImage().GetUserSpecifiedImage() == "busybox:2", fmt.Sprintf("%v", c)
	})
	if events.has("Normal Killing Stopping container app") {
		t.Errorf("the kill was recorded with the default message too:\n%s", strings.Join(events.list(), "\n"))
	}
}
