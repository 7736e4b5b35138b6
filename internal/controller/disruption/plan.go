package disruption

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	pdbhelper "k8s.io/component-helpers/apps/poddisruptionbudget"

	"plainkube.dev/plainkube/internal/api/podutil"
)

// DeletionTimeout is how long after an eviction recorded a pod in a
// budget's disruptedPods the pod is expected to be seen being deleted; an
// entry older than this is dropped and the pod counts again, as upstream's
// DeletionTimeout.
const DeletionTimeout = 2 * time.Minute

// State is what one reconcile of a budget knows.
type State struct {
	PDB *policyv1.PodDisruptionBudget
	// Pods are the pods the budget's selector matches; PodsErr is why they
	// could not be listed (an invalid selector).
	Pods    []*corev1.Pod
	PodsErr error
	// Scale is the sum of the scales of the pods' controllers, read only
	// when the budget's rule needs it (needsScale); ScaleErr is why it
	// could not be found.
	Scale    *Scale
	ScaleErr error
	Now      time.Time
}

// Scale is the denominator of a percentage rule or of maxUnavailable: the
// sum of the desired replicas of the controllers of the budget's pods,
// and the pods that have no controller.
type Scale struct {
	Expected  int32
	Unmanaged []string
}

// Plan is what a reconcile writes.
type Plan struct {
	// Status is the budget's new status; nil: the stored one is right.
	Status *policyv1.PodDisruptionBudgetStatus
	// RecheckAfter, if positive, is when an entry of disruptedPods expires.
	RecheckAfter time.Duration
	Events       []Event
}

// Event is an event to record about the budget (Pod nil) or a pod.
type Event struct {
	Pod     *corev1.Pod
	Type    string
	Reason  string
	Message string
}

// needsScale reports whether the budget's rule is relative to its
// controllers' scale: maxUnavailable, or minAvailable as a percentage.
func needsScale(spec *policyv1.PodDisruptionBudgetSpec) bool {
	return spec.MaxUnavailable != nil || spec.MinAvailable != nil && spec.MinAvailable.Type == intstr.String
}

// plan computes a budget's status from its pods, as upstream's disruption
// controller: on any failure the stored status is kept with
// disruptionsAllowed 0 and the SyncFailed reason.
func plan(st State) Plan {
	pdb := st.PDB
	var p Plan
	budgetEvent := func(typ, reason, msg string) {
		p.Events = append(p.Events, Event{Type: typ, Reason: reason, Message: msg})
	}
	if st.PodsErr != nil {
		budgetEvent(corev1.EventTypeWarning, "NoPods", fmt.Sprintf("Failed to get pods: %v", st.PodsErr))
		p.Status = failSafe(pdb, st.PodsErr, st.Now)
		return p
	}
	if len(st.Pods) == 0 {
		budgetEvent(corev1.EventTypeNormal, "NoPods", "No matching pods found")
	}
	expected, desired, err := expectedAndDesired(st)
	if err != nil {
		budgetEvent(corev1.EventTypeWarning, "CalculateExpectedPodCountFailed", fmt.Sprintf("Failed to calculate the number of expected pods: %v", err))
		p.Status = failSafe(pdb, err, st.Now)
		return p
	}
	if st.Scale != nil && len(st.Scale.Unmanaged) > 0 {
		budgetEvent(corev1.EventTypeWarning, "UnmanagedPods", fmt.Sprintf("Pods selected by this PodDisruptionBudget (selector: %v) were found "+
			"to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in undefined behavior. "+
			"To account for these pods please set \".spec.minAvailable\" "+
			"field of the PDB to an integer value.", pdb.Spec.Selector))
	}
	disrupted, recheck, expired := disruptedPods(st.Pods, pdb.Status.DisruptedPods, st.Now)
	for _, pod := range expired {
		p.Events = append(p.Events, Event{Pod: pod, Type: corev1.EventTypeWarning, Reason: "NotDeleted",
			Message: fmt.Sprintf("Pod was expected by PDB %s/%s to be deleted but it wasn't", pdb.Namespace, pdb.Name)})
	}
	healthy := countHealthy(st.Pods, disrupted, st.Now)
	allowed := healthy - desired
	// A budget that expects no pods allows nothing: its first pods may
	// appear before it is looked at again.
	if expected <= 0 || allowed < 0 {
		allowed = 0
	}
	status := policyv1.PodDisruptionBudgetStatus{
		CurrentHealthy: healthy, DesiredHealthy: desired, ExpectedPods: expected, DisruptionsAllowed: allowed,
		DisruptedPods: disrupted, ObservedGeneration: pdb.Generation,
		Conditions: append([]metav1.Condition(nil), pdb.Status.Conditions...),
	}
	setDisruptionAllowed(&status, st.Now)
	p.RecheckAfter = recheck
	if !statusCurrent(pdb, &status) {
		p.Status = &status
	}
	return p
}

