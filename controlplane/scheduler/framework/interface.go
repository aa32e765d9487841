package framework

import "sync"

// Score bounds: every score plugin's normalized scores lie in
// [MinNodeScore, MaxNodeScore] before weighting.
const (
	MinNodeScore int64 = 0
	MaxNodeScore int64 = 100
)

// Plugin is a named scheduling plugin.
type Plugin interface {
	Name() string
}

// PreFilterPlugin computes per-pod state once per cycle before Filter. A
// rejecting status makes the pod unschedulable on every node; Skip makes
// the cycle skip the plugin's Filter.
type PreFilterPlugin interface {
	Plugin
	PreFilter(state *CycleState, pod *PodInfo, snap *Snapshot) *Status
}

// FilterPlugin decides whether the pod fits a node. It is called
// concurrently for different nodes and must only read state.
type FilterPlugin interface {
	Plugin
	Filter(state *CycleState, pod *PodInfo, node *NodeInfo) *Status
}

// PreScorePlugin computes per-pod scoring state over the feasible nodes;
// Skip makes the cycle skip the plugin's Score.
type PreScorePlugin interface {
	Plugin
	PreScore(state *CycleState, pod *PodInfo, snap *Snapshot, feasible []*NodeInfo) *Status
}

// ScorePlugin ranks a feasible node; called concurrently, read-only.
type ScorePlugin interface {
	Plugin
	Score(state *CycleState, pod *PodInfo, node *NodeInfo) (int64, *Status)
}

// ScoreNormalizer maps a score plugin's raw scores into
// [MinNodeScore, MaxNodeScore] in place.
type ScoreNormalizer interface {
	NormalizeScore(state *CycleState, pod *PodInfo, scores []NodeScore) *Status
}

// NodeScore is one node's score.
type NodeScore struct {
	Name  string
	Score int64
}

// CycleState carries plugins' per-pod data through one scheduling cycle.
// Written in PreFilter/PreScore (sequential), read in Filter/Score.
type CycleState struct {
	mu   sync.RWMutex
	data map[string]any
	// SkipFilter and SkipScore record plugins that returned Skip.
	SkipFilter map[string]bool
	SkipScore  map[string]bool
}

// NewCycleState returns an empty state.
func NewCycleState() *CycleState {
	return &CycleState{data: map[string]any{}, SkipFilter: map[string]bool{}, SkipScore: map[string]bool{}}
}

// Write stores a plugin's value.
func (c *CycleState) Write(key string, v any) {
	c.mu.Lock()
	c.data[key] = v
	c.mu.Unlock()
}

// Read returns a stored value (nil if absent).
func (c *CycleState) Read(key string) any {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.data[key]
}

// DefaultNormalizeScore scales scores so the largest becomes maxPriority
// (reversed: the largest becomes 0 and all-zero scores become maxPriority),
// as upstream's helper does.
func DefaultNormalizeScore(maxPriority int64, reverse bool, scores []NodeScore) {
	var maxCount int64
	for i := range scores {
		if scores[i].Score > maxCount {
			maxCount = scores[i].Score
		}
	}
	if maxCount == 0 {
		if reverse {
			for i := range scores {
				scores[i].Score = maxPriority
			}
		}
		return
	}
	for i := range scores {
		s := maxPriority * scores[i].Score / maxCount
		if reverse {
			s = maxPriority - s
		}
		scores[i].Score = s
	}
}
