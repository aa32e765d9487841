package framework

import (
	"strings"

	"k8s.io/apimachinery/pkg/labels"
)

// Snapshot is the cluster as one scheduling cycle sees it: read-only while
// the cycle runs.
type Snapshot struct {
	// Nodes lists the nodes (those with a Node object) in a stable order.
	Nodes  []*NodeInfo
	byName map[string]*NodeInfo
	index  map[string]int
	// HavePodsWithAffinity and HavePodsWithRequiredAntiAffinity list the
	// nodes with such pods, so affinity plugins skip the rest.
	HavePodsWithAffinity             []*NodeInfo
	HavePodsWithRequiredAntiAffinity []*NodeInfo
	// NamespaceLabels returns a namespace's labels (for affinity terms'
	// namespaceSelector); nil means no namespace has labels.
	NamespaceLabels func(namespace string) labels.Set
}

// NewSnapshot builds a snapshot of nodes in the given order and computes
// the nodes' image states.
func NewSnapshot(nodes []*NodeInfo) *Snapshot {
	s := &Snapshot{}
	s.SetNodes(nodes)
	return s
}

// SetNodes replaces the node list and recomputes the derived lists and
// image states.
func (s *Snapshot) SetNodes(nodes []*NodeInfo) {
	s.Nodes = s.Nodes[:0]
	s.byName = make(map[string]*NodeInfo, len(nodes))
	s.index = make(map[string]int, len(nodes))
	images := map[string]*ImageStateSummary{}
	for _, n := range nodes {
		if n.Node == nil {
			continue
		}
		s.index[n.Node.Name] = len(s.Nodes)
		s.Nodes = append(s.Nodes, n)
		s.byName[n.Node.Name] = n
		for _, img := range n.Node.Status.Images {
			seen := map[string]bool{}
			for _, name := range img.Names {
				name = NormalizedImageName(name)
				if seen[name] {
					continue
				}
				seen[name] = true
				st := images[name]
				if st == nil {
					st = &ImageStateSummary{Size: img.SizeBytes}
					images[name] = st
				}
				st.NumNodes++
			}
		}
	}
	for _, n := range s.Nodes {
		n.ImageStates = nil
		for _, img := range n.Node.Status.Images {
			for _, name := range img.Names {
				if n.ImageStates == nil {
					n.ImageStates = map[string]*ImageStateSummary{}
				}
				name = NormalizedImageName(name)
				n.ImageStates[name] = images[name]
			}
		}
	}
	s.RefreshAffinityLists()
}

// Replace swaps in a new NodeInfo for a node already in the snapshot whose
// Node object is unchanged (only its pods changed), keeping the image
// states; call RefreshAffinityLists after a batch of replacements. It
// reports false when the node is not in the snapshot.
func (s *Snapshot) Replace(n *NodeInfo) bool {
	i, ok := s.index[n.Name()]
	if !ok {
		return false
	}
	n.ImageStates = s.Nodes[i].ImageStates
	s.Nodes[i] = n
	s.byName[n.Name()] = n
	return true
}

// RefreshAffinityLists recomputes HavePodsWithAffinity and
// HavePodsWithRequiredAntiAffinity.
func (s *Snapshot) RefreshAffinityLists() {
	s.HavePodsWithAffinity = s.HavePodsWithAffinity[:0]
	s.HavePodsWithRequiredAntiAffinity = s.HavePodsWithRequiredAntiAffinity[:0]
	for _, n := range s.Nodes {
		if len(n.PodsWithAffinity) > 0 {
			s.HavePodsWithAffinity = append(s.HavePodsWithAffinity, n)
		}
		if len(n.PodsWithRequiredAntiAffinity) > 0 {
			s.HavePodsWithRequiredAntiAffinity = append(s.HavePodsWithRequiredAntiAffinity, n)
		}
	}
}

// Get returns the node named name, or nil.
func (s *Snapshot) Get(name string) *NodeInfo { return s.byName[name] }

// NamespaceLabelsOf returns the labels of a namespace (nil if unknown).
func (s *Snapshot) NamespaceLabelsOf(ns string) labels.Set {
	if s.NamespaceLabels == nil {
		return nil
	}
	return s.NamespaceLabels(ns)
}

// NormalizedImageName adds ":latest" to a name with neither tag nor digest,
// as node status reports images with tags.
func NormalizedImageName(name string) string {
	if strings.LastIndex(name, ":") <= strings.LastIndex(name, "/") && !strings.Contains(name, "@") {
		return name + ":latest"
	}
	return name
}
