package garbagecollector

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// references are an object's owner references sorted by what a live read
// of each owner found.
type references struct {
	// solid owners exist and are not deleting their dependents.
	solid []metav1.OwnerReference
	// dangling owners are gone, or replaced by an object with another UID.
	dangling []metav1.OwnerReference
	// waiting owners are being deleted in the foreground: they have
	// deletionTimestamp and the foregroundDeletion finalizer.
	waiting []metav1.OwnerReference
}

// addExisting places one existing owner (its live metadata) in solid or
// waiting.
func (r *references) addExisting(ref metav1.OwnerReference, owner metav1.Object) {
	if owner.GetDeletionTimestamp() != nil && slices.Contains(owner.GetFinalizers(), metav1.FinalizerDeleteDependents) {
		r.waiting = append(r.waiting, ref)
	} else {
		r.solid = append(r.solid, ref)
	}
}

type actionKind int

const (
	actNone actionKind = iota
	// actRemoveReferences patches the references to removeUIDs away.
	actRemoveReferences
	// actDelete deletes the object with policy, after making its own
	// owner references non-blocking if unblock is set.
	actDelete
	// actRemoveFinalizer takes foregroundDeletion off an owner whose
	// blocking dependents are all gone.
	actRemoveFinalizer
	// actAttemptDependents queues the dependents that still block an
	// owner being deleted in the foreground.
	actAttemptDependents
)

// State is what the collector knows of one object when it looks at it:
// whether it is deleting its dependents (and which of them still block
// it), else its owner references as live reads of the owners classified
// them, its own finalizers and its dependents in the graph.
type State struct {
	DeletingDependents bool
	Blocking           []DependentInfo
	Refs               references
	Finalizers         []string
	Dependents         []DependentInfo
}

// Plan is what the collector does with the object.
type Plan struct {
	kind       actionKind
	removeUIDs []types.UID
	policy     metav1.DeletionPropagation
	unblock    bool
	// attempt are the dependents to look at (actAttemptDependents).
	attempt []types.UID
}

// plan decides for one object: an owner deleting its dependents loses its
// foregroundDeletion finalizer once none blocks it, else its blocking
// dependents (those not themselves deleting theirs) are looked at; any
// other object keeps its owners, drops references to owners gone or
// waiting, or is deleted (see planReferences).
func plan(st State) Plan {
	if st.DeletingDependents {
		if len(st.Blocking) == 0 {
			return Plan{kind: actRemoveFinalizer}
		}
		p := Plan{kind: actAttemptDependents}
		for _, d := range st.Blocking {
			if !d.DeletingDependents {
				p.attempt = append(p.attempt, d.Identity.UID)
			}
		}
		return p
	}
	return planReferences(st.Refs, st.Finalizers, st.Dependents)
}

// planReferences is what to do with an object that has owner references,
// is not itself waiting for its dependents, and whose references classify
// as refs. finalizers are the object's own; dependents its dependents in
// the graph.
func planReferences(refs references, finalizers []string, dependents []DependentInfo) Plan {
	switch {
	case len(refs.solid) > 0:
		if len(refs.dangling) == 0 && len(refs.waiting) == 0 {
			return Plan{kind: actNone}
		}
		// Keep the object; drop references to owners that are gone, and
		// to owners waiting for their dependents, which would otherwise
		// wait for this object forever.
		var uids []types.UID
		for _, r := range refs.dangling {
			uids = append(uids, r.UID)
		}
		for _, r := range refs.waiting {
			uids = append(uids, r.UID)
		}
		return Plan{kind: actRemoveReferences, removeUIDs: uids}
	case len(refs.waiting) > 0 && len(dependents) > 0:
		// An owner waits for this object, which has dependents of its
		// own: delete it in the foreground so that they go first. If a
		// dependent is itself deleting its dependents there may be a
		// cycle; unblock this object's references so that the owner
		// does not wait on it.
		unblock := slices.ContainsFunc(dependents, func(d DependentInfo) bool { return d.DeletingDependents })
		return Plan{kind: actDelete, policy: metav1.DeletePropagationForeground, unblock: unblock}
	default:
		// No owner is left: collect the object, honouring a policy its
		// own finalizers already ask for.
		policy := metav1.DeletePropagationBackground
		switch {
		case slices.Contains(finalizers, metav1.FinalizerOrphanDependents):
			policy = metav1.DeletePropagationOrphan
		case slices.Contains(finalizers, metav1.FinalizerDeleteDependents):
			policy = metav1.DeletePropagationForeground
		}
		return Plan{kind: actDelete, policy: policy}
	}
}
