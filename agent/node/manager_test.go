package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"berth/cri"
	"berth/cri/critest"
	"berth/internal/errdefs"
	"berth/internal/syncbuf"
	"berth/internal/testrun"
	"berth/internal/version"
)

// fixedMachine is a deterministic machine observation.
var fixedMachine = Machine{NumCPU: 4, MemoryTotal: 8 * gi, MemoryAvailable: 6 * gi, FsCapacity: 100 * gi, FsAvailable: 60 * gi,
	FsInodes: 1 << 20, FsInodesFree: 1 << 19, PIDMax: 4 << 20, Processes: 300}

// fakeRuntime is a CRI client on critest posing as containerd 1.6.20 with
// two images.
func fakeRuntime(t *testing.T) (*critest.Server, *cri.Client) {
	t.Helper()
	srv := critest.NewServer(t, critest.WithRuntime("containerd", "1.6.20"))
	srv.PreloadImage("registry.local/busybox:1")
	srv.PreloadImage("registry.local/pause:3.9")
	c, err := cri.New(context.Background(), cri.Config{Endpoint: srv.Endpoint()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return srv, c
}

func testConfig(t *testing.T, client kubernetes.Interface, rt Runtime, name string) Config {
	return Config{
		Client: client, NodeName: name, InternalIP: net.IPv4(10, 0, 0, 7), Runtime: rt, RootDir: t.TempDir(),
		Machine: func() (Machine, error) { return fixedMachine, nil },
	}
}

func condition(n *v1.Node, t v1.NodeConditionType) *v1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == t {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// eventually polls f until it returns nil or the deadline passes.
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestRunRegistersRenewsTheLeaseAndReportsStatus(t *testing.T) {
	runName := uniqueName("node-run")
	client := apiClient(t)
	rtSrv, rt := fakeRuntime(t)
	cidrs := make(chan []string, 4)
	cfg := testConfig(t, client, rt, runName)
	cfg.LeaseDuration = 4 * time.Second // renewed every second
	cfg.StatusUpdateFrequency = 200 * time.Millisecond
	cfg.Labels = map[string]string{"node-role.example/worker": ""}
	cfg.OnPodCIDRs = func(c []string) { cidrs <- c }
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	select {
	case <-m.Registered():
	case err := <-done:
		t.Fatalf("Run ended before registering: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("not registered within 30s")
	}
	node, err := client.CoreV1().Nodes().Get(ctx, runName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{
		"kubernetes.io/hostname": runName, "kubernetes.io/os": runtime.GOOS, "kubernetes.io/arch": runtime.GOARCH,
		"beta.kubernetes.io/os": runtime.GOOS, "beta.kubernetes.io/arch": runtime.GOARCH, "node-role.example/worker": "",
	}
	if !equalMaps(node.Labels, wantLabels) {
		t.Errorf("labels = %v, want %v", node.Labels, wantLabels)
	}
	st := node.Status
	if got := quantities(t, st.Capacity); !equalMaps(got, map[v1.ResourceName]string{"cpu": "4", "memory": "8Gi", "ephemeral-storage": "100Gi", "pods": "110"}) {
		t.Errorf("capacity = %v", got)
	}
	if got := quantities(t, st.Allocatable); !equalMaps(got, map[v1.ResourceName]string{"cpu": "4", "memory": "8092Mi", "ephemeral-storage": "90Gi", "pods": "110"}) {
		t.Errorf("allocatable = %v", got)
	}
	if len(st.Addresses) != 2 || st.Addresses[0].Address != "10.0.0.7" || st.Addresses[1] != (v1.NodeAddress{Type: v1.NodeHostName, Address: runName}) {
		t.Errorf("addresses = %v", st.Addresses)
	}
	if st.NodeInfo.ContainerRuntimeVersion != "containerd://1.6.20" || st.NodeInfo.KubeletVersion != version.Kubernetes() ||
		st.NodeInfo.Architecture != runtime.GOARCH || st.NodeInfo.KernelVersion == "" || st.NodeInfo.OSImage == "" {
		t.Errorf("nodeInfo = %+v", st.NodeInfo)
	}
	if st.DaemonEndpoints.KubeletEndpoint.Port != 10250 {
		t.Errorf("kubelet endpoint port = %d", st.DaemonEndpoints.KubeletEndpoint.Port)
	}
	if len(st.Images) != 2 {
		t.Errorf("images = %v, want the runtime's two", st.Images)
	}
	for _, ct := range []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure} {
		if c := condition(node, ct); c == nil || c.Status != v1.ConditionFalse {
			t.Errorf("%s = %+v, want False", ct, c)
		}
	}
	if c := condition(node, v1.NodeReady); c == nil || c.Status != v1.ConditionTrue || c.Reason != "KubeletReady" {
		t.Errorf("Ready = %+v, want True KubeletReady", c)
	}

	// The Lease: held by the node, owned by it, renewed.
	var first *coordinationv1.Lease
	eventually(t, "lease created", func() error {
		first, err = client.CoordinationV1().Leases(LeaseNamespace).Get(ctx, runName, metav1.GetOptions{})
		return err
	})
	if first.Spec.HolderIdentity == nil || *first.Spec.HolderIdentity != runName || first.Spec.LeaseDurationSeconds == nil ||
		*first.Spec.LeaseDurationSeconds != 4 || first.Spec.RenewTime == nil {
		t.Fatalf("lease spec = %+v", first.Spec)
	}
	if len(first.OwnerReferences) != 1 || first.OwnerReferences[0].Kind != "Node" || first.OwnerReferences[0].UID != node.UID ||
		first.OwnerReferences[0].APIVersion != "v1" || first.OwnerReferences[0].Name != runName {
		t.Fatalf("lease owner references = %+v, want the Node %s", first.OwnerReferences, node.UID)
	}
	eventually(t, "lease renewed", func() error {
		l, err := client.CoordinationV1().Leases(LeaseNamespace).Get(ctx, runName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !l.Spec.RenewTime.After(first.Spec.RenewTime.Time) {
			return errors.New("renewTime unchanged")
		}
		return nil
	})

	// A deleted Lease is created again; one changed under the agent (its
	// cached copy now stale) is still renewed.
	if err := client.CoordinationV1().Leases(LeaseNamespace).Delete(ctx, runName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "lease recreated", func() error {
		_, err := client.CoordinationV1().Leases(LeaseNamespace).Get(ctx, runName, metav1.GetOptions{})
		return err
	})
	var touched *coordinationv1.Lease
	eventually(t, "lease touched by someone else", func() error {
		l, err := client.CoordinationV1().Leases(LeaseNamespace).Get(ctx, runName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		l.Labels = map[string]string{"touched": "yes"}
		touched, err = client.CoordinationV1().Leases(LeaseNamespace).Update(ctx, l, metav1.UpdateOptions{})
		return err
	})
	eventually(t, "lease renewed after a foreign update", func() error {
		l, err := client.CoordinationV1().Leases(LeaseNamespace).Get(ctx, runName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if l.ResourceVersion == touched.ResourceVersion || l.Labels["touched"] != "yes" {
			return errors.New("not renewed since, or the foreign change was lost")
		}
		return nil
	})

	// The network goes away: Ready turns false with the runtime's reason.
	rtSrv.SetCondition(runtimeapi.NetworkReady, false, "NetworkPluginNotReady", "Network plugin returns error: cni plugin not initialized")
	m.Trigger()
	eventually(t, "Ready false", func() error {
		n, err := client.CoreV1().Nodes().Get(ctx, runName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c := condition(n, v1.NodeReady)
		want := "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"
		if c == nil || c.Status != v1.ConditionFalse || c.Reason != "KubeletNotReady" || c.Message != want {
			return errors.New("Ready = " + conditionString(c))
		}
		return nil
	})

	// The control plane assigns a podCIDR: the agent is told.
	eventually(t, "podCIDR set", func() error {
		n, err := client.CoreV1().Nodes().Get(ctx, runName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Spec.PodCIDR, n.Spec.PodCIDRs = "10.244.3.0/24", []string{"10.244.3.0/24"}
		_, err = client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	select {
	case got := <-cidrs:
		if len(got) != 1 || got[0] != "10.244.3.0/24" {
			t.Fatalf("OnPodCIDRs(%v), want [10.244.3.0/24]", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("OnPodCIDRs not called within 30s")
	}
	if got := m.PodCIDRs(); len(got) != 1 || got[0] != "10.244.3.0/24" {
		t.Fatalf("PodCIDRs() = %v", got)
	}
}

// uniqueName makes node names unique across runs on the shared apiserver
// (go test -count=N).
func uniqueName(base string) string {
	return fmt.Sprintf("%s-%d", base, time.Now().UnixNano()%1e9)
}

func conditionString(c *v1.NodeCondition) string {
	if c == nil {
		return "<missing>"
	}
	return string(c.Status) + " " + c.Reason + " " + c.Message
}

// TestStatusIsWrittenOnChangeAndEveryReportInterval drives the status sync
// with a fake clock: an unchanged status is written again only after the
// report interval; a change is written at once with a new transition time.
func TestStatusIsWrittenOnChangeAndEveryReportInterval(t *testing.T) {
	statusName := uniqueName("node-status")
	client := apiClient(t)
	rtSrv, rt := fakeRuntime(t)
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	cfg := testConfig(t, client, rt, statusName)
	cfg.Clock = clk
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := m.register(ctx); err != nil {
		t.Fatal(err)
	}
	get := func() *v1.Node {
		t.Helper()
		n, err := client.CoreV1().Nodes().Get(ctx, statusName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	registered := get()
	t0 := clk.Now()
	ready := condition(registered, v1.NodeReady)
	if ready == nil || !ready.LastHeartbeatTime.Time.Equal(t0) || !ready.LastTransitionTime.Time.Equal(t0) {
		t.Fatalf("Ready after registration = %+v, want heartbeat and transition %v", ready, t0)
	}

	for i := 1; i <= 3; i++ {
		clk.Step(DefaultStatusUpdateFrequency)
		if err := m.syncStatus(ctx, false); err != nil {
			t.Fatal(err)
		}
	}
	if n := get(); n.ResourceVersion != registered.ResourceVersion {
		t.Fatalf("an unchanged status was written within the report interval (resourceVersion %s → %s)", registered.ResourceVersion, n.ResourceVersion)
	}

	clk.SetTime(t0.Add(DefaultStatusReportFrequency))
	if err := m.syncStatus(ctx, false); err != nil {
		t.Fatal(err)
	}
	reported := get()
	c := condition(reported, v1.NodeReady)
	if reported.ResourceVersion == registered.ResourceVersion || !c.LastHeartbeatTime.Time.Equal(clk.Now()) || !c.LastTransitionTime.Time.Equal(t0) {
		t.Fatalf("after the report interval: resourceVersion %s, Ready %+v; want a write with heartbeat %v and transition %v",
			reported.ResourceVersion, c, clk.Now(), t0)
	}

	rtSrv.SetCondition(runtimeapi.RuntimeReady, false, "ShimDied", "containerd-shim exited")
	clk.Step(DefaultStatusUpdateFrequency)
	if err := m.syncStatus(ctx, false); err != nil {
		t.Fatal(err)
	}
	c = condition(get(), v1.NodeReady)
	if c.Status != v1.ConditionFalse || c.Message != "container runtime not ready: RuntimeReady=false reason:ShimDied message:containerd-shim exited" ||
		!c.LastTransitionTime.Time.Equal(clk.Now()) || !c.LastHeartbeatTime.Time.Equal(clk.Now()) {
		t.Fatalf("Ready after the runtime failed = %+v, want False with transition and heartbeat %v", c, clk.Now())
	}
	if mp := condition(get(), v1.NodeMemoryPressure); !mp.LastTransitionTime.Time.Equal(t0) {
		t.Fatalf("MemoryPressure transition moved to %v without a change", mp.LastTransitionTime)
	}
}

func TestExistingNodeKeepsItsSpecAndGetsDefaultLabels(t *testing.T) {
	existingName := uniqueName("node-existing")
	client := apiClient(t)
	ctx := context.Background()
	existing := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: existingName, Labels: map[string]string{"kubernetes.io/hostname": "stale", "team": "blue"}},
		Spec: v1.NodeSpec{
			Unschedulable: true, PodCIDR: "10.244.9.0/24", PodCIDRs: []string{"10.244.9.0/24"},
			Taints: []v1.Taint{{Key: "example.com/maintenance", Effect: v1.TaintEffectNoSchedule}},
		},
	}
	if _, err := client.CoreV1().Nodes().Create(ctx, existing, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, rt := fakeRuntime(t)
	var got []string
	cfg := testConfig(t, client, rt, existingName)
	cfg.Taints = []v1.Taint{{Key: "ignored-for-existing", Effect: v1.TaintEffectNoExecute}}
	cfg.OnPodCIDRs = func(c []string) { got = c }
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.register(ctx); err != nil {
		t.Fatal(err)
	}
	n, err := client.CoreV1().Nodes().Get(ctx, existingName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n.Labels["kubernetes.io/hostname"] != existingName || n.Labels["team"] != "blue" || n.Labels["kubernetes.io/os"] != runtime.GOOS {
		t.Errorf("labels = %v: want the hostname label fixed, team kept, os added", n.Labels)
	}
	if !n.Spec.Unschedulable || len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != "example.com/maintenance" || n.Spec.PodCIDR != "10.244.9.0/24" {
		t.Errorf("spec = %+v, want it kept", n.Spec)
	}
	if c := condition(n, v1.NodeReady); c == nil || c.Status != v1.ConditionTrue {
		t.Errorf("Ready = %+v", c)
	}
	if len(got) != 1 || got[0] != "10.244.9.0/24" {
		t.Errorf("OnPodCIDRs got %v, want the existing [10.244.9.0/24]", got)
	}
}

func TestDeletedNodeIsRegisteredAgain(t *testing.T) {
	deletedName := uniqueName("node-deleted")
	client := apiClient(t)
	_, rt := fakeRuntime(t)
	cfg := testConfig(t, client, rt, deletedName)
	cfg.StatusUpdateFrequency = 100 * time.Millisecond
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	testrun.Start(t, m)
	ctx := context.Background()
	<-m.Registered()
	first, err := client.CoreV1().Nodes().Get(ctx, deletedName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().Nodes().Delete(ctx, deletedName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "node registered again", func() error {
		n, err := client.CoreV1().Nodes().Get(ctx, deletedName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if n.UID == first.UID {
			return errors.New("still the old node")
		}
		if c := condition(n, v1.NodeReady); c == nil || c.Status != v1.ConditionTrue {
			return errors.New("no Ready condition yet")
		}
		return nil
	})
}

func TestRegistrationRetriesUntilTheAPIServerAnswers(t *testing.T) {
	refusedName := uniqueName("node-refused")
	client := apiClient(t)
	_, rt := fakeRuntime(t)
	// An invalid label is refused by the apiserver: registration keeps
	// retrying (and says why) until ctx ends.
	cfg := testConfig(t, client, rt, refusedName)
	cfg.Labels = map[string]string{"bad label!": "x"}
	var logs syncbuf.Buffer
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := m.Run(ctx); err != nil {
		t.Fatalf("Run = %v, want nil when ctx ends", err)
	}
	if !strings.Contains(logs.String(), "registering the node failed") {
		t.Fatalf("log = %q, want the registration failure", logs.String())
	}
	if _, err := client.CoreV1().Nodes().Get(context.Background(), refusedName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("node with an invalid label: Get = %v, want not found", err)
	}
	select {
	case <-m.Registered():
		t.Fatal("Registered closed without a node")
	default:
	}
}

func TestConfigValidation(t *testing.T) {
	_, rt := fakeRuntime(t)
	for name, tc := range map[string]struct {
		mutate func(*Config)
		want   string
	}{
		"no client":        {func(c *Config) { c.Client = nil }, "Config.Client"},
		"no name":          {func(c *Config) { c.NodeName = "" }, "Config.NodeName is required"},
		"bad name":         {func(c *Config) { c.NodeName = "Node_A" }, `Config.NodeName "Node_A"`},
		"no runtime":       {func(c *Config) { c.Runtime = nil }, "Config.Runtime"},
		"no root dir":      {func(c *Config) { c.RootDir, c.Machine = "", nil }, "Config.RootDir"},
		"bad port":         {func(c *Config) { c.KubeletPort = 70000 }, "Config.KubeletPort 70000"},
		"short lease":      {func(c *Config) { c.LeaseDuration = time.Millisecond }, "Config.LeaseDuration 1ms"},
		"negative pod":     {func(c *Config) { c.MaxPods = -1 }, "Config.MaxPods -1"},
		"missing root dir": {func(c *Config) { c.RootDir, c.Machine = "/nonexistent/berth", nil }, `Config.RootDir "/nonexistent/berth": must be an existing directory`},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig(t, kubernetes.New(nil), rt, "node-a")
			tc.mutate(&cfg)
			_, err := New(cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Fatalf("New = %v, want an invalid-argument error containing %q", err, tc.want)
			}
		})
	}
}
