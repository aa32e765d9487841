package statefulset

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"

	"berth/controlplane/controller/controllerref"
)

// Patch is the data of set's ControllerRevision: a strategic merge patch
// replacing spec.template with set's (upstream's form, which `kubectl
// rollout undo` applies to the stateful set).
func Patch(set *appsv1.StatefulSet) ([]byte, error) {
	b, err := json.Marshal(set.Spec.Template)
	if err != nil {
		return nil, err
	}
	var template map[string]any
	if err := json.Unmarshal(b, &template); err != nil {
		return nil, err
	}
	template["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": template}})
}

// HashRevision is upstream's hash of a revision's data with the collision
// count (FNV-32 of the bytes, then the count in decimal, safe-encoded).
func HashRevision(data []byte, collisionCount *int32) string {
	h := fnv.New32()
	h.Write(data)
	if collisionCount != nil {
		h.Write([]byte(strconv.FormatInt(int64(*collisionCount), 10)))
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// RevisionName is <set>-<hash>, the set's name cut to 223 characters.
func RevisionName(set string, hash string) string {
	if len(set) > 223 {
		set = set[:223]
	}
	return set + "-" + hash
}

// NewRevision is the ControllerRevision recording set's template as
// revision number, named for its hash with collisionCount, labelled with
// the template's labels and the hash, with set's annotations.
func NewRevision(set *appsv1.StatefulSet, number int64, collisionCount int32) (*appsv1.ControllerRevision, error) {
	patch, err := Patch(set)
	if err != nil {
		return nil, err
	}
	hash := HashRevision(patch, &collisionCount)
	lbls := map[string]string{}
	for k, v := range set.Spec.Template.Labels {
		lbls[k] = v
	}
	lbls[appsv1.ControllerRevisionHashLabelKey] = hash
	ann := map[string]string{}
	for k, v := range set.Annotations {
		ann[k] = v
	}
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name: RevisionName(set.Name, hash), Namespace: set.Namespace, Labels: lbls, Annotations: ann,
			OwnerReferences: []metav1.OwnerReference{*controllerref.NewControllerRef(set, Kind)},
		},
		Data:     runtime.RawExtension{Raw: patch},
		Revision: number,
	}, nil
}

// ApplyRevision returns set with the template recorded in rev.
func ApplyRevision(set *appsv1.StatefulSet, rev *appsv1.ControllerRevision) (*appsv1.StatefulSet, error) {
	var data struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(rev.Data.Raw, &data); err != nil {
		return nil, fmt.Errorf("revision %s: %w", rev.Name, err)
	}
	out := set.DeepCopy()
	out.Spec.Template = data.Spec.Template
	return out, nil
}

// SortRevisions orders revisions by number, then creation, then name.
func SortRevisions(revs []*appsv1.ControllerRevision) {
	slices.SortStableFunc(revs, func(a, b *appsv1.ControllerRevision) int {
		if a.Revision != b.Revision {
			if a.Revision < b.Revision {
				return -1
			}
			return 1
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
		}
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
}

// Revisions is what a sync decides about set's history.
type Revisions struct {
	// Update is the revision of set's template: an existing one, or (when
	// Create) one to create.
	Update *appsv1.ControllerRevision
	// Create: Update does not exist yet.
	Create bool
	// Renumber: Update exists but is not the newest; it gets number
	// Update.Revision (a rollback to an earlier template).
	Renumber bool
	// Current is the revision named by status.currentRevision, or Update.
	// When it is Update it is resolved after Update is created.
	Current *appsv1.ControllerRevision
}

// DecideRevisions picks set's current and update revisions from its
// revisions (sorted by SortRevisions), as upstream: the update revision is
// the newest one with set's template, renumbered to the top when an older
// one matches, created when none does.
func DecideRevisions(set *appsv1.StatefulSet, revs []*appsv1.ControllerRevision) (Revisions, error) {
	next := int64(1)
	if n := len(revs); n > 0 {
		next = revs[n-1].Revision + 1
	}
	cc := int32(0)
	if set.Status.CollisionCount != nil {
		cc = *set.Status.CollisionCount
	}
	cand, err := NewRevision(set, next, cc)
	if err != nil {
		return Revisions{}, err
	}
	var out Revisions
	var lastEqual *appsv1.ControllerRevision
	for _, r := range revs {
		if bytes.Equal(r.Data.Raw, cand.Data.Raw) {
			lastEqual = r
		}
	}
	switch {
	case lastEqual != nil && lastEqual == revs[len(revs)-1]:
		out.Update = lastEqual
	case lastEqual != nil:
		upd := lastEqual.DeepCopy()
		upd.Revision = next
		out.Update, out.Renumber = upd, true
	default:
		out.Update, out.Create = cand, true
	}
	for _, r := range revs {
		if r.Name == set.Status.CurrentRevision {
			out.Current = r
			break
		}
	}
	if out.Current == nil {
		out.Current = out.Update
	}
	return out, nil
}

// ToTruncate returns the revisions beyond set's revisionHistoryLimit, oldest
// first, sparing the current and update revisions and those a pod runs.
func ToTruncate(set *appsv1.StatefulSet, revs []*appsv1.ControllerRevision, pods []*corev1.Pod, current, update string) []*appsv1.ControllerRevision {
	live := map[string]bool{current: true, update: true}
	for _, p := range pods {
		live[Revision(p)] = true
	}
	var hist []*appsv1.ControllerRevision
	for _, r := range revs {
		if !live[r.Name] {
			hist = append(hist, r)
		}
	}
	limit := 10
	if set.Spec.RevisionHistoryLimit != nil {
		limit = int(*set.Spec.RevisionHistoryLimit)
	}
	if limit < 0 || len(hist) <= limit {
		return nil
	}
	return hist[:len(hist)-limit]
}
