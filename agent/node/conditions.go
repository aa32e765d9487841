package node

import (
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Condition is the wanted state of one node condition; SetConditions
// stamps the times.
type Condition struct {
	Type            v1.NodeConditionType
	Status          v1.ConditionStatus
	Reason, Message string
}

// RuntimeState is what the agent last learnt of the runtime.
type RuntimeState struct {
	// Status is the runtime's last answer to CRI Status (nil: never).
	Status *runtimeapi.RuntimeStatus
	// LastSuccess is when Status last answered; Err the last call's error.
	LastSuccess time.Time
	Err         error
}

// requiredCapacity are the resources a Ready node reports capacity for.
var requiredCapacity = []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourcePods, v1.ResourceEphemeralStorage}

// ReadyCondition is the Ready condition for the runtime's state at now, as
// the kubelet decides it: NotReady (reason KubeletNotReady) while the
// runtime has not answered yet, has failed to answer for longer than
// downAfter, or reports RuntimeReady or NetworkReady false, or while
// capacity lacks cpu, memory, pods or ephemeral-storage, with the kubelet's
// messages.
func ReadyCondition(rs RuntimeState, capacity v1.ResourceList, now time.Time, downAfter time.Duration) Condition {
	var errs []string
	switch {
	case rs.LastSuccess.IsZero():
		errs = append(errs, "container runtime status check may not have completed yet")
	case now.Sub(rs.LastSuccess) > downAfter:
		errs = append(errs, "container runtime is down")
	}
	if rs.Status != nil {
		if c := findRuntimeCondition(rs.Status, runtimeapi.RuntimeReady); c == nil || !c.Status {
			errs = append(errs, "container runtime not ready: "+formatRuntimeCondition(runtimeapi.RuntimeReady, c))
		}
		if c := findRuntimeCondition(rs.Status, runtimeapi.NetworkReady); c == nil || !c.Status {
			errs = append(errs, "container runtime network not ready: "+formatRuntimeCondition(runtimeapi.NetworkReady, c))
		}
	}
	var missing []string
	for _, r := range requiredCapacity {
		if _, ok := capacity[r]; !ok {
			missing = append(missing, string(r))
		}
	}
	if len(missing) > 0 {
		errs = append(errs, "missing node capacity for resources: "+strings.Join(missing, ", "))
	}
	if len(errs) == 0 {
		return Condition{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"}
	}
	msg := errs[0]
	if len(errs) > 1 {
		msg = "[" + strings.Join(errs, ", ") + "]" // the kubelet's aggregate error
	}
	return Condition{Type: v1.NodeReady, Status: v1.ConditionFalse, Reason: "KubeletNotReady", Message: msg}
}

func findRuntimeCondition(st *runtimeapi.RuntimeStatus, t string) *runtimeapi.RuntimeCondition {
	for _, c := range st.GetConditions() {
		if c.GetType() == t {
			return c
		}
	}
	return nil
}

// formatRuntimeCondition renders a runtime condition as the kubelet does
// ("NetworkReady=false reason:X message:Y"; "<nil>" when missing).
func formatRuntimeCondition(t string, c *runtimeapi.RuntimeCondition) string {
	if c == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%s=%t reason:%s message:%s", t, c.GetStatus(), c.GetReason(), c.GetMessage())
}

// PressureConditions are MemoryPressure, DiskPressure and PIDPressure for
// machine m against the hard eviction thresholds, with the kubelet's
// reasons and messages.
func PressureConditions(m Machine, th Thresholds) []Condition {
	memory := th.breached(SignalMemoryAvailable, m.MemoryAvailable, m.MemoryTotal)
	disk := th.breached(SignalNodeFsAvailable, m.FsAvailable, m.FsCapacity) ||
		th.breached(SignalImageFsAvailable, m.FsAvailable, m.FsCapacity) ||
		(m.FsInodes > 0 && (th.breached(SignalNodeFsInodesFree, m.FsInodesFree, m.FsInodes) ||
			th.breached(SignalImageFsInodesFree, m.FsInodesFree, m.FsInodes)))
	pid := m.PIDMax > 0 && th.breached(SignalPIDAvailable, m.PIDMax-min(m.Processes, m.PIDMax), m.PIDMax)
	return pressureConditions(memory, disk, pid)
}

// PressureConditionsOf are MemoryPressure, DiskPressure and PIDPressure,
// true for the types in under (the eviction manager's), with the kubelet's
// reasons and messages.
func PressureConditionsOf(under []v1.NodeConditionType) []Condition {
	return pressureConditions(slices.Contains(under, v1.NodeMemoryPressure), slices.Contains(under, v1.NodeDiskPressure), slices.Contains(under, v1.NodePIDPressure))
}

func pressureConditions(memory, disk, pid bool) []Condition {
	return []Condition{
		pressure(v1.NodeMemoryPressure, memory,
			"KubeletHasInsufficientMemory", "kubelet has insufficient memory available",
			"KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
		pressure(v1.NodeDiskPressure, disk,
			"KubeletHasDiskPressure", "kubelet has disk pressure",
			"KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
		pressure(v1.NodePIDPressure, pid,
			"KubeletHasInsufficientPID", "kubelet has insufficient PID available",
			"KubeletHasSufficientPID", "kubelet has sufficient PID available"),
	}
}

func pressure(t v1.NodeConditionType, under bool, yesReason, yesMsg, noReason, noMsg string) Condition {
	if under {
		return Condition{Type: t, Status: v1.ConditionTrue, Reason: yesReason, Message: yesMsg}
	}
	return Condition{Type: t, Status: v1.ConditionFalse, Reason: noReason, Message: noMsg}
}

// SetConditions returns existing updated to want at now: every wanted
// condition gets lastHeartbeatTime now, and lastTransitionTime now when it
// is new or its status changed (else the old one is kept). Conditions not
// in want (set by others) are kept as they are; order is kept, new
// conditions are appended.
func SetConditions(existing []v1.NodeCondition, want []Condition, now time.Time) []v1.NodeCondition {
	t := metav1.NewTime(now)
	out := make([]v1.NodeCondition, len(existing))
	copy(out, existing)
	for _, w := range want {
		i := -1
		for j := range out {
			if out[j].Type == w.Type {
				i = j
				break
			}
		}
		if i < 0 {
			out = append(out, v1.NodeCondition{Type: w.Type, LastTransitionTime: t})
			i = len(out) - 1
		} else if out[i].Status != w.Status {
			out[i].LastTransitionTime = t
		}
		out[i].Status, out[i].Reason, out[i].Message = w.Status, w.Reason, w.Message
		out[i].LastHeartbeatTime = t
	}
	return out
}
