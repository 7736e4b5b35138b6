package namespace

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// State is what one look at a namespace sees: the namespace, read live.
type State struct {
	Namespace *corev1.Namespace
}

// Plan is what one pass over a namespace does.
type Plan struct {
	// Skip: it is not being deleted.
	Skip bool
	// MarkTerminating: set status.phase Terminating first.
	MarkTerminating bool
	// Finalized: this controller's finalizer token is gone already;
	// nothing more to do. Otherwise the content is deleted, and the token
	// removed once nothing remains.
	Finalized bool
}

// plan decides a pass over a namespace: one not being deleted is left
// alone; one being deleted is marked Terminating, then emptied and
// finalized unless its finalizers are gone already.
func plan(st State) Plan {
	ns := st.Namespace
	if ns.DeletionTimestamp == nil {
		return Plan{Skip: true}
	}
	return Plan{
		MarkTerminating: ns.Status.Phase != corev1.NamespaceTerminating,
		Finalized:       len(ns.Spec.Finalizers) == 0,
	}
}

// contentWait is how long to wait before looking again at a namespace
// whose content should be gone in estimate seconds: half of that, and a
// second.
func contentWait(estimate int64) time.Duration {
	return time.Duration(estimate/2+1) * time.Second
}
