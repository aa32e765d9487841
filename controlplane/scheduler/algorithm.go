package scheduler

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"

	fw "berth/controlplane/scheduler/framework"
)

// ErrNoNodesAvailable is returned when the cluster has no nodes at all.
var ErrNoNodesAvailable = errors.New("no nodes available to schedule pods")

// Sampling bounds for percentageOfNodesToScore, as upstream's.
const (
	minFeasibleNodesToFind           = 100
	minFeasibleNodesPercentageToFind = 5
)

// Algorithm runs the filter and score phases of a scheduling cycle over a
// snapshot. It is used by one goroutine at a time (the scheduling loop);
// Filter and Score calls fan out over nodes inside.
type Algorithm struct {
	Profile *Profile
	// PercentageOfNodesToScore: stop filtering once this share of the nodes
	// is feasible; 0 picks upstream's adaptive share (50% minus 1% per 125
	// nodes, at least 5%, and at least 100 nodes).
	PercentageOfNodesToScore int32
	// Parallelism is how many goroutines filter and score nodes.
	Parallelism int
	// Rand breaks ties between best-scored nodes.
	Rand *rand.Rand
	// Nominated lists the pods nominated to a node that a pod must leave
	// room for (nil: none).
	Nominated func(node string, pod *v1.Pod) []*fw.PodInfo

	nextStartNodeIndex int
}

// ScheduleResult is where a pod goes.
type ScheduleResult struct {
	SuggestedHost  string
	EvaluatedNodes int
	FeasibleNodes  int
}

// NumFeasibleNodesToFind is how many feasible nodes the cycle looks for
// among numAllNodes.
func (a *Algorithm) NumFeasibleNodesToFind(numAllNodes int) int {
	if numAllNodes < minFeasibleNodesToFind {
		return numAllNodes
	}
	pct := int(a.PercentageOfNodesToScore)
	if pct <= 0 {
		pct = 50 - numAllNodes/125
		if pct < minFeasibleNodesPercentageToFind {
			pct = minFeasibleNodesPercentageToFind
		}
	}
	if pct >= 100 {
		return numAllNodes
	}
	n := numAllNodes * pct / 100
	if n < minFeasibleNodesToFind {
		return minFeasibleNodesToFind
	}
	return n
}

func chunkSize(pieces, workers int) int {
	s := int(math.Sqrt(float64(pieces)))
	if r := pieces/workers + 1; s > r {
		s = r
	}
	return max(s, 1)
}

func (a *Algorithm) parallel(ctx context.Context, pieces int, f func(i int)) {
	if pieces <= 32 || a.Parallelism <= 1 {
		for i := 0; i < pieces && ctx.Err() == nil; i++ {
			f(i)
		}
		return
	}
	workqueue.ParallelizeUntil(ctx, a.Parallelism, pieces, f, workqueue.WithChunkSize(chunkSize(pieces, a.Parallelism)))
}

// Schedule picks a node for pod in snap: PreFilter, Filter (stopping once
// enough feasible nodes are found, starting where the last cycle stopped),
// PreScore and Score, then the best node with random tie-break. A pod that
// fits nowhere gets a *fw.FitError.
func (a *Algorithm) Schedule(ctx context.Context, pod *fw.PodInfo, snap *fw.Snapshot) (ScheduleResult, error) {
	if len(snap.Nodes) == 0 {
		return ScheduleResult{}, ErrNoNodesAvailable
	}
	state := fw.NewCycleState()
	feasible, diagnosis, err := a.findNodesThatFit(ctx, state, pod, snap)
	if err != nil {
		return ScheduleResult{}, err
	}
	evaluated := len(feasible) + len(diagnosis.NodeToStatus)
	if len(feasible) == 0 {
		return ScheduleResult{}, &fw.FitError{Pod: pod.Pod, NumAllNodes: len(snap.Nodes), Diagnosis: diagnosis}
	}
	if len(feasible) == 1 {
		return ScheduleResult{SuggestedHost: feasible[0].Name(), EvaluatedNodes: evaluated, FeasibleNodes: 1}, nil
	}
	scores, err := a.prioritize(ctx, state, pod, snap, feasible)
	if err != nil {
		return ScheduleResult{}, err
	}
	return ScheduleResult{SuggestedHost: a.selectHost(scores), EvaluatedNodes: evaluated, FeasibleNodes: len(feasible)}, nil
}

