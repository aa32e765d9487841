package framework

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Diagnosis is why a pod fit no node.
type Diagnosis struct {
	// NodeToStatus has each rejected node's status (from the first plugin
	// that rejected it).
	NodeToStatus map[string]*Status
	// PreFilterMsg is set when a PreFilter plugin rejected the pod outright.
	PreFilterMsg string
	// UnschedulablePlugins names the plugins that rejected the pod.
	UnschedulablePlugins map[string]bool
	// PostFilterMsg is what preemption said, appended to the message.
	PostFilterMsg string
}

// FitError reports that no node fits the pod.
type FitError struct {
	Pod         *v1.Pod
	NumAllNodes int
	Diagnosis   Diagnosis
}

// Error formats the message as kube-scheduler does: "0/N nodes are
// available:" then either the PreFilter message or the histogram of filter
// reasons ("<count> <reason>" sorted, comma-separated), ending in a period.
func (f *FitError) Error() string {
	if f.Diagnosis.PostFilterMsg != "" {
		return f.reasons() + " " + f.Diagnosis.PostFilterMsg
	}
	return f.reasons()
}

func (f *FitError) reasons() string {
	msg := fmt.Sprintf("0/%d nodes are available:", f.NumAllNodes)
	if f.Diagnosis.PreFilterMsg != "" {
		return msg + " " + f.Diagnosis.PreFilterMsg + "."
	}
	counts := map[string]int{}
	for _, st := range f.Diagnosis.NodeToStatus {
		for _, r := range st.Reasons() {
			counts[r]++
		}
	}
	if len(counts) == 0 {
		return msg
	}
	parts := make([]string, 0, len(counts))
	for r, n := range counts {
		parts = append(parts, fmt.Sprintf("%d %s", n, r))
	}
	sort.Strings(parts)
	return msg + " " + strings.Join(parts, ", ") + "."
}
