package cri_test

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/cri"
	"berth/internal/errdefs"
)

func TestSandboxLifecycle(t *testing.T) {
	srv, c := newClient(t, cri.Config{})
	ctx := testCtx(t)
	pc := podConfig("web")
	id, err := c.RunPodSandbox(ctx, pc, "")
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.PodSandboxStatus(ctx, id, false)
	if err != nil {
		t.Fatal(err)
	}
	if s := st.GetStatus(); s.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY || s.GetNetwork().GetIp() == "" ||
		s.GetMetadata().GetName() != "web" || s.GetLabels()["app"] != "web" || s.GetCreatedAt() == 0 {
		t.Fatalf("status after RunPodSandbox = %v, want READY with an IP, metadata, labels and created time", s)
	}

	if _, err := c.RunPodSandbox(ctx, pc, ""); !errors.Is(err, errdefs.ErrAlreadyExists) {
		t.Fatalf("second RunPodSandbox with the same metadata = %v, want ErrAlreadyExists", err)
	}

	if err := c.StopPodSandbox(ctx, id); err != nil {
		t.Fatal(err)
	}
	st, err = c.PodSandboxStatus(ctx, id, true)
	if err != nil {
		t.Fatal(err)
	}
	if st.GetStatus().GetState() != runtimeapi.PodSandboxState_SANDBOX_NOTREADY || len(st.GetInfo()) == 0 {
		t.Fatalf("status after stop = %v (info %v), want NOTREADY with verbose info", st.GetStatus().GetState(), st.GetInfo())
	}
	if err := c.RemovePodSandbox(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PodSandboxStatus(ctx, id, false); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("PodSandboxStatus after remove = %v, want ErrNotFound", err)
	}

	// Already gone: the runtime answers NotFound, the client answers done.
	stops, removes := srv.Calls("StopPodSandbox"), srv.Calls("RemovePodSandbox")
	if err := c.StopPodSandbox(ctx, id); err != nil {
		t.Fatalf("StopPodSandbox of a removed sandbox = %v, want nil", err)
	}
	if err := c.RemovePodSandbox(ctx, id); err != nil {
		t.Fatalf("RemovePodSandbox of a removed sandbox = %v, want nil", err)
	}
	if srv.Calls("StopPodSandbox") != stops+1 || srv.Calls("RemovePodSandbox") != removes+1 {
		t.Fatal("idempotent stop/remove must still ask the runtime")
	}

	// The same metadata can run again once the old sandbox is removed.
	if _, err := c.RunPodSandbox(ctx, pc, ""); err != nil {
		t.Fatalf("RunPodSandbox after remove: %v", err)
	}
}

func TestStopAndRemoveSandboxReturnOtherErrors(t *testing.T) {
	srv, c := newClient(t, cri.Config{})
	ctx := testCtx(t)
	id, err := c.RunPodSandbox(ctx, podConfig("p"), "")
	if err != nil {
		t.Fatal(err)
	}
	srv.InjectN("StopPodSandbox", status.Error(codes.Unavailable, "shim is restarting"), 1)
	if err := c.StopPodSandbox(ctx, id); !errors.Is(err, errdefs.ErrUnavailable) {
		t.Fatalf("StopPodSandbox with the runtime unavailable = %v, want ErrUnavailable", err)
	}
	srv.InjectN("RemovePodSandbox", status.Error(codes.Internal, "failed to remove sandbox root"), 1)
	if err := c.RemovePodSandbox(ctx, id); err == nil {
		t.Fatal("RemovePodSandbox with an internal error returned nil")
	}
	// The faults were one-shot: now both work.
	if err := c.StopPodSandbox(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := c.RemovePodSandbox(ctx, id); err != nil {
		t.Fatal(err)
	}
}

func TestRunPodSandboxErrors(t *testing.T) {
	_, c := newClient(t, cri.Config{})
	ctx := testCtx(t)
	if _, err := c.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{}, ""); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("RunPodSandbox without metadata = %v, want ErrInvalidArgument", err)
	}
	_, err := c.RunPodSandbox(ctx, podConfig("p"), "kata")
	if err == nil || !contains(err.Error(), `cri RunPodSandbox "default/p"`, `no runtime for "kata"`) {
		t.Fatalf("RunPodSandbox with an unknown handler = %v, want the runtime's message naming the handler", err)
	}
}

func TestHostNetworkSandboxHasNoPodIP(t *testing.T) {
	_, c := newClient(t, cri.Config{})
	ctx := testCtx(t)
	pc := podConfig("host")
	pc.Linux = &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
	}}
	id, err := c.RunPodSandbox(ctx, pc, "")
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.PodSandboxStatus(ctx, id, false)
	if err != nil {
		t.Fatal(err)
	}
	if ip := st.GetStatus().GetNetwork().GetIp(); ip != "" {
		t.Fatalf("host-network sandbox IP = %q, want none", ip)
	}
}

func TestListPodSandboxFilters(t *testing.T) {
	_, c := newClient(t, cri.Config{})
	ctx := testCtx(t)
	a, _ := c.RunPodSandbox(ctx, podConfig("a"), "")
	b, _ := c.RunPodSandbox(ctx, podConfig("b"), "")
	if err := c.StopPodSandbox(ctx, b); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		filter *runtimeapi.PodSandboxFilter
		want   []string
	}{
		{"all", nil, []string{a, b}},
		{"by id", &runtimeapi.PodSandboxFilter{Id: b}, []string{b}},
		{"unknown id", &runtimeapi.PodSandboxFilter{Id: "nope"}, nil},
		{"ready", &runtimeapi.PodSandboxFilter{State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}}, []string{a}},
		{"not ready", &runtimeapi.PodSandboxFilter{State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY}}, []string{b}},
		{"label", &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"app": "a"}}, []string{a}},
		{"labels ANDed", &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"app": "a", cri.LabelPodName: "b"}}, nil},
		{"id and state disagree", &runtimeapi.PodSandboxFilter{Id: a, State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			items, err := c.ListPodSandbox(ctx, tc.filter)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(items); !sameSet(got, tc.want) {
				t.Fatalf("ListPodSandbox(%v) = %v, want %v", tc.filter, got, tc.want)
			}
		})
	}
}

func TestSandboxStats(t *testing.T) {
	_, c := newClient(t, cri.Config{})
	ctx := testCtx(t)
	id, _ := c.RunPodSandbox(ctx, podConfig("s"), "")
	st, err := c.PodSandboxStats(ctx, id)
	if err != nil || st.GetAttributes().GetId() != id {
		t.Fatalf("PodSandboxStats = %v, %v", st, err)
	}
	all, err := c.ListPodSandboxStats(ctx, &runtimeapi.PodSandboxStatsFilter{LabelSelector: map[string]string{"app": "s"}})
	if err != nil || len(all) != 1 {
		t.Fatalf("ListPodSandboxStats = %v, %v; want one", all, err)
	}
	if _, err := c.PodSandboxStats(ctx, "gone"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("PodSandboxStats of an unknown sandbox = %v, want ErrNotFound", err)
	}
}

// ids are the IDs of listed sandboxes or containers.
func ids[T interface{ GetId() string }](items []T) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.GetId())
	}
	return out
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]int{}
	for _, s := range a {
		m[s]++
	}
	for _, s := range b {
		m[s]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return true
}

func contains(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
