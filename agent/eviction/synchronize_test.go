package eviction

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"berth/agent/node"
)

// A sequence of observations through Synchronize: grace periods, minimum
// reclaim, the transition period and memory first.
func TestSynchronize(t *testing.T) {
	hard, _ := node.ParseThresholds("memory.available<1Gi,nodefs.available<10%")
	soft, _ := node.ParseThresholds("memory.available<2Gi")
	grace, _ := ParseGracePeriods("memory.available=30s")
	reclaim, _ := ParseMinimumReclaims("nodefs.available=5%")
	ts, err := Thresholds(hard, soft, grace, reclaim)
	if err != nil {
		t.Fatal(err)
	}
	const gi = 1 << 30
	mem := func(avail uint64) Observation { return Observation{avail, 16 * gi} }
	disk := func(avail uint64) Observation { return Observation{avail, 100 * gi} }
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	steps := []struct {
		at       time.Duration
		memory   Observation
		nodefs   Observation
		want     string // conditions / reclaim signal / met thresholds
		resource v1.ResourceName
	}{
		{0, mem(8 * gi), disk(50 * gi), "[] / - / []", ""},
		// Soft memory met: pressure at once, no action before 30 s.
		{10 * time.Second, mem(gi + gi/2), disk(50 * gi), "[MemoryPressure] / - / []", ""},
		{39 * time.Second, mem(gi + gi/2), disk(50 * gi), "[MemoryPressure] / - / []", ""},
		{40 * time.Second, mem(gi + gi/2), disk(50 * gi), "[MemoryPressure] / memory.available / [memory.available/30s]", v1.ResourceMemory},
		// Disk hard at 9 %: memory still first.
		{50 * time.Second, mem(gi + gi/2), disk(9 * gi), "[DiskPressure MemoryPressure] / memory.available / [memory.available/30s nodefs.available/0s]", v1.ResourceMemory},
		// Memory resolved; disk at 12 % is above 10 % but short of its 5 % minimum reclaim.
		{60 * time.Second, mem(8 * gi), disk(12 * gi), "[DiskPressure MemoryPressure] / nodefs.available / [nodefs.available/0s]", v1.ResourceEphemeralStorage},
		// Disk reclaimed past 15 %: nothing met, both conditions held for the transition period.
		{70 * time.Second, mem(8 * gi), disk(16 * gi), "[DiskPressure MemoryPressure] / - / []", ""},
		// Memory pressure last seen at 50 s: gone 5 min later, disk (seen at 60 s) 10 s after.
		{350 * time.Second, mem(8 * gi), disk(16 * gi), "[DiskPressure] / - / []", ""},
		{360 * time.Second, mem(8 * gi), disk(16 * gi), "[] / - / []", ""},
		// Soft memory met again: its grace period counts afresh.
		{400 * time.Second, mem(gi + gi/2), disk(50 * gi), "[MemoryPressure] / - / []", ""},
	}
	var st State
	for _, s := range steps {
		var d Decision
		st, d = Synchronize(st, ts, map[node.Signal]Observation{node.SignalMemoryAvailable: s.memory, node.SignalNodeFsAvailable: s.nodefs}, t0.Add(s.at), DefaultPressureTransitionPeriod)
		reclaim := "-"
		if d.Reclaim != nil {
			reclaim = string(d.Reclaim.Signal)
		}
		var met []string
		for _, m := range d.Met {
			met = append(met, fmt.Sprintf("%s/%s", m.Signal, m.GracePeriod))
		}
		got := fmt.Sprintf("%v / %s / [%s]", d.Conditions, reclaim, strings.Join(met, " "))
		if got != s.want || d.Resource != s.resource {
			t.Errorf("at %s: %s (%s), want %s (%s)", s.at, got, d.Resource, s.want, s.resource)
		}
	}
}

func TestThresholdMetMessage(t *testing.T) {
	hard, _ := node.ParseThresholds("memory.available<100Mi,nodefs.available<10%")
	ts, _ := Thresholds(hard, nil, nil, nil)
	obs := map[node.Signal]Observation{node.SignalMemoryAvailable: {80 << 20, 1 << 30}, node.SignalNodeFsAvailable: {5 << 30, 100 << 30}}
	for res, want := range map[v1.ResourceName]string{
		v1.ResourceMemory:           "Threshold quantity: 100Mi, available: 80Mi. ",
		v1.ResourceEphemeralStorage: "Threshold quantity: 10Gi, available: 5Gi. ",
		ResourcePIDs:                "",
	} {
		if got := ThresholdMetMessage(res, ts, obs); got != want {
			t.Errorf("%s: %q, want %q", res, got, want)
		}
	}
}
