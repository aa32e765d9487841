package daemonset

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"berth/controlplane/controller/controllerref"
	"berth/controlplane/controller/deployment"
)

// Patch is the data of ds's ControllerRevision: a strategic merge patch
// replacing spec.template with ds's (upstream's form, which `kubectl
// rollout undo` applies to the daemon set).
func Patch(ds *appsv1.DaemonSet) ([]byte, error) {
	b, err := json.Marshal(ds)
	if err != nil {
		return nil, err
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	template, _ := raw["spec"].(map[string]any)["template"].(map[string]any)
	if template == nil {
		return nil, fmt.Errorf("daemon set %s/%s has no spec.template", ds.Namespace, ds.Name)
	}
	template["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": template}})
}

// Hash is the hash of ds's current template with its collision count (the
// controller-revision-hash label of its pods and revision).
func Hash(ds *appsv1.DaemonSet) string {
	return deployment.ComputeHash(&ds.Spec.Template, ds.Status.CollisionCount)
}

// NewRevision is the ControllerRevision recording ds's template as revision
// number revision: named <ds>-<hash>, labelled as ds's pods are, with ds's
// annotations (kubernetes.io/change-cause for rollout history).
func NewRevision(ds *appsv1.DaemonSet, hash string, revision int64) (*appsv1.ControllerRevision, error) {
	patch, err := Patch(ds)
	if err != nil {
		return nil, err
	}
	lbls := map[string]string{}
	for k, v := range ds.Spec.Template.Labels {
		lbls[k] = v
	}
	lbls[HashLabel] = hash
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name: ds.Name + "-" + hash, Namespace: ds.Namespace, Labels: lbls, Annotations: ds.Annotations,
			OwnerReferences: []metav1.OwnerReference{*controllerref.NewControllerRef(ds, Kind)},
		},
		Data:     runtime.RawExtension{Raw: patch},
		Revision: revision,
	}, nil
}

// History is the plan for ds's revisions.
type History struct {
	// Current is the revision matching ds's template (nil: create one).
	Current *appsv1.ControllerRevision
	// Duplicates also match and are deleted (Current has the highest number).
	Duplicates []*appsv1.ControllerRevision
	// Old are the others.
	Old []*appsv1.ControllerRevision
	// Next is the number the current revision should have: one above the
	// old ones.
	Next int64
}

// SortHistory sorts revisions (those ds owns) into current, duplicate and
// old ones by comparing their data with ds's Patch.
func SortHistory(ds *appsv1.DaemonSet, revisions []*appsv1.ControllerRevision) (History, error) {
	patch, err := Patch(ds)
	if err != nil {
		return History{}, err
	}
	var h History
	var current []*appsv1.ControllerRevision
	for _, r := range revisions {
		if bytes.Equal(r.Data.Raw, patch) {
			current = append(current, r)
		} else {
			h.Old = append(h.Old, r)
		}
	}
	for _, r := range h.Old {
		h.Next = max(h.Next, r.Revision)
	}
	h.Next++
	for _, r := range current {
		if h.Current == nil || r.Revision >= h.Current.Revision {
			h.Current = r
		}
	}
	for _, r := range current {
		if r != h.Current {
			h.Duplicates = append(h.Duplicates, r)
		}
	}
	return h, nil
}

// ToPrune returns the old revisions beyond ds's revisionHistoryLimit that
// no live pod was made from, oldest first.
func ToPrune(ds *appsv1.DaemonSet, old []*appsv1.ControllerRevision, pods []*corev1.Pod) []*appsv1.ControllerRevision {
	limit := 10
	if ds.Spec.RevisionHistoryLimit != nil {
		limit = int(*ds.Spec.RevisionHistoryLimit)
	}
	excess := len(old) - limit
	if excess <= 0 {
		return nil
	}
	live := map[string]bool{}
	for _, p := range pods {
		if h := p.Labels[HashLabel]; h != "" {
			live[h] = true
		}
	}
	sorted := slices.Clone(old)
	slices.SortFunc(sorted, func(a, b *appsv1.ControllerRevision) int {
		if a.Revision != b.Revision {
			return int(a.Revision - b.Revision)
		}
		return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
	})
	var out []*appsv1.ControllerRevision
	for _, r := range sorted {
		if len(out) == excess {
			break
		}
		if !live[r.Labels[HashLabel]] {
			out = append(out, r)
		}
	}
	return out
}
