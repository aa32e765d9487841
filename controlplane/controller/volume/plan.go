package volume

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	storagehelpers "k8s.io/component-helpers/storage/volume"
)

// Event reasons the controller records, as upstream's persistentvolume
// controller names them.
const (
	ReasonFailedBinding        = "FailedBinding"
	ReasonVolumeMismatch       = "VolumeMismatch"
	ReasonWaitForFirstConsumer = "WaitForFirstConsumer"
	ReasonExternalProvisioning = "ExternalProvisioning"
	ReasonProvisioningFailed   = "ProvisioningFailed"
	ReasonClaimLost            = "ClaimLost"
	ReasonClaimMisbound        = "ClaimMisbound"
	ReasonVolumeFailedDelete   = "VolumeFailedDelete"
	ReasonVolumeFailedRecycle  = "VolumeFailedRecycle"
)

// Messages of the events upstream's controller records with the same words.
const (
	MsgNoVolumeNoClass      = "no persistent volumes available for this claim and no storage class is set"
	MsgWaitForFirstConsumer = "waiting for first consumer to be created before binding"
)

// Event is an Event to record on the object a plan is about.
type Event struct {
	Type, Reason, Message string
}

// ClaimAction is what syncing a claim does.
type ClaimAction int

// The claim actions.
const (
	// ClaimSetPhase only sets the claim's phase (Pending or Lost).
	ClaimSetPhase ClaimAction = iota
	// ClaimBind binds the claim and ClaimPlan.Volume to each other.
	ClaimBind
	// ClaimProvision asks ClaimPlan.Provisioner for a volume: the claim gets
	// the storage-provisioner annotations and stays Pending.
	ClaimProvision
)

// ClaimPlan is the decision for one claim.
type ClaimPlan struct {
	Action ClaimAction
	// Phase is the claim phase for ClaimSetPhase and ClaimProvision.
	Phase corev1.PersistentVolumeClaimPhase
	// Volume is the volume to bind for ClaimBind.
	Volume *corev1.PersistentVolume
	// Provisioner is the StorageClass provisioner for ClaimProvision.
	Provisioner string
	// Event, when set, is recorded on the claim.
	Event *Event
	// Err is an inconsistency that makes the sync fail (and retry).
	Err error
}

// ClaimState is what PlanClaim decides from: the claim, every volume, and
// the claim's StorageClass (nil when the claim names none, or it does not
// exist).
type ClaimState struct {
	Claim   *corev1.PersistentVolumeClaim
	Volumes []*corev1.PersistentVolume
	Class   *storagev1.StorageClass
}

func (s ClaimState) volume(name string) *corev1.PersistentVolume {
	for _, v := range s.Volumes {
		if v.Name == name {
			return v
		}
	}
	return nil
}

func pending(ev *Event) ClaimPlan {
	return ClaimPlan{Action: ClaimSetPhase, Phase: corev1.ClaimPending, Event: ev}
}

func lost(reason, msg string) ClaimPlan {
	return ClaimPlan{Action: ClaimSetPhase, Phase: corev1.ClaimLost, Event: &Event{corev1.EventTypeWarning, reason, msg}}
}

// DelayBinding reports whether a claim of class waits for its first
// consumer (volumeBindingMode WaitForFirstConsumer).
func DelayBinding(class *storagev1.StorageClass) bool {
	return class != nil && class.VolumeBindingMode != nil && *class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer
}

