// Package nodeunschedulable is the NodeUnschedulable filter: cordoned nodes
// (spec.unschedulable) take only pods tolerating the
// node.kubernetes.io/unschedulable:NoSchedule taint.
package nodeunschedulable

import (
	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"

	v1helper "k8s.io/component-helpers/scheduling/corev1"

	fw "berth/controlplane/scheduler/framework"
)

// Name is the plugin's name.
const Name = "NodeUnschedulable"

// ErrReason is the reason a node is rejected.
const ErrReason = "node(s) were unschedulable"

var unschedulableTaint = v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}

// Plugin is the NodeUnschedulable filter.
type Plugin struct{}

// New returns the plugin.
func New() *Plugin { return &Plugin{} }

// Name returns Name.
func (*Plugin) Name() string { return Name }

// Filter rejects unschedulable nodes unless the pod tolerates them.
func (*Plugin) Filter(_ *fw.CycleState, pod *fw.PodInfo, node *fw.NodeInfo) *fw.Status {
	if !node.Node.Spec.Unschedulable {
		return nil
	}
	if v1helper.TolerationsTolerateTaint(logr.Discard(), pod.Pod.Spec.Tolerations, &unschedulableTaint, false) {
		return nil
	}
	return fw.NewStatus(fw.UnschedulableAndUnresolvable, ErrReason)
}
