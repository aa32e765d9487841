package provisioner

import (
	"fmt"
	"maps"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"berth/internal/errdefs"
)

// NodeSegments returns the node's topology segment for the driver's
// topology keys (as its CSINode lists them): each key with the value of the
// node label of that name. A missing label is an error: the driver has not
// (yet) labelled the node.
func NodeSegments(node *corev1.Node, keys []string) (map[string]string, error) {
	seg := map[string]string{}
	for _, k := range keys {
		v, ok := node.Labels[k]
		if !ok {
			return nil, fmt.Errorf("node %s has no label %q (a topology key of the driver): %w", node.Name, k, errdefs.ErrUnavailable)
		}
		seg[k] = v
	}
	return seg, nil
}

// Requirement returns the accessibility requirements of CreateVolume: with
// a selected node (WaitForFirstConsumer), that node's segment is both
// requisite and preferred; otherwise the class's allowedTopologies (each
// term expanded into every combination of its values), or none.
func Requirement(class *storagev1.StorageClass, selected map[string]string) *csi.TopologyRequirement {
	if len(selected) > 0 {
		t := &csi.Topology{Segments: maps.Clone(selected)}
		return &csi.TopologyRequirement{Requisite: []*csi.Topology{t}, Preferred: []*csi.Topology{t}}
	}
	var topos []*csi.Topology
	for _, term := range class.AllowedTopologies {
		combos := []map[string]string{{}}
		for _, e := range term.MatchLabelExpressions {
			var next []map[string]string
			for _, c := range combos {
				for _, v := range e.Values {
					n := maps.Clone(c)
					n[e.Key] = v
					next = append(next, n)
				}
			}
			combos = next
		}
		for _, c := range combos {
			if len(c) > 0 {
				topos = append(topos, &csi.Topology{Segments: c})
			}
		}
	}
	if len(topos) == 0 {
		return nil
	}
	slices.SortFunc(topos, func(a, b *csi.Topology) int { return compareSegments(a.Segments, b.Segments) })
	topos = slices.CompactFunc(topos, func(a, b *csi.Topology) bool { return maps.Equal(a.Segments, b.Segments) })
	return &csi.TopologyRequirement{Requisite: topos, Preferred: topos}
}

func compareSegments(a, b map[string]string) int {
	ka, kb := slices.Sorted(maps.Keys(a)), slices.Sorted(maps.Keys(b))
	for i := 0; i < len(ka) && i < len(kb); i++ {
		if ka[i] != kb[i] {
			if ka[i] < kb[i] {
				return -1
			}
			return 1
		}
		if a[ka[i]] != b[kb[i]] {
			if a[ka[i]] < b[kb[i]] {
				return -1
			}
			return 1
		}
	}
	return len(ka) - len(kb)
}

// Matches reports whether a topology segment satisfies the requirement's
// requisite list (no requirement matches everything).
func Matches(req *csi.TopologyRequirement, seg map[string]string) bool {
	if req == nil || len(req.Requisite) == 0 {
		return true
	}
	for _, t := range req.Requisite {
		ok := true
		for k, v := range t.Segments {
			if seg[k] != v {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}
