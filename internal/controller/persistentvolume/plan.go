package persistentvolume

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/storage/volume"

	"plainkube.dev/plainkube/internal/api/localpath"
)

// Event is an event to record on the claim or volume a plan is about.
type Event struct {
	Type, Reason, Message string
}

// ClaimState is what a claim's sync looks at.
type ClaimState struct {
	Claim *corev1.PersistentVolumeClaim
	// Volumes are the cached volumes that can matter to the claim: the
	// one it names, those claimed for it and the unclaimed ones.
	Volumes []*corev1.PersistentVolume
	// Class is the claim's StorageClass (nil: none asked for, or not
	// found: ClassErr says which).
	Class    *storagev1.StorageClass
	ClassErr error
	// UnscheduledPods name the claim's pods not yet scheduled, for the
	// WaitForFirstConsumer event.
	UnscheduledPods []string
	// DefaultClass is the default StorageClass, looked up only for an
	// unbound claim that names no class (nil: there is none).
	DefaultClass *storagev1.StorageClass
}

// ClaimAction is what a claim's plan does.
type ClaimAction int

const (
	// ClaimNone: nothing to write (Event may still be set).
	ClaimNone ClaimAction = iota
	// ClaimPending: status phase Pending, no capacity or access modes.
	ClaimPending
	// ClaimBind: bind Volume and the claim to each other.
	ClaimBind
	// ClaimProvision: annotate the claim for Provisioner (once), then
	// ExternalProvisioning; the claim stays Pending.
	ClaimProvision
	// ClaimLost: status phase Lost.
	ClaimLost
	// ClaimAssignClass: set the claim's storageClassName to ClassName
	// (upstream's RetroactiveDefaultStorageClass); its next sync goes on.
	ClaimAssignClass
)

// ClaimPlan is what to do for a claim.
type ClaimPlan struct {
	Action      ClaimAction
	Volume      *corev1.PersistentVolume
	Provisioner string
	ClassName   string
	Event       *Event
	// Err is reported as the sync's error (retried with backoff).
	Err error
}

// planClaim decides a claim's sync as upstream's binder does.
func planClaim(st ClaimState) ClaimPlan {
	claim := st.Claim
	if _, bound := claim.Annotations[volume.AnnBindCompleted]; bound {
		return planBoundClaim(st)
	}
	if claim.Spec.VolumeName == "" {
		return planUnnamedClaim(st)
	}
	// The claim names its volume.
	pv := findVolume(st.Volumes, claim.Spec.VolumeName)
	switch {
	case pv == nil:
		return ClaimPlan{Action: ClaimPending} // may be created later
	case pv.Spec.ClaimRef == nil:
		if why := satisfies(pv, claim); why != "" {
			return ClaimPlan{Action: ClaimPending, Event: &Event{corev1.EventTypeWarning, "VolumeMismatch",
				fmt.Sprintf("Cannot bind to requested volume %q: %s", pv.Name, why)}}
		}
		return ClaimPlan{Action: ClaimBind, Volume: pv}
	case volume.IsVolumeBoundToClaim(pv, claim):
		return ClaimPlan{Action: ClaimBind, Volume: pv}
	}
	ev := &Event{corev1.EventTypeWarning, "FailedBinding", fmt.Sprintf("volume %q already bound to a different claim.", pv.Name)}
	if _, ok := claim.Annotations[volume.AnnBoundByController]; ok {
		return ClaimPlan{Event: ev, Err: fmt.Errorf("invalid binding of claim %q to volume %q: volume already claimed by %q",
			claim.Namespace+"/"+claim.Name, pv.Name, pv.Spec.ClaimRef.Namespace+"/"+pv.Spec.ClaimRef.Name)}
	}
	return ClaimPlan{Action: ClaimPending, Event: ev}
}

