// Package controllerref decides which objects a controller owns, adopts and
// releases through their controller ownerReference (upstream's
// ControllerRefManager semantics), and builds the strategic-merge patches
// that adopt and release them.
package controllerref

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Claim is the result of Plan: which candidates the owner already owns,
// which orphans it should adopt, and which of its objects it should release.
type Claim[T metav1.Object] struct {
	Owned   []T
	Adopt   []T
	Release []T
}

// Plan sorts candidates for owner, whose selector is sel:
//   - controlled by owner and matching: owned;
//   - controlled by owner and not matching: released, unless the owner is
//     being deleted (then ignored);
//   - controlled by another owner: ignored;
//   - orphans that match, are not being deleted and are in the owner's
//     namespace: adopted, unless the owner is being deleted.
func Plan[T metav1.Object](owner metav1.Object, sel labels.Selector, candidates []T) Claim[T] {
	var c Claim[T]
	ownerDeleting := owner.GetDeletionTimestamp() != nil
	for _, obj := range candidates {
		matches := sel.Matches(labels.Set(obj.GetLabels()))
		if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
			if ref.UID != owner.GetUID() {
				continue
			}
			switch {
			case matches:
				c.Owned = append(c.Owned, obj)
			case !ownerDeleting:
				c.Release = append(c.Release, obj)
			}
			continue
		}
		if ownerDeleting || !matches || obj.GetDeletionTimestamp() != nil {
			continue
		}
		if owner.GetNamespace() != "" && obj.GetNamespace() != owner.GetNamespace() {
			continue
		}
		c.Adopt = append(c.Adopt, obj)
	}
	return c
}

// NewControllerRef returns the controller ownerReference of owner (kind gvk),
// with blockOwnerDeletion set as upstream controllers set it.
func NewControllerRef(owner metav1.Object, gvk schema.GroupVersionKind) *metav1.OwnerReference {
	return metav1.NewControllerRef(owner, gvk)
}

type patchRef struct {
	APIVersion         string    `json:"apiVersion,omitempty"`
	Kind               string    `json:"kind,omitempty"`
	Name               string    `json:"name,omitempty"`
	UID                types.UID `json:"uid"`
	Controller         *bool     `json:"controller,omitempty"`
	BlockOwnerDeletion *bool     `json:"blockOwnerDeletion,omitempty"`
	Patch              string    `json:"$patch,omitempty"`
}

type patchMeta struct {
	OwnerReferences []patchRef `json:"ownerReferences"`
	UID             types.UID  `json:"uid"`
}

type patchBody struct {
	Metadata patchMeta `json:"metadata"`
}

// AdoptPatch is the strategic-merge patch that makes owner the controller of
// the object whose UID is objUID (the UID doubles as a precondition: the
// patch fails if the object was replaced by another of the same name).
func AdoptPatch(owner metav1.Object, gvk schema.GroupVersionKind, objUID types.UID) []byte {
	t := true
	b, _ := json.Marshal(patchBody{Metadata: patchMeta{
		OwnerReferences: []patchRef{{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: owner.GetName(), UID: owner.GetUID(), Controller: &t, BlockOwnerDeletion: &t}},
		UID:             objUID,
	}})
	return b
}

// ReleasePatch is the strategic-merge patch removing ownerUID's reference
// from the object whose UID is objUID.
func ReleasePatch(ownerUID, objUID types.UID) []byte {
	b, _ := json.Marshal(patchBody{Metadata: patchMeta{
		OwnerReferences: []patchRef{{UID: ownerUID, Patch: "delete"}},
		UID:             objUID,
	}})
	return b
}
