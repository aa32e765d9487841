package pod

import (
	"fmt"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/registry/base"
)

// nodeUnreachableReason is the pod status reason the node lifecycle
// controller sets on pods of an unreachable node.
const nodeUnreachableReason = "NodeLost"

var (
	podSuccessConditions = []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: string(v1.PodSucceeded), Message: "The pod has completed successfully."}}
	podFailedConditions  = []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: string(v1.PodFailed), Message: "The pod failed."}}
)

// Table prints pods as kubectl get pods shows them: NAME READY STATUS
// RESTARTS AGE, and with -o wide IP NODE NOMINATED NODE READINESS GATES.
var Table = base.Table[*v1.Pod]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.Col("Ready", "The aggregate readiness state of this pod for accepting traffic."),
		base.Col("Status", "The aggregate status of the containers in this pod."),
		base.Col("Restarts", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
		base.AgeColumn,
		base.Wide(base.Col("IP", v1.PodStatus{}.SwaggerDoc()["podIP"])),
		base.Wide(base.Col("Node", v1.PodSpec{}.SwaggerDoc()["nodeName"])),
		base.Wide(base.Col("Nominated Node", v1.PodStatus{}.SwaggerDoc()["nominatedNodeName"])),
		base.Wide(base.Col("Readiness Gates", v1.PodSpec{}.SwaggerDoc()["readinessGates"])),
	},
	Row: row,
}

func row(pod *v1.Pod, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
	s := Summarize(pod)
	restarts := strconv.Itoa(s.Restarts)
	if s.Restarts != 0 && !s.LastRestart.IsZero() {
		restarts = fmt.Sprintf("%d (%s ago)", s.Restarts, base.Age(s.LastRestart, now))
	}
	podIP := "<none>"
	if len(pod.Status.PodIPs) > 0 && pod.Status.PodIPs[0].IP != "" {
		podIP = pod.Status.PodIPs[0].IP
	} else if pod.Status.PodIP != "" {
		podIP = pod.Status.PodIP
	}
	nodeName := orNone(pod.Spec.NodeName)
	nominated := orNone(pod.Status.NominatedNodeName)
	gates := "<none>"
	if len(pod.Spec.ReadinessGates) > 0 {
		trueConds := 0
		for _, g := range pod.Spec.ReadinessGates {
			for _, c := range pod.Status.Conditions {
				if c.Type == g.ConditionType {
					if c.Status == v1.ConditionTrue {
						trueConds++
					}
					break
				}
			}
		}
		gates = fmt.Sprintf("%d/%d", trueConds, len(pod.Spec.ReadinessGates))
	}
	var conds []metav1.TableRowCondition
	switch pod.Status.Phase {
	case v1.PodSucceeded:
		conds = podSuccessConditions
	case v1.PodFailed:
		conds = podFailedConditions
	}
	cells := []interface{}{pod.Name, fmt.Sprintf("%d/%d", s.Ready, s.Total), s.Status, restarts, base.Age(pod.CreationTimestamp, now),
		podIP, nodeName, nominated, gates}
	return cells, conds
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// Summary is what kubectl shows of a pod's containers.
type Summary struct {
	// Ready and Total are the READY column's numbers (sidecars count).
	Ready, Total int
	// Status is the STATUS column: the phase or a more telling reason
	// (Init:0/1, Init:CrashLoopBackOff, CrashLoopBackOff, Completed,
	// Error, Terminating, …).
	Status string
	// Restarts is the RESTARTS count, LastRestart the time of the last one.
	Restarts    int
	LastRestart metav1.Time
}

// Summarize computes the READY, STATUS and RESTARTS columns of a pod as
// kube-apiserver's pod printer does.
func Summarize(pod *v1.Pod) Summary {
	restarts, sidecarRestarts := 0, 0
	total := len(pod.Spec.Containers)
	ready := 0
	var lastRestart, lastSidecarRestart metav1.Time

	reason := string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		reason = pod.Status.Reason
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Reason == v1.PodReasonSchedulingGated {
			reason = v1.PodReasonSchedulingGated
		}
	}

	sidecars := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
			total++
		}
	}
	later := func(t *metav1.Time, st v1.ContainerStatus) {
		if term := st.LastTerminationState.Terminated; term != nil && t.Before(&term.FinishedAt) {
			*t = term.FinishedAt
		}
	}

	initializing := false
	for i, st := range pod.Status.InitContainerStatuses {
		restarts += int(st.RestartCount)
		later(&lastRestart, st)
		if sidecars[st.Name] {
			sidecarRestarts += int(st.RestartCount)
			later(&lastSidecarRestart, st)
		}
		switch {
		case st.State.Terminated != nil && st.State.Terminated.ExitCode == 0:
			continue
		case sidecars[st.Name] && st.Started != nil && *st.Started:
			if st.Ready {
				ready++
			}
			continue
		case st.State.Terminated != nil:
			t := st.State.Terminated
			switch {
			case t.Reason != "":
				reason = "Init:" + t.Reason
			case t.Signal != 0:
				reason = fmt.Sprintf("Init:Signal:%d", t.Signal)
			default:
				reason = fmt.Sprintf("Init:ExitCode:%d", t.ExitCode)
			}
		case st.State.Waiting != nil && st.State.Waiting.Reason != "" && st.State.Waiting.Reason != "PodInitializing":
			reason = "Init:" + st.State.Waiting.Reason
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		initializing = true
		break
	}

	if !initializing || podInitialized(pod) {
		restarts = sidecarRestarts
		lastRestart = lastSidecarRestart
		hasRunning := false
		for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
			st := pod.Status.ContainerStatuses[i]
			restarts += int(st.RestartCount)
			later(&lastRestart, st)
			switch {
			case st.State.Waiting != nil && st.State.Waiting.Reason != "":
				reason = st.State.Waiting.Reason
			case st.State.Terminated != nil && st.State.Terminated.Reason != "":
				reason = st.State.Terminated.Reason
			case st.State.Terminated != nil && st.State.Terminated.Signal != 0:
				reason = fmt.Sprintf("Signal:%d", st.State.Terminated.Signal)
			case st.State.Terminated != nil:
				reason = fmt.Sprintf("ExitCode:%d", st.State.Terminated.ExitCode)
			case st.Ready && st.State.Running != nil:
				hasRunning = true
				ready++
			}
		}
		if reason == "Completed" && hasRunning {
			if podReady(pod) {
				reason = "Running"
			} else {
				reason = "NotReady"
			}
		}
	}

	if pod.DeletionTimestamp != nil && pod.Status.Reason == nodeUnreachableReason {
		reason = "Unknown"
	} else if pod.DeletionTimestamp != nil && pod.Status.Phase != v1.PodSucceeded && pod.Status.Phase != v1.PodFailed {
		reason = "Terminating"
	}
	return Summary{Ready: ready, Total: total, Status: reason, Restarts: restarts, LastRestart: lastRestart}
}

func podInitialized(pod *v1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodInitialized && c.Status == v1.ConditionTrue {
			return true
		}
	}
	return false
}

func podReady(pod *v1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodReady && c.Status == v1.ConditionTrue {
			return true
		}
	}
	return false
}