func planUnnamedClaim(st ClaimState) ClaimPlan {
	claim := st.Claim
	delay := st.Class != nil && st.Class.VolumeBindingMode != nil && *st.Class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer
	pv, err := bestMatch(claim, st.Volumes, delay)
	if err != nil {
		return ClaimPlan{Err: err}
	}
	if pv != nil {
		return ClaimPlan{Action: ClaimBind, Volume: pv}
	}
	// A claim that names no class, left without one because no default
	// existed when it was created, gets the default once there is one.
	if st.DefaultClass != nil && !volume.PersistentVolumeClaimHasClass(claim) {
		return ClaimPlan{Action: ClaimAssignClass, ClassName: st.DefaultClass.Name}
	}
	_, selected := claim.Annotations[volume.AnnSelectedNode]
	switch {
	case delay && !selected:
		ev := &Event{corev1.EventTypeNormal, "WaitForFirstConsumer", "waiting for first consumer to be created before binding"}
		switch len(st.UnscheduledPods) {
		case 0:
		case 1:
			ev = &Event{corev1.EventTypeNormal, "WaitForPodScheduled", fmt.Sprintf("waiting for pod %s to be scheduled", st.UnscheduledPods[0])}
		default:
			ev = &Event{corev1.EventTypeNormal, "WaitForPodScheduled", fmt.Sprintf("waiting for pods %s to be scheduled", strings.Join(st.UnscheduledPods, ","))}
		}
		return ClaimPlan{Action: ClaimPending, Event: ev}
	case volume.GetPersistentVolumeClaimClass(claim) != "":
		if st.Class == nil {
			msg := fmt.Sprintf("storageclass.storage.k8s.io %q not found", volume.GetPersistentVolumeClaimClass(claim))
			if st.ClassErr != nil {
				msg = st.ClassErr.Error()
			}
			return ClaimPlan{Event: &Event{corev1.EventTypeWarning, "ProvisioningFailed", msg}}
		}
		return ClaimPlan{Action: ClaimProvision, Provisioner: st.Class.Provisioner, Event: &Event{corev1.EventTypeNormal, "ExternalProvisioning",
			fmt.Sprintf("Waiting for a volume to be created either by the external provisioner '%s' "+
				"or manually by the system administrator. If volume creation is delayed, please verify that "+
				"the provisioner is running and correctly registered.", st.Class.Provisioner)}}
	}
	return ClaimPlan{Action: ClaimPending, Event: &Event{corev1.EventTypeNormal, "FailedBinding", "no persistent volumes available for this claim and no storage class is set"}}
}

func planBoundClaim(st ClaimState) ClaimPlan {
	claim := st.Claim
	if claim.Spec.VolumeName == "" {
		return ClaimPlan{Action: ClaimLost, Event: &Event{corev1.EventTypeWarning, "ClaimLost", "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!"}}
	}
	pv := findVolume(st.Volumes, claim.Spec.VolumeName)
	switch {
	case pv == nil:
		return ClaimPlan{Action: ClaimLost, Event: &Event{corev1.EventTypeWarning, "ClaimLost", "Bound claim has lost its PersistentVolume. Data on the volume is lost!"}}
	case pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID == claim.UID:
		return ClaimPlan{Action: ClaimBind, Volume: pv} // (re)bind; nothing written if all is set
	}
	return ClaimPlan{Action: ClaimLost, Event: &Event{corev1.EventTypeWarning, "ClaimMisbound", "Two claims are bound to the same volume, this one is bound incorrectly"}}
}

func findVolume(volumes []*corev1.PersistentVolume, name string) *corev1.PersistentVolume {
	for _, pv := range volumes {
		if pv.Name == name {
			return pv
		}
	}
	return nil
}

// VolumeState is what a volume's sync looks at.
type VolumeState struct {
	Volume *corev1.PersistentVolume
	// Claim is the claim the volume's claimRef names, if it exists with
	// the reference's UID (nil: it is gone).
	Claim *corev1.PersistentVolumeClaim
}

// VolumeAction is what a volume's plan does.
type VolumeAction int

const (
	// VolumeNone: nothing to write.
	VolumeNone VolumeAction = iota
	// VolumePhase: set the status phase to Phase.
	VolumePhase
	// VolumeUnbind: undo the controller's binding (claimRef removed) or
	// a user's (its UID cleared), then Available.
	VolumeUnbind
	// VolumeSyncClaim: the claim's sync finishes the binding.
	VolumeSyncClaim
	// VolumeDelete: delete the volume (reclaim Delete, provisioned by
	// plainkube's local-path provisioner), after setting Phase if given.
	VolumeDelete
)