func (a *Algorithm) findNodesThatFit(ctx context.Context, state *fw.CycleState, pod *fw.PodInfo, snap *fw.Snapshot) ([]*fw.NodeInfo, fw.Diagnosis, error) {
	diagnosis := fw.Diagnosis{NodeToStatus: map[string]*fw.Status{}, UnschedulablePlugins: map[string]bool{}}
	for _, p := range a.Profile.PreFilter {
		st := p.PreFilter(state, pod, snap)
		switch {
		case st.Code() == fw.Skip:
			state.SkipFilter[p.Name()] = true
		case st.IsRejected():
			diagnosis.PreFilterMsg = st.Message()
			diagnosis.UnschedulablePlugins[p.Name()] = true
			for _, n := range snap.Nodes {
				diagnosis.NodeToStatus[n.Name()] = st.WithPlugin(p.Name())
			}
			return nil, diagnosis, nil
		case !st.IsSuccess():
			return nil, diagnosis, fmt.Errorf("running PreFilter plugin %q: %w", p.Name(), st.AsError())
		}
	}
	filters := make([]fw.FilterPlugin, 0, len(a.Profile.Filter))
	for _, p := range a.Profile.Filter {
		if !state.SkipFilter[p.Name()] {
			filters = append(filters, p)
		}
	}
	all := len(snap.Nodes)
	toFind := a.NumFeasibleNodesToFind(all)
	feasible := make([]*fw.NodeInfo, toFind)
	var found, processed atomic.Int32
	var mu sync.Mutex
	var firstErr error
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := a.nextStartNodeIndex % all
	a.parallel(ctx, all, func(i int) {
		n := snap.Nodes[(start+i)%all]
		failed := a.filterNode(state, pod, n, filters)
		if failed == nil {
			k := found.Add(1)
			if int(k) > toFind {
				cancel()
				found.Add(-1)
				return
			}
			processed.Add(1)
			feasible[k-1] = n
			return
		}
		processed.Add(1)
		mu.Lock()
		defer mu.Unlock()
		if failed.Code() == fw.Error {
			if firstErr == nil {
				firstErr = fmt.Errorf("running Filter plugin %q on node %q: %w", failed.Plugin(), n.Name(), failed.AsError())
			}
			cancel()
			return
		}
		diagnosis.NodeToStatus[n.Name()] = failed
		diagnosis.UnschedulablePlugins[failed.Plugin()] = true
	})
	if firstErr != nil {
		return nil, diagnosis, firstErr
	}
	a.nextStartNodeIndex = (start + int(processed.Load())) % all
	return feasible[:found.Load()], diagnosis, nil
}

// filterNode runs the filters on n and returns the first failure, nil if
// all pass. With pods nominated to n it runs them twice, as upstream's
// RunFilterPluginsWithNominatedPods: with those pods counted (they will run
// there), then without (what they bring must not be what lets the pod in).
func (a *Algorithm) filterNode(state *fw.CycleState, pod *fw.PodInfo, n *fw.NodeInfo, filters []fw.FilterPlugin) *fw.Status {
	if a.Nominated != nil {
		if nominated := a.Nominated(n.Name(), pod.Pod); len(nominated) > 0 {
			with := n.Clone()
			for _, p := range nominated {
				with.AddPod(p)
			}
			if st := runFilters(state, pod, with, filters); st != nil {
				return st
			}
		}
	}
	return runFilters(state, pod, n, filters)
}

func runFilters(state *fw.CycleState, pod *fw.PodInfo, n *fw.NodeInfo, filters []fw.FilterPlugin) *fw.Status {
	for _, f := range filters {
		if st := f.Filter(state, pod, n); !st.IsSuccess() {
			return st.WithPlugin(f.Name())
		}
	}
	return nil
}

func (a *Algorithm) prioritize(ctx context.Context, state *fw.CycleState, pod *fw.PodInfo, snap *fw.Snapshot, feasible []*fw.NodeInfo) ([]fw.NodeScore, error) {
	for _, p := range a.Profile.PreScore {
		st := p.PreScore(state, pod, snap, feasible)
		switch {
		case st.Code() == fw.Skip:
			state.SkipScore[p.Name()] = true
		case !st.IsSuccess():
			return nil, fmt.Errorf("running PreScore plugin %q: %w", p.Name(), st.AsError())
		}
	}
	var plugins []WeightedScorePlugin
	for _, p := range a.Profile.Score {
		if !state.SkipScore[p.Plugin.Name()] {
			plugins = append(plugins, p)
		}
	}
	perPlugin := make([][]fw.NodeScore, len(plugins))
	for i := range plugins {
		perPlugin[i] = make([]fw.NodeScore, len(feasible))
	}
	var mu sync.Mutex
	var firstErr error
	a.parallel(ctx, len(feasible), func(j int) {
		n := feasible[j]
		for i, p := range plugins {
			s, st := p.Plugin.Score(state, pod, n)
			if !st.IsSuccess() {
				mu.Lock()
				if firstErr == nil {
					firstErr = fmt.Errorf("running Score plugin %q on node %q: %w", p.Plugin.Name(), n.Name(), st.AsError())
				}
				mu.Unlock()
				return
			}
			perPlugin[i][j] = fw.NodeScore{Name: n.Name(), Score: s}
		}
	})
	if firstErr != nil {
		return nil, firstErr
	}
	total := make([]fw.NodeScore, len(feasible))
	for j, n := range feasible {
		total[j].Name = n.Name()
	}
	for i, p := range plugins {
		if norm, ok := p.Plugin.(fw.ScoreNormalizer); ok {
			if st := norm.NormalizeScore(state, pod, perPlugin[i]); !st.IsSuccess() {
				return nil, fmt.Errorf("normalizing scores of plugin %q: %w", p.Plugin.Name(), st.AsError())
			}
		}
		for j := range total {
			total[j].Score += perPlugin[i][j].Score * p.Weight
		}
	}
	return total, nil
}

// selectHost returns the best-scored node, choosing uniformly among ties.
func (a *Algorithm) selectHost(scores []fw.NodeScore) string {
	best := scores[0]
	ties := 1
	for _, s := range scores[1:] {
		switch {
		case s.Score > best.Score:
			best, ties = s, 1
		case s.Score == best.Score:
			ties++
			if a.Rand.IntN(ties) == 0 {
				best = s
			}
		}
	}
	return best.Name
}
