package replicaset

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"plainkube.dev/plainkube/internal/api/podutil"
	"plainkube.dev/plainkube/internal/controller"
)

// State is what one reconcile of a workload looks at, read from the
// informer caches.
type State struct {
	Workload *workload
	// Pods are the pods of the workload's namespace.
	Pods []*corev1.Pod
	// Related are the pods of every workload with the same controller as
	// this one (a deployment's ReplicaSets), which the ranking of pods to
	// delete looks at; read only when pods are to be deleted.
	Related []*corev1.Pod
	// Manage: the workload's expectations are satisfied, so its replicas
	// may be managed.
	Manage bool
	// TracksTerminating: the kind's status has terminatingReplicas.
	TracksTerminating bool
	// Burst bounds the creates or deletes of one pass.
	Burst int
	Now   time.Time
}

// Plan is what one reconcile does: claims, then creates or deletes; the
// status follows from how they went (planStatus).
type Plan struct {
	// Adopt are matching orphans the workload takes; Release its pods
	// that stopped matching.
	Adopt, Release []*corev1.Pod
	// Create is how many pods to create (in slow-start batches).
	Create int
	// Delete are the pods to delete, ranked first by upstream's ordering.
	Delete []*corev1.Pod
	// Active are the active pods the workload controls once the claims are
	// made, Terminating its pods being deleted: what the status counts.
	Active, Terminating []*corev1.Pod
}

// plan claims the workload's pods and, if its expectations allow, creates
// or deletes the difference to its replicas (at most Burst).
func plan(st State) Plan {
	w := st.Workload
	var p Plan
	for _, pod := range st.Pods {
		if !podutil.IsActive(pod) {
			continue
		}
		switch controller.DecideClaim(w.obj, pod, w.selector.Matches(labels.Set(pod.Labels))) {
		case controller.KeepObject:
			p.Active = append(p.Active, pod)
		case controller.AdoptObject:
			p.Adopt = append(p.Adopt, pod)
			p.Active = append(p.Active, pod)
		case controller.ReleaseObject:
			p.Release = append(p.Release, pod)
		}
	}
	if st.TracksTerminating {
		for _, pod := range st.Pods {
			if podutil.IsTerminating(pod) && metav1.IsControlledBy(pod, w.obj) && w.selector.Matches(labels.Set(pod.Labels)) {
				p.Terminating = append(p.Terminating, pod)
			}
		}
	}
	if !st.Manage || w.obj.GetDeletionTimestamp() != nil {
		return p
	}
	switch diff := len(p.Active) - int(w.replicas); {
	case diff < 0:
		p.Create = min(-diff, st.Burst)
	case diff > 0:
		p.Delete = podsToDelete(p.Active, st.Related, min(diff, st.Burst), st.Now)
	}
	return p
}

// planStatus is the status once the plan's creates and deletes ended with
// manageErr (nil: all went well), whether it differs from the workload's,
// and when to look again: ready pods become available after
// minReadySeconds.
func planStatus(st State, p Plan, manageErr error) (s status, changed bool, requeueAfter time.Duration) {
	w := st.Workload
	s = calculateStatus(w, p.Active, p.Terminating, st.TracksTerminating, manageErr, st.Now)
	changed = !statusUnchanged(w, s)
	if changed {
		s.ObservedGeneration = w.obj.GetGeneration()
	}
	if manageErr == nil && w.minReadySeconds > 0 && s.ReadyReplicas == w.replicas && s.AvailableReplicas != w.replicas {
		requeueAfter = time.Duration(w.minReadySeconds) * time.Second
	}
	return s, changed, requeueAfter
}
