package statefulset

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"plainkube.dev/plainkube/internal/api/podutil"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// ActionType is what an Action does.
type ActionType int

const (
	// Create makes the pod of Ordinal (and its claims) on Revision.
	Create ActionType = iota
	// Delete removes Pod.
	Delete
)

// Action is one step plan asks for.
type Action struct {
	Type    ActionType
	Ordinal int
	// Revision is the revision name a created pod gets.
	Revision string
	Pod      *corev1.Pod
}

// State is what plan decides from, read from the informer caches (and
// the set's revisions).
type State struct {
	SetName  string
	Replicas int
	// Start is spec.ordinals.start.
	Start    int
	Parallel bool
	// RollingUpdate is the update strategy's type (else OnDelete);
	// Partition is its partition.
	RollingUpdate bool
	Partition     int
	// CurrentRevision and UpdateRevision are revision names.
	CurrentRevision, UpdateRevision string
	MinReadySeconds                 int32
	// Pods are the pods the set controls.
	Pods []*corev1.Pod
	Now  time.Time
}

// Ordinal parses <set>-<ordinal>; false if name is not of that form.
func Ordinal(set, name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, set+"-")
	if !ok || rest == "" || (len(rest) > 1 && rest[0] == '0') {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// PodName is the name of the set's pod of ordinal.
func PodName(set string, ordinal int) string { return set + "-" + strconv.Itoa(ordinal) }

// Revision is the revision name pod is on.
func Revision(pod *corev1.Pod) string { return pod.Labels[appsv1.ControllerRevisionHashLabelKey] }

func terminating(p *corev1.Pod) bool { return p.DeletionTimestamp != nil }

func finished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded
}

// RunningAndReady: the pod runs and its Ready condition is true.
func RunningAndReady(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodRunning && podutil.IsReady(p)
}

// Available: running and ready for minReadySeconds at now.
func Available(p *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	return p.Status.Phase == corev1.PodRunning && podutil.IsAvailable(p, minReadySeconds, now)
}

func healthy(p *corev1.Pod, in *State) bool {
	return !terminating(p) && Available(p, in.MinReadySeconds, in.Now)
}

// NewPodRevision is the revision a (re)created pod of ordinal gets, as
// upstream's newVersionedStatefulSetPod: below the partition of a rolling
// update the current revision, else the update revision.
func NewPodRevision(in *State, ordinal int) string {
	if in.RollingUpdate && ordinal < in.Partition {
		return in.CurrentRevision
	}
	return in.UpdateRevision
}

// Plan is the actions to take now, in order.
type Plan []Action

// plan is the next step of upstream's StatefulSet update, level-based: the
// actions to take now given the pods there are. With OrderedReady
// (Parallel false) it returns at most one action and none while a pod it
// would have to wait for is not yet healthy.
func plan(in State) Plan {
	var acts Plan
	monotonic := !in.Parallel
	replicas := make([]*corev1.Pod, in.Replicas)
	var condemned []*corev1.Pod
	for _, p := range in.Pods {
		ord, ok := Ordinal(in.SetName, p.Name)
		if !ok {
			continue
		}
		if ord >= in.Start && ord < in.Start+in.Replicas {
			replicas[ord-in.Start] = p
		} else {
			condemned = append(condemned, p)
		}
	}
	sort.Slice(condemned, func(i, j int) bool {
		a, _ := Ordinal(in.SetName, condemned[i].Name)
		b, _ := Ordinal(in.SetName, condemned[j].Name)
		return a > b
	})

	// Create missing replicas, replace finished ones, wait for unhealthy ones.
	for i, p := range replicas {
		ord := in.Start + i
		switch {
		case p == nil:
			acts = append(acts, Action{Type: Create, Ordinal: ord, Revision: NewPodRevision(&in, ord)})
			if monotonic {
				return acts
			}
		case finished(p) && !terminating(p):
			acts = append(acts, Action{Type: Delete, Ordinal: ord, Pod: p})
			if monotonic {
				return acts
			}
		case !healthy(p, &in):
			if monotonic {
				return acts
			}
		}
	}

	// Scale down, highest ordinal first. OrderedReady waits while a
	// condemned pod is unhealthy, unless it is the first unhealthy pod (the
	// lowest of the replicas, else of the condemned): an unhealthy set does
	// not shrink past its broken pods.
	var firstUnhealthy *corev1.Pod
	for _, p := range replicas {
		if p != nil && !healthy(p, &in) {
			firstUnhealthy = p
			break
		}
	}
	for i := len(condemned) - 1; i >= 0 && firstUnhealthy == nil; i-- {
		if !healthy(condemned[i], &in) {
			firstUnhealthy = condemned[i]
		}
	}
	for _, p := range condemned {
		ord, _ := Ordinal(in.SetName, p.Name)
		if terminating(p) {
			if monotonic {
				return acts
			}
			continue
		}
		if monotonic && !healthy(p, &in) && p != firstUnhealthy {
			return acts
		}
		acts = append(acts, Action{Type: Delete, Ordinal: ord, Pod: p})
		if monotonic {
			return acts
		}
	}
	if len(acts) > 0 || !in.RollingUpdate {
		return acts
	}

	// Rolling update: the highest ordinal not on the update revision, one
	// at a time, each once all above it are healthy on the update revision.
	for i := len(replicas) - 1; i >= 0; i-- {
		ord := in.Start + i
		if ord < in.Partition {
			break
		}
		p := replicas[i]
		if p == nil {
			return acts
		}
		if Revision(p) != in.UpdateRevision && !terminating(p) {
			return append(acts, Action{Type: Delete, Ordinal: ord, Pod: p})
		}
		if !healthy(p, &in) {
			return acts
		}
	}
	return acts
}

// ComputeStatus is the status for the set's pods, as upstream's: replicas
// counts pods that exist, current/updated those on each revision (not
// being deleted); a rolling update (not OnDelete) whose pods all run the
// update revision and are ready makes it the current revision.
func ComputeStatus(set *appsv1.StatefulSet, pods []*corev1.Pod, currentRev, updateRev string, now time.Time) appsv1.StatefulSetStatus {
	st := appsv1.StatefulSetStatus{ObservedGeneration: set.Generation, CollisionCount: set.Status.CollisionCount,
		CurrentRevision: currentRev, UpdateRevision: updateRev, Conditions: set.Status.Conditions}
	for _, p := range pods {
		if _, ok := Ordinal(set.Name, p.Name); !ok {
			continue
		}
		st.Replicas++
		if RunningAndReady(p) && !terminating(p) {
			st.ReadyReplicas++
			if Available(p, set.Spec.MinReadySeconds, now) {
				st.AvailableReplicas++
			}
		}
		if !terminating(p) {
			if Revision(p) == currentRev {
				st.CurrentReplicas++
			}
			if Revision(p) == updateRev {
				st.UpdatedReplicas++
			}
		}
	}
	want := int32(1)
	if set.Spec.Replicas != nil {
		want = *set.Spec.Replicas
	}
	if set.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType &&
		st.UpdatedReplicas == want && st.ReadyReplicas == want && st.Replicas == want {
		st.CurrentRevision = updateRev
		st.CurrentReplicas = st.UpdatedReplicas
	}
	return st
}
