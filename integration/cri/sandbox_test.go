package cri_test

import (
	"errors"
	"net"
	"testing"

	"github.com/vishvananda/netlink"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/cri"
	"berth/internal/errdefs"
)

func TestHandshakeTalksToContainerdCRIv1(t *testing.T) {
	c, env := newClient(t)
	v := c.RuntimeVersion()
	if v.GetRuntimeName() != "containerd" || v.GetRuntimeApiVersion() != "v1" {
		t.Fatalf("runtime %q speaking %q, want containerd speaking v1", v.GetRuntimeName(), v.GetRuntimeApiVersion())
	}
	if env.ContainerdVersion != "containerd "+v.GetRuntimeVersion() {
		t.Errorf("env says %q, the handshake %q", env.ContainerdVersion, v.GetRuntimeVersion())
	}
	t.Logf("CRI client handshake: %s %s (CRI %s)", v.GetRuntimeName(), v.GetRuntimeVersion(), v.GetRuntimeApiVersion())
	st, err := c.Status(testContext(t), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, cond := range st.GetStatus().GetConditions() {
		if !cond.Status {
			t.Errorf("condition %s false: %s %s", cond.Type, cond.Reason, cond.Message)
		}
	}
}

func TestSandboxGetsIPFromCNIAndIsRemovedIdempotently(t *testing.T) {
	c, env := newClient(t)
	ctx := testContext(t)
	pod := newPod(t)
	cfg := sandboxConfig(t, pod)
	id, err := c.RunPodSandbox(ctx, cfg, "")
	if err != nil {
		t.Fatalf("RunPodSandbox: %v", err)
	}
	t.Cleanup(func() { removeSandbox(t, c, id) })

	st, err := c.PodSandboxStatus(ctx, id, false)
	if err != nil {
		t.Fatal(err)
	}
	s := st.GetStatus()
	if s.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Errorf("state = %v, want READY", s.GetState())
	}
	inPodCIDR(t, s.GetNetwork().GetIp())
	if m := s.GetMetadata(); m.GetName() != pod.Name || m.GetNamespace() != pod.Namespace || m.GetUid() != string(pod.UID) {
		t.Errorf("metadata = %v", m)
	}
	info := cri.ParseSandboxLabels(s.GetLabels())
	if info.PodName != pod.Name || info.PodNamespace != pod.Namespace || info.PodUID != pod.UID || info.Labels["app"] != "cri-test" {
		t.Errorf("labels read back as %+v", info)
	}

	// The bridge plugin made the env's bridge the pods' gateway (first address).
	br, err := netlink.LinkByName(env.BridgeName)
	if err != nil {
		t.Fatalf("bridge %s: %v", env.BridgeName, err)
	}
	addrs, err := netlink.AddrList(br, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	_, podNet, _ := net.ParseCIDR(env.PodCIDR)
	gw := make(net.IP, 4)
	copy(gw, podNet.IP.To4())
	gw[3]++
	found := false
	for _, a := range addrs {
		found = found || a.IP.Equal(gw)
	}
	if !found {
		t.Errorf("bridge %s addresses %v lack the gateway %s", env.BridgeName, addrs, gw)
	}

	if err := c.StopPodSandbox(ctx, id); err != nil {
		t.Fatal(err)
	}
	st, err = c.PodSandboxStatus(ctx, id, false)
	if err != nil {
		t.Fatal(err)
	}
	if st.GetStatus().GetState() != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
		t.Errorf("state after stop = %v, want NOTREADY", st.GetStatus().GetState())
	}
	if err := c.RemovePodSandbox(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PodSandboxStatus(ctx, id, false); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("PodSandboxStatus after removal = %v, want ErrNotFound", err)
	}
	// Already gone: stop and remove still succeed (containerd 1.6 answers
	// NotFound; the CRI contract says done).
	if err := c.StopPodSandbox(ctx, id); err != nil {
		t.Errorf("second StopPodSandbox: %v", err)
	}
	if err := c.RemovePodSandbox(ctx, id); err != nil {
		t.Errorf("second RemovePodSandbox: %v", err)
	}
}

func TestTwoSandboxesGetDistinctIPs(t *testing.T) {
	c, _ := newClient(t)
	ctx := testContext(t)
	a, _ := runSandbox(t, c, newPod(t))
	b, _ := runSandbox(t, c, newPod(t))
	sa, err := c.PodSandboxStatus(ctx, a, false)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := c.PodSandboxStatus(ctx, b, false)
	if err != nil {
		t.Fatal(err)
	}
	ipa, ipb := sa.GetStatus().GetNetwork().GetIp(), sb.GetStatus().GetNetwork().GetIp()
	inPodCIDR(t, ipa)
	inPodCIDR(t, ipb)
	if ipa == ipb {
		t.Fatalf("both sandboxes got %s", ipa)
	}
}

func TestListPodSandboxByLabel(t *testing.T) {
	c, _ := newClient(t)
	ctx := testContext(t)
	podA, podB := newPod(t), newPod(t)
	a, _ := runSandbox(t, c, podA)
	b, _ := runSandbox(t, c, podB)

	got, err := c.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{cri.LabelPodUID: string(podA.UID)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Id != a {
		t.Fatalf("filter by pod UID %s gave %d sandboxes, want only %s", podA.UID, len(got), a)
	}
	got, err = c.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{"app": "cri-test", cri.LabelPodNamespace: "integration"},
	})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, s := range got {
		ids[s.Id] = true
	}
	if !ids[a] || !ids[b] {
		t.Errorf("filter by app label gave %v, want both %s and %s", ids, a, b)
	}
	got, err = c.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{cri.LabelPodUID: "no-such-uid"},
	})
	if err != nil || len(got) != 0 {
		t.Errorf("filter by an unknown UID = %v, %v; want none", got, err)
	}
	ready, err := c.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		Id:    b,
		State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
	})
	if err != nil || len(ready) != 1 {
		t.Errorf("filter by id and READY = %v, %v", ready, err)
	}
}
