package podworker

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"berth/agent/metrics"
	"berth/cri"
	"berth/cri/critest"
	"berth/probes"
)

// listCalls counts the runtime's list calls.
func listCalls(srv *critest.Server) int {
	return srv.Calls("ListPodSandbox") + srv.Calls("ListContainers")
}

// A running pod's resyncs read the runtime cache: with the PLEG not due to
// relist, they list nothing.
func TestSteadyStateSyncsDoNotListTheRuntime(t *testing.T) {
	srv := critest.NewServer(t, critest.WithoutContainerEvents())
	srv.AddImage("busybox")
	reg := prometheus.NewRegistry()
	met, err := metrics.New(reg, "node1")
	if err != nil {
		t.Fatal(err)
	}
	h := newRelistHarness(t, srv, time.Hour, func(c *Config) { c.Metrics = met })
	pod := testPod("steady", v1.RestartPolicyAlways, nil, "app")
	h.m.Update(pod)
	eventually(t, "pod Running", func() (bool, string) {
		st := h.podStatus(pod.UID)
		return st.Phase == v1.PodRunning, string(st.Phase)
	})
	lists, syncs := listCalls(srv), syncCount(t, reg)
	eventually(t, "three resyncs", func() (bool, string) {
		n := syncCount(t, reg)
		return n >= syncs+3, fmt.Sprint(n - syncs)
	})
	if got := listCalls(srv); got != lists {
		t.Errorf("resyncs of a running pod made %d list calls, want none", got-lists)
	}
}

// A readiness probe's result reaches the pod's status without the worker
// listing the runtime.
func TestReadinessFlipUpdatesStatusWithoutListing(t *testing.T) {
	srv := critest.NewServer(t, critest.WithoutContainerEvents())
	srv.AddImage("busybox")
	exec := newScriptedExec(srv)
	var exit atomic.Int32
	exec.set("ready", func(context.Context, string) int32 { return exit.Load() })
	ph := &probeHarness{clock: clocktesting.NewFakeClock(time.Now()), events: &eventLog{rec: record.NewFakeRecorder(1000)}}
	ph.harness = newRelistHarness(t, srv, time.Hour, func(cfg *Config) {
		prober, err := probes.New(probes.Config{Exec: cfg.CRI.(*cri.Client), Clock: ph.clock, Recorder: ph.events.rec, Jitter: func() float64 { return 0 }})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Probes = prober
	})
	pod := testPod("flip", v1.RestartPolicyAlways, nil, "app")
	pod.Spec.Containers[0].ReadinessProbe = execProbe("ready")
	ph.m.Update(pod)
	ph.until(t, "Ready", func() (bool, string) {
		st := ph.podStatus(pod.UID)
		return condStatus(st, v1.PodReady) == v1.ConditionTrue, fmt.Sprint(st.Conditions)
	})
	lists := listCalls(srv)
	exit.Store(1)
	ph.until(t, "not Ready after the probe fails", func() (bool, string) {
		st := ph.podStatus(pod.UID)
		return condStatus(st, v1.PodReady) == v1.ConditionFalse, fmt.Sprint(st.Conditions)
	})
	if got := listCalls(srv); got != lists {
		t.Errorf("the readiness flip made %d list calls, want none", got-lists)
	}
	if cs := containerStatus(ph.podStatus(pod.UID), "app"); cs.State.Running == nil || cs.Ready {
		t.Errorf("app = %+v, want running and not ready", cs)
	}
}
