// Package nodeports is the NodePorts filter: a pod's host ports must be
// free on the node.
package nodeports

import (
	fw "berth/controlplane/scheduler/framework"
)

// Name is the plugin's name.
const Name = "NodePorts"

// ErrReason is the reason a node is rejected.
const ErrReason = "node(s) didn't have free ports for the requested pod ports"

// Plugin is the NodePorts filter.
type Plugin struct{}

// New returns the plugin.
func New() *Plugin { return &Plugin{} }

// Name returns Name.
func (*Plugin) Name() string { return Name }

// PreFilter collects the pod's host ports; Skip when it has none.
func (*Plugin) PreFilter(state *fw.CycleState, pod *fw.PodInfo, _ *fw.Snapshot) *fw.Status {
	ports := fw.PodHostPorts(pod.Pod)
	if len(ports) == 0 {
		return fw.NewStatus(fw.Skip)
	}
	state.Write(Name, ports)
	return nil
}

// Filter rejects a node where any of the pod's host ports is taken.
func (*Plugin) Filter(state *fw.CycleState, pod *fw.PodInfo, node *fw.NodeInfo) *fw.Status {
	ports, ok := state.Read(Name).([]fw.HostPort)
	if !ok {
		ports = fw.PodHostPorts(pod.Pod)
	}
	for _, want := range ports {
		for _, used := range node.UsedPorts {
			if want.Conflicts(used) {
				return fw.NewStatus(fw.Unschedulable, ErrReason)
			}
		}
	}
	return nil
}
