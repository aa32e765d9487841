package scheduler

import (
	fw "berth/controlplane/scheduler/framework"
	"berth/controlplane/scheduler/plugins/imagelocality"
	"berth/controlplane/scheduler/plugins/interpodaffinity"
	"berth/controlplane/scheduler/plugins/nodeaffinity"
	"berth/controlplane/scheduler/plugins/nodename"
	"berth/controlplane/scheduler/plugins/nodeports"
	"berth/controlplane/scheduler/plugins/noderesources"
	"berth/controlplane/scheduler/plugins/nodeunschedulable"
	"berth/controlplane/scheduler/plugins/podtopologyspread"
	"berth/controlplane/scheduler/plugins/tainttoleration"
)

// WeightedScorePlugin is a score plugin with its weight in the profile.
type WeightedScorePlugin struct {
	Plugin fw.ScorePlugin
	Weight int64
}

// Profile is the plugins one scheduling cycle runs, in order.
type Profile struct {
	PreFilter []fw.PreFilterPlugin
	Filter    []fw.FilterPlugin
	PreScore  []fw.PreScorePlugin
	Score     []WeightedScorePlugin
	// PreBind runs in the binding goroutine before the Binding is posted.
	PreBind []fw.PreBindPlugin
}

// DefaultProfile is upstream's default profile restricted to the plugins
// berth implements, with upstream's filter order and score weights:
// TaintToleration 3, NodeAffinity 2, NodeResourcesFit 1, PodTopologySpread
// 2, InterPodAffinity 2, NodeResourcesBalancedAllocation 1, ImageLocality 1.
func DefaultProfile() *Profile {
	unsched := nodeunschedulable.New()
	name := nodename.New()
	taints := tainttoleration.New()
	affinity := nodeaffinity.New()
	ports := nodeports.New()
	fit := noderesources.NewFit()
	spread := podtopologyspread.New()
	podAffinity := interpodaffinity.New()
	balanced := noderesources.NewBalancedAllocation()
	images := imagelocality.New()
	return &Profile{
		PreFilter: []fw.PreFilterPlugin{affinity, ports, spread, podAffinity},
		Filter:    []fw.FilterPlugin{unsched, name, taints, affinity, ports, fit, spread, podAffinity},
		PreScore:  []fw.PreScorePlugin{taints, affinity, spread, podAffinity, images},
		Score: []WeightedScorePlugin{
			{taints, 3},
			{affinity, 2},
			{fit, 1},
			{spread, 2},
			{podAffinity, 2},
			{balanced, 1},
			{images, 1},
		},
	}
}
