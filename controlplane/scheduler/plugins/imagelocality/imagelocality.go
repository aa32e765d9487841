// Package imagelocality is the ImageLocality score: nodes that already
// have the pod's images (node.status.images) score higher, scaled by image
// size and by how many nodes share the image.
package imagelocality

import (
	v1 "k8s.io/api/core/v1"

	fw "berth/controlplane/scheduler/framework"
)

// Name is the plugin's name.
const Name = "ImageLocality"

// Thresholds as upstream: image sums below minThreshold score 0, sums of
// maxContainerThreshold per container score 100.
const (
	mb                    int64 = 1024 * 1024
	minThreshold          int64 = 23 * mb
	maxContainerThreshold int64 = 1000 * mb
)

// Plugin is the ImageLocality score.
type Plugin struct{}

// New returns the plugin.
func New() *Plugin { return &Plugin{} }

// Name returns Name.
func (*Plugin) Name() string { return Name }

type preScoreState struct{ totalNodes int }

// PreScore records how many nodes the cluster has.
func (*Plugin) PreScore(state *fw.CycleState, _ *fw.PodInfo, snap *fw.Snapshot, _ []*fw.NodeInfo) *fw.Status {
	state.Write(Name, &preScoreState{totalNodes: len(snap.Nodes)})
	return nil
}

// Score sums, for each container image on the node, its size times the
// share of nodes having it, and maps the sum between the thresholds to 0–100.
func (*Plugin) Score(state *fw.CycleState, pod *fw.PodInfo, node *fw.NodeInfo) (int64, *fw.Status) {
	s, _ := state.Read(Name).(*preScoreState)
	if s == nil || s.totalNodes == 0 {
		return 0, nil
	}
	var sum int64
	n := 0
	for _, cs := range [][]string{images(pod.Pod.Spec.InitContainers), images(pod.Pod.Spec.Containers)} {
		for _, img := range cs {
			n++
			if st, ok := node.ImageStates[fw.NormalizedImageName(img)]; ok {
				sum += int64(float64(st.Size) * float64(st.NumNodes) / float64(s.totalNodes))
			}
		}
	}
	return CalculatePriority(sum, n), nil
}

// CalculatePriority maps the summed image score of numContainers
// containers to 0–100.
func CalculatePriority(sum int64, numContainers int) int64 {
	maxThreshold := maxContainerThreshold * int64(numContainers)
	if sum < minThreshold {
		sum = minThreshold
	} else if sum > maxThreshold {
		sum = maxThreshold
	}
	if maxThreshold <= minThreshold {
		return 0
	}
	return fw.MaxNodeScore * (sum - minThreshold) / (maxThreshold - minThreshold)
}

func images(cs []v1.Container) []string {
	out := make([]string, 0, len(cs))
	for i := range cs {
		out = append(out, cs[i].Image)
	}
	return out
}
