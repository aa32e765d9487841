package eviction

import (
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"berth/agent/node"
	"berth/internal/errdefs"
)

func TestParseErrorsInUpstreamsWords(t *testing.T) {
	for _, c := range []struct {
		grace, reclaim string
		want           string
	}{
		{grace: "memory.free=1m", want: "unsupported eviction signal memory.free"},
		{grace: "memory.available", want: "want SIGNAL=VALUE"},
		{grace: "memory.available=-1s", want: "invalid eviction grace period specified: -1s, must be a positive value"},
		{grace: "memory.available=soon", want: "invalid duration"},
		{reclaim: "memory.available=-1Mi", want: "negative eviction minimum reclaim specified for memory.available"},
		{reclaim: "pid.available=-1%", want: "eviction percentage minimum reclaim pid.available must be positive: -1%"},
		{reclaim: "nodefs.available=lots", want: "quantities must match the regular expression"},
	} {
		var err error
		if c.grace != "" {
			_, err = ParseGracePeriods(c.grace)
		} else {
			_, err = ParseMinimumReclaims(c.reclaim)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("%q%q: %v, want %q", c.grace, c.reclaim, err, c.want)
		}
	}
	soft, _ := node.ParseThresholds("memory.available<1Gi")
	if _, err := Thresholds(nil, soft, nil, nil); err == nil || !strings.Contains(err.Error(), "grace period must be specified for the soft eviction threshold memory.available") {
		t.Errorf("a soft threshold without a grace period: %v", err)
	}
}

func TestThresholdsMet(t *testing.T) {
	soft, err := node.ParseThresholds("memory.available<1Gi")
	if err != nil {
		t.Fatal(err)
	}
	grace, err := ParseGracePeriods("memory.available=90s")
	if err != nil {
		t.Fatal(err)
	}
	reclaim, err := ParseMinimumReclaims("memory.available=500Mi,nodefs.available=5%")
	if err != nil {
		t.Fatal(err)
	}
	ts, err := Thresholds(node.DefaultEvictionHard(), soft, grace, reclaim)
	if err != nil {
		t.Fatal(err)
	}
	// The kubelet's four hard defaults and the soft memory threshold.
	if len(ts) != 5 {
		t.Fatalf("thresholds %+v", ts)
	}
	const gi = 1 << 30
	for _, c := range []struct {
		name     string
		observed map[node.Signal]Observation
		reclaim  bool
		want     string // the met thresholds' signals and grace periods
	}{
		{"plenty", map[node.Signal]Observation{node.SignalMemoryAvailable: {4 * gi, 8 * gi}, node.SignalNodeFsAvailable: {50 * gi, 100 * gi}}, false, ""},
		{"soft memory", map[node.Signal]Observation{node.SignalMemoryAvailable: {gi - 1, 8 * gi}}, false, "memory.available/1m30s"},
		{"hard memory too", map[node.Signal]Observation{node.SignalMemoryAvailable: {99 << 20, 8 * gi}}, false, "memory.available/0s memory.available/1m30s"},
		{"minimum reclaim keeps it met", map[node.Signal]Observation{node.SignalMemoryAvailable: {gi + 100<<20, 8 * gi}}, true, "memory.available/1m30s"},
		{"nodefs at 9%", map[node.Signal]Observation{node.SignalNodeFsAvailable: {9 * gi, 100 * gi}}, false, "nodefs.available/0s"},
		{"nodefs at 12% reclaiming 5% more", map[node.Signal]Observation{node.SignalNodeFsAvailable: {12 * gi, 100 * gi}}, true, "nodefs.available/0s"},
		{"imagefs at 15% exactly", map[node.Signal]Observation{node.SignalImageFsAvailable: {15 * gi, 100 * gi}}, false, ""},
		{"inodes at 4%", map[node.Signal]Observation{node.SignalNodeFsInodesFree: {4, 100}}, false, "nodefs.inodesFree/0s"},
		{"unobserved", map[node.Signal]Observation{}, false, ""},
	} {
		var got []string
		for _, m := range Met(ts, c.observed, c.reclaim) {
			got = append(got, string(m.Signal)+"/"+m.GracePeriod.String())
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("%s: met %v, want %q", c.name, got, c.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestObserve(t *testing.T) {
	s := &statsapi.Summary{Node: statsapi.NodeStats{
		Memory:  &statsapi.MemoryStats{AvailableBytes: ptr(uint64(3 << 30)), WorkingSetBytes: ptr(uint64(5 << 30))},
		Fs:      &statsapi.FsStats{AvailableBytes: ptr(uint64(10)), CapacityBytes: ptr(uint64(100)), InodesFree: ptr(uint64(7)), Inodes: ptr(uint64(70))},
		Runtime: &statsapi.RuntimeStats{ImageFs: &statsapi.FsStats{AvailableBytes: ptr(uint64(20)), CapacityBytes: ptr(uint64(200))}},
		Rlimit:  &statsapi.RlimitStats{MaxPID: ptr(int64(1000)), NumOfRunningProcesses: ptr(int64(300))},
	}}
	got := Observe(s)
	want := map[node.Signal]Observation{
		node.SignalMemoryAvailable: {3 << 30, 8 << 30}, node.SignalNodeFsAvailable: {10, 100}, node.SignalNodeFsInodesFree: {7, 70},
		node.SignalImageFsAvailable: {20, 200}, node.SignalPIDAvailable: {700, 1000},
	}
	if len(got) != len(want) {
		t.Fatalf("observed %v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %+v, want %+v", k, got[k], v)
		}
	}
}

// pod is a pod with a memory and ephemeral-storage request and a priority.
func pod(name string, prio int32, memRequest, diskRequest string) *v1.Pod {
	req := v1.ResourceList{}
	if memRequest != "" {
		req[v1.ResourceMemory] = resource.MustParse(memRequest)
	}
	if diskRequest != "" {
		req[v1.ResourceEphemeralStorage] = resource.MustParse(diskRequest)
	}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PodSpec{Priority: ptr(prio),
		Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: req}}}}}
}