// VolumePlan is what to do for a volume.
type VolumePlan struct {
	Action VolumeAction
	Phase  corev1.PersistentVolumePhase
	// Event goes with the phase change (or alone).
	Event *Event
}

// planVolume decides a volume's sync as upstream's binder does.
func planVolume(st VolumeState) VolumePlan {
	pv := st.Volume
	ref := pv.Spec.ClaimRef
	if ref == nil || ref.UID == "" {
		// Unused, or pre-bound to a claim whose sync will bind it.
		return phase(pv, corev1.VolumeAvailable)
	}
	claim := st.Claim
	switch {
	case claim == nil:
		return reclaim(pv)
	case claim.Spec.VolumeName == "":
		if volume.CheckVolumeModeMismatches(&claim.Spec, &pv.Spec) {
			return VolumePlan{Event: &Event{corev1.EventTypeWarning, "VolumeMismatch",
				fmt.Sprintf("Cannot bind PersistentVolume to requested PersistentVolumeClaim %q due to incompatible volumeMode.", claim.Name)}}
		}
		return VolumePlan{Action: VolumeSyncClaim}
	case claim.Spec.VolumeName == pv.Name:
		return phase(pv, corev1.VolumeBound)
	}
	// The claim is bound to another volume.
	if _, ok := pv.Annotations[volume.AnnDynamicallyProvisioned]; ok && pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimDelete {
		return reclaim(pv) // provisioned for it, no longer needed
	}
	return VolumePlan{Action: VolumeUnbind}
}

// phase sets the volume's phase if it is not already.
func phase(pv *corev1.PersistentVolume, p corev1.PersistentVolumePhase) VolumePlan {
	if pv.Status.Phase == p {
		return VolumePlan{}
	}
	return VolumePlan{Action: VolumePhase, Phase: p}
}

// reclaim is a released volume's fate under its reclaim policy. A volume
// that failed keeps its phase, for the user to see.
func reclaim(pv *corev1.PersistentVolume) VolumePlan {
	released := corev1.VolumeReleased
	if pv.Status.Phase == corev1.VolumeReleased || pv.Status.Phase == corev1.VolumeFailed {
		released = ""
	}
	failed := func(reason, msg string) VolumePlan {
		if pv.Status.Phase == corev1.VolumeFailed {
			return VolumePlan{}
		}
		return VolumePlan{Action: VolumePhase, Phase: corev1.VolumeFailed, Event: &Event{corev1.EventTypeWarning, reason, msg}}
	}
	switch pv.Spec.PersistentVolumeReclaimPolicy {
	case corev1.PersistentVolumeReclaimRetain:
		return phase(pv, orPhase(released, pv.Status.Phase))
	case corev1.PersistentVolumeReclaimRecycle:
		return failed("VolumeFailedRecycle", "No recycler plugin found for the volume!")
	case corev1.PersistentVolumeReclaimDelete:
		by, provisioned := pv.Annotations[volume.AnnDynamicallyProvisioned]
		switch {
		case by == localpath.Provisioner:
			if pv.DeletionTimestamp != nil {
				return phase(pv, orPhase(released, pv.Status.Phase))
			}
			return VolumePlan{Action: VolumeDelete, Phase: released}
		case provisioned:
			// Its provisioner deletes it.
			return phase(pv, orPhase(released, pv.Status.Phase))
		}
		return failed("VolumeFailedDelete", fmt.Sprintf("error getting deleter volume plugin for volume %q: no deletable volume plugin matched", pv.Name))
	}
	return failed("VolumeUnknownReclaimPolicy", "Volume has unrecognized PersistentVolumeReclaimPolicy")
}

func orPhase(p, otherwise corev1.PersistentVolumePhase) corev1.PersistentVolumePhase {
	if p == "" {
		return otherwise
	}
	return p
}