// expectedAndDesired are expectedPods and desiredHealthy: with
// maxUnavailable, the controllers' scale less maxUnavailable (a
// percentage of the scale rounded up); with minAvailable as a number, the
// pods matched and minAvailable; as a percentage, the controllers' scale
// and that percentage of it rounded up.
func expectedAndDesired(st State) (expected, desired int32, err error) {
	spec := &st.PDB.Spec
	scaled := func(v *intstr.IntOrString) (int32, int32, error) {
		if st.ScaleErr != nil {
			return 0, 0, st.ScaleErr
		}
		if st.Scale == nil {
			return 0, 0, fmt.Errorf("the scale of the pods' controllers is unknown")
		}
		n, err := intstr.GetScaledValueFromIntOrPercent(v, int(st.Scale.Expected), true)
		return st.Scale.Expected, int32(n), err
	}
	switch {
	case spec.MaxUnavailable != nil:
		expected, maxUnavailable, err := scaled(spec.MaxUnavailable)
		if err != nil {
			return 0, 0, err
		}
		return expected, max(expected-maxUnavailable, 0), nil
	case spec.MinAvailable != nil && spec.MinAvailable.Type == intstr.Int:
		return int32(len(st.Pods)), spec.MinAvailable.IntVal, nil
	case spec.MinAvailable != nil:
		return scaled(spec.MinAvailable)
	}
	return 0, 0, nil
}

// disruptedPods keeps the entries of recorded (pod name → eviction time)
// whose pod is there, not yet being deleted, and evicted less than
// DeletionTimeout ago; expired are the pods whose entry timed out, and
// recheck is when the first kept entry expires (0: none kept).
func disruptedPods(pods []*corev1.Pod, recorded map[string]metav1.Time, now time.Time) (kept map[string]metav1.Time, recheck time.Duration, expired []*corev1.Pod) {
	kept = map[string]metav1.Time{}
	for _, pod := range pods {
		at, ok := recorded[pod.Name]
		if !ok || pod.DeletionTimestamp != nil {
			continue
		}
		deadline := at.Add(DeletionTimeout)
		if deadline.Before(now) {
			expired = append(expired, pod)
			continue
		}
		if d := deadline.Sub(now); recheck == 0 || d < recheck {
			recheck = max(d, time.Nanosecond)
		}
		kept[pod.Name] = at
	}
	return kept, recheck, expired
}

// countHealthy counts the ready pods that are neither being deleted nor
// recorded as evicted within DeletionTimeout.
func countHealthy(pods []*corev1.Pod, disrupted map[string]metav1.Time, now time.Time) int32 {
	var n int32
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		if at, ok := disrupted[pod.Name]; ok && at.Add(DeletionTimeout).After(now) {
			continue
		}
		if podutil.IsReady(pod) {
			n++
		}
	}
	return n
}

// setDisruptionAllowed sets the DisruptionAllowed condition from
// disruptionsAllowed: True with SufficientPods, else False with
// InsufficientPods.
func setDisruptionAllowed(s *policyv1.PodDisruptionBudgetStatus, now time.Time) {
	c := metav1.Condition{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionFalse,
		Reason: policyv1.InsufficientPodsReason, ObservedGeneration: s.ObservedGeneration, LastTransitionTime: metav1.NewTime(now)}
	if s.DisruptionsAllowed > 0 {
		c.Status, c.Reason = metav1.ConditionTrue, policyv1.SufficientPodsReason
	}
	if s.Conditions == nil {
		s.Conditions = []metav1.Condition{}
	}
	apimeta.SetStatusCondition(&s.Conditions, c)
}

// statusCurrent reports whether the stored status already says what want
// says, its observedGeneration and DisruptionAllowed condition included.
func statusCurrent(pdb *policyv1.PodDisruptionBudget, want *policyv1.PodDisruptionBudgetStatus) bool {
	cur := &pdb.Status
	return cur.CurrentHealthy == want.CurrentHealthy && cur.DesiredHealthy == want.DesiredHealthy &&
		cur.ExpectedPods == want.ExpectedPods && cur.DisruptionsAllowed == want.DisruptionsAllowed &&
		equality.Semantic.DeepEqual(cur.DisruptedPods, want.DisruptedPods) && pdbhelper.ConditionsAreUpToDate(pdb)
}

// failSafe is the stored status with no disruption allowed and the
// DisruptionAllowed condition False with reason SyncFailed and err's
// message: whatever went wrong, evictions stop.
func failSafe(pdb *policyv1.PodDisruptionBudget, err error, now time.Time) *policyv1.PodDisruptionBudgetStatus {
	s := pdb.Status.DeepCopy()
	s.DisruptionsAllowed = 0
	if s.Conditions == nil {
		s.Conditions = []metav1.Condition{}
	}
	apimeta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: policyv1.DisruptionAllowedCondition,
		Status: metav1.ConditionFalse, Reason: policyv1.SyncFailedReason, Message: err.Error(),
		ObservedGeneration: s.ObservedGeneration, LastTransitionTime: metav1.NewTime(now)})
	return s
}

// staleDisruption reports whether pod carries a DisruptionTarget
// condition that an eviction (not its node agent) set and that no
// deletion followed, and how long until it has been so for timeout.
func staleDisruption(pod *corev1.Pod, now time.Time, timeout time.Duration) (bool, time.Duration) {
	if !podutil.IsActive(pod) {
		return false, 0
	}
	for _, c := range pod.Status.Conditions {
		if c.Type != corev1.DisruptionTarget {
			continue
		}
		if c.Status != corev1.ConditionTrue || c.Reason == corev1.PodReasonTerminationByKubelet {
			return false, 0
		}
		return true, max(timeout-now.Sub(c.LastTransitionTime.Time), 0)
	}
	return false, 0
}