// PlanClaim decides what syncing a claim does, as upstream's controller
// does: a claim never bound before gets the smallest matching volume (or
// the one it names, or the one pre-bound to it), else it asks its class's
// provisioner (after the scheduler picked a node, for WaitForFirstConsumer),
// else it stays Pending with an event saying why; a claim that was bound
// (pv.kubernetes.io/bind-completed) and lost its volume becomes Lost.
func PlanClaim(s ClaimState) ClaimPlan {
	claim := s.Claim
	if metav1.HasAnnotation(claim.ObjectMeta, storagehelpers.AnnBindCompleted) {
		return planBoundClaim(s)
	}
	if claim.Spec.VolumeName == "" {
		delay := DelayBinding(s.Class)
		if v := FindBestMatch(claim, s.Volumes, delay); v != nil {
			return ClaimPlan{Action: ClaimBind, Volume: v}
		}
		class := storagehelpers.GetPersistentVolumeClaimClass(claim)
		switch {
		case delay && !storagehelpers.IsDelayBindingProvisioning(claim):
			return pending(&Event{corev1.EventTypeNormal, ReasonWaitForFirstConsumer, MsgWaitForFirstConsumer})
		case class != "" && s.Class == nil:
			return pending(&Event{corev1.EventTypeWarning, ReasonProvisioningFailed, fmt.Sprintf("storageclass.storage.k8s.io %q not found", class)})
		case class != "":
			return ClaimPlan{Action: ClaimProvision, Phase: corev1.ClaimPending, Provisioner: s.Class.Provisioner,
				Event: &Event{corev1.EventTypeNormal, ReasonExternalProvisioning, fmt.Sprintf(
					"Waiting for a volume to be created either by the external provisioner '%s' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered.", s.Class.Provisioner)}}
		default:
			return pending(&Event{corev1.EventTypeNormal, ReasonFailedBinding, MsgNoVolumeNoClass})
		}
	}
	// The user asked for a specific volume.
	v := s.volume(claim.Spec.VolumeName)
	switch {
	case v == nil:
		return pending(nil) // it may be created later
	case v.Spec.ClaimRef == nil:
		if err := CheckVolumeSatisfiesClaim(v, claim); err != nil {
			return pending(&Event{corev1.EventTypeWarning, ReasonVolumeMismatch, fmt.Sprintf("Cannot bind to requested volume %q: %s", v.Name, err)})
		}
		return ClaimPlan{Action: ClaimBind, Volume: v}
	case storagehelpers.IsVolumeBoundToClaim(v, claim):
		return ClaimPlan{Action: ClaimBind, Volume: v}
	case metav1.HasAnnotation(claim.ObjectMeta, storagehelpers.AnnBoundByController):
		p := pending(nil)
		p.Err = fmt.Errorf("claim %s/%s: volume %q is already claimed by %s/%s", claim.Namespace, claim.Name, v.Name, v.Spec.ClaimRef.Namespace, v.Spec.ClaimRef.Name)
		return p
	default:
		return pending(&Event{corev1.EventTypeWarning, ReasonFailedBinding, fmt.Sprintf("volume %q already bound to a different claim.", v.Name)})
	}
}

func planBoundClaim(s ClaimState) ClaimPlan {
	claim := s.Claim
	if claim.Spec.VolumeName == "" {
		return lost(ReasonClaimLost, "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!")
	}
	v := s.volume(claim.Spec.VolumeName)
	switch {
	case v == nil:
		return lost(ReasonClaimLost, "Bound claim has lost its PersistentVolume. Data on the volume is lost!")
	case v.Spec.ClaimRef == nil, v.Spec.ClaimRef.UID == claim.UID:
		return ClaimPlan{Action: ClaimBind, Volume: v}
	default:
		return lost(ReasonClaimMisbound, "Two claims are bound to the same volume, this one is bound incorrectly")
	}
}

// FindBestMatch returns the volume the controller binds claim to, or nil:
// a volume pre-bound to the claim wins; otherwise, among the Available
// volumes whose access modes include the claim's, of the claim's class and
// volume mode, matching its selector and at least as large as its request,
// those with the fewest access modes are preferred and then the smallest.
// With delayBinding (WaitForFirstConsumer) only a pre-bound volume is
// returned: the scheduler picks the others.
func FindBestMatch(claim *corev1.PersistentVolumeClaim, volumes []*corev1.PersistentVolume, delayBinding bool) *corev1.PersistentVolume {
	// Group by number of access modes, as upstream's access-mode index does:
	// a claim for RWO is bound to an RWO volume before an RWO+RWX one.
	groups := map[int][]*corev1.PersistentVolume{}
	var sizes []int
	for _, v := range volumes {
		if storagehelpers.IsVolumeBoundToClaim(v, claim) {
			// Pre-bound to this claim: it wins whatever its access modes.
			if m, err := storagehelpers.FindMatchingVolume(claim, []*corev1.PersistentVolume{v}, nil, nil, delayBinding, false); err == nil && m != nil {
				return m
			}
			continue
		}
		if !storagehelpers.CheckAccessModes(claim, v) {
			continue
		}
		n := len(v.Spec.AccessModes)
		if _, ok := groups[n]; !ok {
			sizes = append(sizes, n)
		}
		groups[n] = append(groups[n], v)
	}
	sort.Ints(sizes)
	for _, n := range sizes {
		m, err := storagehelpers.FindMatchingVolume(claim, groups[n], nil, nil, delayBinding, false)
		if err == nil && m != nil {
			return m
		}
	}
	return nil
}

