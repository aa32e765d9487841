package garbagecollector

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Finalizers the garbage collector serves (set by the apiserver on DELETE
// with propagationPolicy Orphan or Foreground).
const (
	FinalizerOrphan     = metav1.FinalizerOrphanDependents // "orphan"
	FinalizerForeground = metav1.FinalizerDeleteDependents // "foregroundDeletion"
)

// OwnerState is what is known of one owner an object references.
type OwnerState int

// Owner states.
const (
	// OwnerSolid exists and is not being deleted in the foreground.
	OwnerSolid OwnerState = iota
	// OwnerAbsent does not exist (or exists with another UID).
	OwnerAbsent
	// OwnerWaiting is being deleted in the foreground: it waits for its
	// dependents to go.
	OwnerWaiting
)

// DependentAction is what to do with an object that has owners.
type DependentAction struct {
	// RemoveRefs are the ownerReferences (by owner UID) to drop from the
	// object: the absent and waiting owners when a solid owner remains.
	RemoveRefs []types.UID
	// Unblock asks to clear blockOwnerDeletion on the object's
	// ownerReferences first: an owner waits for it while one of its own
	// dependents waits for it, a circle of foreground deletions no one
	// would ever finish.
	Unblock bool
	// Delete asks to delete the object with Policy.
	Delete bool
	Policy metav1.DeletionPropagation
}

// Dependents is what is known of an object's own dependents.
type Dependents struct {
	// Any: the object has dependents.
	Any bool
	// Waiting: one of them is itself being deleted in the foreground.
	Waiting bool
}

// DecideDependent is upstream's attemptToDeleteItem decision for an object
// with refs whose owners are in the given states: an object with a solid
// owner stays (only references to absent or waiting owners are dropped);
// one whose owners are all absent or waiting is deleted — in the
// foreground if it has dependents of its own and some owner waits for it
// (so chains of blocking owners unwind; unblocking its owners first when a
// dependent waits too, as upstream breaks circles), otherwise with the
// policy its own finalizers ask for (orphan, foreground) or in the
// background.
func DecideDependent(refs []metav1.OwnerReference, states map[types.UID]OwnerState, finalizers []string, deps Dependents) DependentAction {
	var solid, gone, waiting []types.UID
	for _, r := range refs {
		switch states[r.UID] {
		case OwnerSolid:
			solid = append(solid, r.UID)
		case OwnerAbsent:
			gone = append(gone, r.UID)
		case OwnerWaiting:
			waiting = append(waiting, r.UID)
		}
	}
	switch {
	case len(refs) == 0:
		return DependentAction{}
	case len(solid) > 0:
		return DependentAction{RemoveRefs: append(gone, waiting...)}
	case len(waiting) > 0 && deps.Any:
		return DependentAction{Unblock: deps.Waiting, Delete: true, Policy: metav1.DeletePropagationForeground}
	case slices.Contains(finalizers, FinalizerOrphan):
		return DependentAction{Delete: true, Policy: metav1.DeletePropagationOrphan}
	case slices.Contains(finalizers, FinalizerForeground):
		return DependentAction{Delete: true, Policy: metav1.DeletePropagationForeground}
	}
	return DependentAction{Delete: true, Policy: metav1.DeletePropagationBackground}
}

// ForegroundDone reports whether an owner in foreground deletion may lose
// its foregroundDeletion finalizer: none of its remaining dependents
// blocks it (ownerReference with blockOwnerDeletion=true).
func ForegroundDone(owner types.UID, dependents [][]metav1.OwnerReference) bool {
	for _, refs := range dependents {
		for _, r := range refs {
			if r.UID == owner && r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion {
				return false
			}
		}
	}
	return true
}

// unblocked returns refs with blockOwnerDeletion cleared.
func unblocked(refs []metav1.OwnerReference) []metav1.OwnerReference {
	out := slices.Clone(refs)
	for i := range out {
		if out[i].BlockOwnerDeletion != nil && *out[i].BlockOwnerDeletion {
			out[i].BlockOwnerDeletion = new(bool)
		}
	}
	return out
}

// withoutRefs returns refs minus those to the given owners.
func withoutRefs(refs []metav1.OwnerReference, drop []types.UID) []metav1.OwnerReference {
	out := []metav1.OwnerReference{}
	for _, r := range refs {
		if !slices.Contains(drop, r.UID) {
			out = append(out, r)
		}
	}
	return out
}

// withoutFinalizer returns fs minus f.
func withoutFinalizer(fs []string, f string) []string {
	out := []string{}
	for _, x := range fs {
		if x != f {
			out = append(out, x)
		}
	}
	return out
}
