package nodelifecycle

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Taint keys the controller manages (upstream's).
const (
	TaintUnreachable = corev1.TaintNodeUnreachable // node.kubernetes.io/unreachable
	TaintNotReady    = corev1.TaintNodeNotReady    // node.kubernetes.io/not-ready
)

// Health is what the controller remembers of a node between syncs: when it
// last saw a sign of life (ProbeTime, on the controller's own clock, so
// clock skew between node and controller does not matter), and the lease
// renew time and Ready heartbeat it last saw.
type Health struct {
	ProbeTime  time.Time
	LeaseRenew time.Time
	Heartbeat  time.Time
}

func readyCondition(st *corev1.NodeStatus) *corev1.NodeCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == corev1.NodeReady {
			return &st.Conditions[i]
		}
	}
	return nil
}

// Observe updates h from node and its lease (nil if none) at now: a new
// Ready heartbeat or a later lease renewTime counts as a sign of life. A
// node seen for the first time starts from now (or its creation, when it
// never posted a Ready condition).
func Observe(h *Health, node *corev1.Node, lease *coordinationv1.Lease, now time.Time) Health {
	var hb time.Time
	if c := readyCondition(&node.Status); c != nil {
		hb = c.LastHeartbeatTime.Time
	}
	var renew time.Time
	if lease != nil && lease.Spec.RenewTime != nil {
		renew = lease.Spec.RenewTime.Time
	}
	if h == nil {
		probe := now
		if readyCondition(&node.Status) == nil && renew.IsZero() {
			probe = node.CreationTimestamp.Time
		}
		return Health{ProbeTime: probe, LeaseRenew: renew, Heartbeat: hb}
	}
	out := *h
	if !hb.Equal(h.Heartbeat) {
		out.Heartbeat, out.ProbeTime = hb, now
	}
	if renew.After(h.LeaseRenew) {
		out.LeaseRenew, out.ProbeTime = renew, now
	}
	return out
}

// conditionTypes are set to Unknown when a node stops reporting.
var conditionTypes = []corev1.NodeConditionType{corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure}

// UnknownConditions returns node's conditions with Ready and the pressure
// conditions set to Unknown when nothing was heard from it for grace
// (startupGrace when it never posted Ready), and whether they changed.
func UnknownConditions(node *corev1.Node, h Health, now time.Time, grace, startupGrace time.Duration) ([]corev1.NodeCondition, bool) {
	if readyCondition(&node.Status) == nil {
		grace = startupGrace
	}
	if !now.After(h.ProbeTime.Add(grace)) {
		return node.Status.Conditions, false
	}
	conds := append([]corev1.NodeCondition(nil), node.Status.Conditions...)
	changed := false
	ts := metav1.NewTime(now)
	for _, t := range conditionTypes {
		i := -1
		for j := range conds {
			if conds[j].Type == t {
				i = j
			}
		}
		if i < 0 {
			conds = append(conds, corev1.NodeCondition{Type: t, Status: corev1.ConditionUnknown, Reason: "NodeStatusNeverUpdated",
				Message: "Kubelet never posted node status.", LastHeartbeatTime: node.CreationTimestamp, LastTransitionTime: ts})
			changed = true
			continue
		}
		if conds[i].Status != corev1.ConditionUnknown {
			conds[i].Status = corev1.ConditionUnknown
			conds[i].Reason = "NodeStatusUnknown"
			conds[i].Message = "Kubelet stopped posting node status."
			conds[i].LastTransitionTime = ts
			changed = true
		}
	}
	return conds, changed
}

// conditionTaints are the NoSchedule taints of the node conditions that
// keep new pods away while True, upstream's (TaintNodesByCondition).
var conditionTaints = map[corev1.NodeConditionType]string{
	corev1.NodeMemoryPressure:     corev1.TaintNodeMemoryPressure,
	corev1.NodeDiskPressure:       corev1.TaintNodeDiskPressure,
	corev1.NodePIDPressure:        corev1.TaintNodePIDPressure,
	corev1.NodeNetworkUnavailable: corev1.TaintNodeNetworkUnavailable,
}

// DesiredTaints returns node's taints as its conditions want them: Ready
// Unknown → unreachable NoSchedule and NoExecute; False → not-ready
// NoSchedule and NoExecute; True → neither; and MemoryPressure,
// DiskPressure, PIDPressure or NetworkUnavailable True → its NoSchedule
// taint (node.kubernetes.io/memory-pressure, …). Existing taints keep
// their TimeAdded; new NoExecute taints get now. changed says whether the
// list differs from node's.
func DesiredTaints(node *corev1.Node, now time.Time) ([]corev1.Taint, bool) {
	out, changed := readyTaints(node, now)
	want := map[string]bool{}
	for _, c := range node.Status.Conditions {
		if key, ok := conditionTaints[c.Type]; ok && c.Status == corev1.ConditionTrue {
			want[key] = true
		}
	}
	managed := map[string]bool{}
	for _, key := range conditionTaints {
		managed[key] = true
	}
	kept := out[:0]
	have := map[string]bool{}
	for _, t := range out {
		if managed[t.Key] && t.Effect == corev1.TaintEffectNoSchedule {
			if !want[t.Key] || have[t.Key] {
				changed = true
				continue
			}
			have[t.Key] = true
		}
		kept = append(kept, t)
	}
	for _, c := range node.Status.Conditions { // in the conditions' order
		if key, ok := conditionTaints[c.Type]; ok && want[key] && !have[key] {
			kept = append(kept, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule})
			have[key], changed = true, true
		}
	}
	return kept, changed
}

// readyTaints is DesiredTaints for the Ready condition alone.
func readyTaints(node *corev1.Node, now time.Time) ([]corev1.Taint, bool) {
	var want string
	if c := readyCondition(&node.Status); c != nil {
		switch c.Status {
		case corev1.ConditionUnknown:
			want = TaintUnreachable
		case corev1.ConditionFalse:
			want = TaintNotReady
		}
	}
	var out []corev1.Taint
	have := map[corev1.TaintEffect]bool{}
	changed := false
	for _, t := range node.Spec.Taints {
		if t.Key == TaintUnreachable || t.Key == TaintNotReady {
			if t.Key != want || (t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute) {
				changed = true
				continue
			}
			have[t.Effect] = true
		}
		out = append(out, t)
	}
	if want != "" {
		for _, eff := range []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute} {
			if have[eff] {
				continue
			}
			t := corev1.Taint{Key: want, Effect: eff}
			if eff == corev1.TaintEffectNoExecute {
				ts := metav1.NewTime(now)
				t.TimeAdded = &ts
			}
			out = append(out, t)
			changed = true
		}
	}
	return out, changed
}
