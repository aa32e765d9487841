package agent_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"berth/agent/backoff"
	"berth/agent/containerconfig"
	"berth/agent/images"
	"berth/agent/pleg"
	"berth/agent/podruntime"
	"berth/agent/podworker"
	"berth/agent/qos"
	"berth/agent/sandboxconfig"
	"berth/agent/status"
	"berth/internal/api/defaults"
	"berth/internal/api/scheme"
)

// podWorkers runs a pod worker manager in the test process against the
// node's containerd, as the agent wires it (configure adjusts the Config);
// it stops when the test ends, leaving the pods to the node's cleanup.
func (n *node) podWorkers(t *testing.T, configure func(*podworker.Config)) (*podworker.Manager, *status.Manager) {
	t.Helper()
	puller, err := images.NewPuller(images.Config{Images: n.cri})
	if err != nil {
		t.Fatal(err)
	}
	statuses := status.NewManager()
	cache := podruntime.NewCache(podruntime.New(n.cri))
	cfg := podworker.Config{
		CRI: n.cri, Cache: cache, Status: statuses, BackOff: backoff.New(backoff.Policy{Initial: time.Second, Max: time.Second, ResetAfter: time.Minute}),
		Images:           puller,
		SandboxOptions:   sandboxconfig.Options{PodLogDir: n.logs, CgroupRoot: n.cgroupRoot},
		ContainerOptions: containerconfig.Options{NodeName: "n1", MemoryCapacity: 1 << 30},
		RootDir:          n.root, HostIP: "127.0.0.1", QOSClass: qos.Class, Resync: time.Second,
	}
	if configure != nil {
		configure(&cfg)
	}
	m, err := podworker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The PLEG fills the cache the workers read, as the agent wires it.
	detector, err := pleg.New(pleg.Config{Cache: cache, CRI: n.cri, Changed: m.Observed})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { done <- m.Run(ctx) }()
	go func() { done <- detector.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; <-done })
	return m, statuses
}

// hostNetworkPod decodes a host-network pod of busybox containers
// (podManifest's "name=command") with a fresh UID.
func hostNetworkPod(t *testing.T, n *node, name string, containers ...string) *v1.Pod {
	t.Helper()
	pod, err := scheme.DecodePod([]byte(podManifest(n.env, name, "  hostNetwork: true\n", containers...)))
	if err != nil {
		t.Fatal(err)
	}
	pod.Namespace, pod.UID = "default", types.UID(fmt.Sprintf("%s-%d", name, time.Now().UnixNano()))
	defaults.Pod(pod)
	return pod
}