// CheckVolumeSatisfiesClaim checks a volume a claim names: capacity, class,
// access modes and volume mode must fit (the selector is not applied to a
// volume the user named, as upstream).
func CheckVolumeSatisfiesClaim(v *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim) error {
	req := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	have := v.Spec.Capacity[corev1.ResourceStorage]
	if have.Cmp(req) < 0 {
		return fmt.Errorf("requested PV is too small")
	}
	if storagehelpers.GetPersistentVolumeClass(v) != storagehelpers.GetPersistentVolumeClaimClass(claim) {
		return fmt.Errorf("storageClassName does not match")
	}
	if storagehelpers.CheckVolumeModeMismatches(&claim.Spec, &v.Spec) {
		return fmt.Errorf("incompatible volumeMode")
	}
	if !storagehelpers.CheckAccessModes(claim, v) {
		return fmt.Errorf("incompatible accessMode")
	}
	return nil
}

// VolumeAction is what syncing a volume does.
type VolumeAction int

// The volume actions.
const (
	// VolumeSetPhase sets VolumePlan.Phase (with Message).
	VolumeSetPhase VolumeAction = iota
	// VolumeWaitClaim leaves the volume alone and syncs VolumePlan.Claim,
	// which is to finish the binding.
	VolumeWaitClaim
	// VolumeUnbind removes the claim reference (a controller-made binding)
	// or just its UID (a user's pre-binding) and makes the volume Available.
	VolumeUnbind
	// VolumeNothing leaves the volume as it is.
	VolumeNothing
)

// VolumePlan is the decision for one volume.
type VolumePlan struct {
	Action VolumeAction
	Phase  corev1.PersistentVolumePhase
	// Message is the status message with the phase.
	Message string
	// Claim is the namespace/name key of the claim to sync.
	Claim string
	// Event, when set, is recorded on the volume.
	Event *Event
}

// PlanVolume decides what syncing a volume does, given the claim its
// claimRef names (nil if none or missing). A volume whose claim is gone is
// Released and its reclaim policy applies: Retain keeps it Released; Delete
// waits for the provisioner that made it (pv.kubernetes.io/provisioned-by)
// to delete it, and fails a volume no provisioner made, since berth has no
// in-tree deleters; Recycle is not supported.
func PlanVolume(v *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim) VolumePlan {
	ref := v.Spec.ClaimRef
	if ref == nil {
		return VolumePlan{Action: VolumeSetPhase, Phase: corev1.VolumeAvailable}
	}
	key := ref.Namespace + "/" + ref.Name
	if ref.UID == "" {
		// Pre-bound by the user; the claim's sync binds it.
		return VolumePlan{Action: VolumeSetPhase, Phase: corev1.VolumeAvailable, Claim: key}
	}
	if claim != nil && claim.UID != ref.UID {
		claim = nil // the claim was deleted and another made with its name
	}
	switch {
	case claim == nil:
		return planReleased(v)
	case claim.Spec.VolumeName == "":
		return VolumePlan{Action: VolumeWaitClaim, Claim: key}
	case claim.Spec.VolumeName == v.Name:
		return VolumePlan{Action: VolumeSetPhase, Phase: corev1.VolumeBound}
	case metav1.HasAnnotation(v.ObjectMeta, storagehelpers.AnnDynamicallyProvisioned) && v.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimDelete:
		// Provisioned for a claim that got bound elsewhere: not needed.
		return planReleased(v)
	default:
		return VolumePlan{Action: VolumeUnbind, Phase: corev1.VolumeAvailable}
	}
}

func planReleased(v *corev1.PersistentVolume) VolumePlan {
	switch v.Spec.PersistentVolumeReclaimPolicy {
	case corev1.PersistentVolumeReclaimDelete:
		if metav1.HasAnnotation(v.ObjectMeta, storagehelpers.AnnDynamicallyProvisioned) {
			if v.Status.Phase == corev1.VolumeReleased || v.Status.Phase == corev1.VolumeFailed {
				return VolumePlan{Action: VolumeNothing} // the provisioner deletes it
			}
			return VolumePlan{Action: VolumeSetPhase, Phase: corev1.VolumeReleased}
		}
		msg := "error getting deleter volume plugin for volume \"" + v.Name + "\": no deletable volume plugin matched"
		return VolumePlan{Action: VolumeSetPhase, Phase: corev1.VolumeFailed, Message: msg,
			Event: &Event{corev1.EventTypeWarning, ReasonVolumeFailedDelete, msg}}
	case corev1.PersistentVolumeReclaimRecycle:
		msg := "No recycler plugin found for the volume!"
		return VolumePlan{Action: VolumeSetPhase, Phase: corev1.VolumeFailed, Message: msg,
			Event: &Event{corev1.EventTypeWarning, ReasonVolumeFailedRecycle, msg}}
	default: // Retain
		if v.Status.Phase == corev1.VolumeReleased || v.Status.Phase == corev1.VolumeFailed {
			return VolumePlan{Action: VolumeNothing}
		}
		return VolumePlan{Action: VolumeSetPhase, Phase: corev1.VolumeReleased}
	}
}