func usage(mem, disk, inodes, procs uint64) *statsapi.PodStats {
	return &statsapi.PodStats{
		Memory:           &statsapi.MemoryStats{WorkingSetBytes: ptr(mem)},
		EphemeralStorage: &statsapi.FsStats{UsedBytes: ptr(disk), InodesUsed: ptr(inodes)},
		ProcessStats:     &statsapi.ProcessStats{ProcessCount: ptr(procs)},
	}
}

func TestRank(t *testing.T) {
	const mi = 1 << 20
	candidates := func() []Candidate {
		return []Candidate{
			{pod("guaranteed-under", 0, "200Mi", "1Gi"), usage(100*mi, 10*mi, 10, 2)},
			{pod("burstable-over-a-bit", 0, "100Mi", ""), usage(150*mi, 20*mi, 500, 50)},
			{pod("besteffort-small", 0, "", ""), usage(10*mi, 5*mi, 5, 1)},
			{pod("besteffort-big", 0, "", ""), usage(400*mi, 900*mi, 100, 10)},
			{pod("critical-over", 2000000000, "", ""), usage(800*mi, 1000*mi, 1000, 100)},
			{pod("low-priority-under", -10, "1Gi", "10Gi"), usage(10*mi, 1*mi, 1, 1)},
			{pod("no-stats", 0, "1Gi", ""), nil},
		}
	}
	for _, c := range []struct {
		signal node.Signal
		want   string
	}{
		// Over requests first; among them lower priority first; then most above request.
		{node.SignalMemoryAvailable, "no-stats besteffort-big burstable-over-a-bit besteffort-small critical-over low-priority-under guaranteed-under"},
		{node.SignalNodeFsAvailable, "no-stats besteffort-big burstable-over-a-bit besteffort-small critical-over low-priority-under guaranteed-under"},
		// Every pod with stats uses inodes; then priority; then inodes less the ephemeral-storage request.
		{node.SignalNodeFsInodesFree, "no-stats low-priority-under burstable-over-a-bit besteffort-big besteffort-small guaranteed-under critical-over"},
		// Priority first, then the most processes; no stats ranks first among equals.
		{node.SignalPIDAvailable, "low-priority-under no-stats burstable-over-a-bit besteffort-big guaranteed-under besteffort-small critical-over"},
	} {
		cs := candidates()
		Rank(c.signal, cs)
		var got []string
		for _, x := range cs {
			got = append(got, x.Pod.Name)
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.signal, strings.Join(got, " "), c.want)
		}
	}
}
