// Package nodename is the NodeName filter: a pod that names a node in
// spec.nodeName fits only that node.
package nodename

import (
	fw "berth/controlplane/scheduler/framework"
)

// Name is the plugin's name.
const Name = "NodeName"

// ErrReason is the reason a node is rejected.
const ErrReason = "node(s) didn't match the requested node name"

// Plugin is the NodeName filter.
type Plugin struct{}

// New returns the plugin.
func New() *Plugin { return &Plugin{} }

// Name returns Name.
func (*Plugin) Name() string { return Name }

// Filter rejects every node but the one the pod names.
func (*Plugin) Filter(_ *fw.CycleState, pod *fw.PodInfo, node *fw.NodeInfo) *fw.Status {
	if pod.Pod.Spec.NodeName == "" || pod.Pod.Spec.NodeName == node.Name() {
		return nil
	}
	return fw.NewStatus(fw.UnschedulableAndUnresolvable, ErrReason)
}