// boundVolume is pv bound to claim: claimRef set (with the claim's UID),
// bound-by-controller if the binding is the controller's, phase Bound.
// changed reports a spec or metadata change, statusChanged a phase change.
func boundVolume(pv *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim) (out *corev1.PersistentVolume, changed, statusChanged bool) {
	out = pv.DeepCopy()
	ref := pv.Spec.ClaimRef
	if ref == nil || ref.Name != claim.Name || ref.Namespace != claim.Namespace || ref.UID != claim.UID {
		if !volume.IsVolumeBoundToClaim(pv, claim) {
			metav1.SetMetaDataAnnotation(&out.ObjectMeta, volume.AnnBoundByController, "yes")
		}
		out.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
			Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID, ResourceVersion: claim.ResourceVersion}
		changed = true
	}
	if out.Status.Phase != corev1.VolumeBound {
		out.Status.Phase = corev1.VolumeBound
		out.Status.Message, out.Status.Reason = "", ""
		statusChanged = true
	}
	return out, changed, statusChanged
}

// boundClaim is claim bound to pv: spec.volumeName (bound-by-controller if
// the controller chose it), bind-completed, and the Bound status with the
// volume's capacity and access modes.
func boundClaim(claim *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) (out *corev1.PersistentVolumeClaim, changed, statusChanged bool) {
	out = claim.DeepCopy()
	if claim.Spec.VolumeName != pv.Name {
		out.Spec.VolumeName = pv.Name
		metav1.SetMetaDataAnnotation(&out.ObjectMeta, volume.AnnBoundByController, "yes")
		changed = true
	}
	if _, ok := claim.Annotations[volume.AnnBindCompleted]; !ok {
		metav1.SetMetaDataAnnotation(&out.ObjectMeta, volume.AnnBindCompleted, "yes")
		changed = true
	}
	statusChanged = setClaimStatus(out, corev1.ClaimBound, pv)
	return out, changed, statusChanged
}

// setClaimStatus sets a claim's phase, and its capacity and access modes
// from pv (nil: none); it reports a change.
func setClaimStatus(claim *corev1.PersistentVolumeClaim, p corev1.PersistentVolumeClaimPhase, pv *corev1.PersistentVolume) bool {
	changed := false
	if claim.Status.Phase != p {
		claim.Status.Phase, changed = p, true
	}
	if pv == nil {
		if claim.Status.AccessModes != nil || claim.Status.Capacity != nil {
			claim.Status.AccessModes, claim.Status.Capacity, changed = nil, nil, true
		}
		return changed
	}
	if !slices.Equal(claim.Status.AccessModes, pv.Spec.AccessModes) {
		claim.Status.AccessModes, changed = pv.Spec.AccessModes, true
	}
	want, has := pv.Spec.Capacity[corev1.ResourceStorage]
	if cur, ok := claim.Status.Capacity[corev1.ResourceStorage]; has && (!ok || cur.Cmp(want) != 0) {
		if claim.Status.Capacity == nil {
			claim.Status.Capacity = corev1.ResourceList{}
		}
		claim.Status.Capacity[corev1.ResourceStorage], changed = want, true
	}
	return changed
}

// provisionerAnnotated is claim with the storage-provisioner annotations
// naming provisioner (changed false: they already did).
func provisionerAnnotated(claim *corev1.PersistentVolumeClaim, provisioner string) (*corev1.PersistentVolumeClaim, bool) {
	if claim.Annotations[volume.AnnStorageProvisioner] == provisioner && claim.Annotations[volume.AnnBetaStorageProvisioner] == provisioner {
		return claim, false
	}
	out := claim.DeepCopy()
	metav1.SetMetaDataAnnotation(&out.ObjectMeta, volume.AnnStorageProvisioner, provisioner)
	metav1.SetMetaDataAnnotation(&out.ObjectMeta, volume.AnnBetaStorageProvisioner, provisioner)
	return out, true
}

// unboundVolume undoes a binding: the controller's entirely, a user's
// pre-binding only to its claim's name.
func unboundVolume(pv *corev1.PersistentVolume) *corev1.PersistentVolume {
	out := pv.DeepCopy()
	if _, ok := pv.Annotations[volume.AnnBoundByController]; ok {
		out.Spec.ClaimRef = nil
		delete(out.Annotations, volume.AnnBoundByController)
		if len(out.Annotations) == 0 {
			out.Annotations = nil
		}
	} else {
		out.Spec.ClaimRef.UID = ""
	}
	return out
}
