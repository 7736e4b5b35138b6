package deployment

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/reconcile"
)

// State is what one reconcile of a deployment looks at, read from the
// informer caches.
type State struct {
	Deployment *appsv1.Deployment
	// ReplicaSets are every ReplicaSet in the deployment's namespace (the
	// plan decides which it owns).
	ReplicaSets []*appsv1.ReplicaSet
	// Pods are the pods the deployment's selector matches; only a Recreate
	// deployment needs them.
	Pods []*corev1.Pod
	Now  time.Time
}

// Plan is what one reconcile writes, in this order: events, claims
// (Adopt, Release), Steps, then Status.
type Plan struct {
	// Events are recorded whatever the writes do.
	Events []Event
	// Adopt are matching orphans the deployment takes; Release are
	// ReplicaSets of the deployment that stopped matching.
	Adopt, Release []*appsv1.ReplicaSet
	// Steps are ReplicaSet writes, in order; the first failure ends the
	// pass (but for Quiet steps).
	Steps []Step
	// Status, if set, is the deployment whose status and revision
	// annotation are written.
	Status *appsv1.Deployment
	// Result says when to look again, once everything is written.
	Result reconcile.Result
	// Err ends the pass with an error (and a retry) after the writes.
	Err error
}

// StepKind is what a Step does to its ReplicaSet.
type StepKind int

const (
	CreateReplicaSet StepKind = iota
	UpdateReplicaSet
	DeleteReplicaSet
)

func (k StepKind) String() string {
	return [...]string{"create", "update", "delete"}[k]
}

// Step is one write of a ReplicaSet.
type Step struct {
	Kind       StepKind
	ReplicaSet *appsv1.ReplicaSet
	// Event is recorded once the write succeeded.
	Event *Event
	// Quiet: a failure ends this pass's remaining quiet steps without
	// failing it (upstream leaves scaling old ReplicaSets down to the next
	// pass).
	Quiet bool
	// Before is, for a create, the deployment as planned up to it: what
	// planCreateFailure starts from.
	Before *appsv1.Deployment
}

// Event is an event recorded on the deployment.
type Event struct {
	Type, Reason, Message string
}

// plan is upstream's syncDeployment, as a pure function: a deployment
// being deleted only gets its status; a paused one, or one whose size
// changed, is scaled (proportionally across its ReplicaSets); otherwise
// its strategy takes one step of the rollout.
func plan(st State) Plan {
	p := &planner{d: st.Deployment.DeepCopy(), now: st.Now}
	d := p.d
	if d.Spec.Selector == nil || reflect.DeepEqual(d.Spec.Selector, &metav1.LabelSelector{}) {
		p.event(corev1.EventTypeWarning, "SelectingAll", "This deployment is selecting all pods. A non-empty selector is required.")
		if d.Status.ObservedGeneration < d.Generation {
			d.Status.ObservedGeneration = d.Generation
			p.plan.Status = d
		}
		return p.plan
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		p.plan.Err = fmt.Errorf("deployment %s/%s has invalid label selector: %v", d.Namespace, d.Name, err)
		return p.plan
	}
	rsList := p.claim(st.ReplicaSets, sel)
	switch {
	case d.DeletionTimestamp != nil:
		p.syncStatusOnly(rsList)
	default:
		p.checkPausedConditions()
		if d.Spec.Paused || p.isScalingEvent(rsList) {
			p.syncScale(rsList)
			break
		}
		switch d.Spec.Strategy.Type {
		case appsv1.RecreateDeploymentStrategyType:
			p.rolloutRecreate(rsList, podsByReplicaSet(st.Pods, rsList))
		case appsv1.RollingUpdateDeploymentStrategyType:
			p.rolloutRolling(rsList)
		default:
			p.fail(fmt.Errorf("unexpected deployment strategy type: %s", d.Spec.Strategy.Type))
		}
	}
	return p.finish(st.Deployment)
}

// planner builds one Plan. d is the deployment as planned so far: its
// revision and status change as the steps are decided, as upstream's
// change with each write.
type planner struct {
	d    *appsv1.Deployment
	now  time.Time
	plan Plan
	// newRS is the new ReplicaSet once found (or planned to be created).
	newRS  *appsv1.ReplicaSet
	found  bool
	failed bool
}

func (p *planner) event(typ, reason, msg string) {
	p.plan.Events = append(p.plan.Events, Event{typ, reason, msg})
}

func (p *planner) step(s Step) { p.plan.Steps = append(p.plan.Steps, s) }

// fail ends the plan with err: nothing after it is decided.
func (p *planner) fail(err error) {
	p.plan.Err = err
	p.failed = true
}

// finish writes the status when it or the revision differs from the
// observed deployment's.
func (p *planner) finish(observed *appsv1.Deployment) Plan {
	if !reflect.DeepEqual(p.d.Status, observed.Status) ||
		p.d.Annotations[RevisionAnnotation] != observed.Annotations[RevisionAnnotation] {
		p.plan.Status = p.d
	}
	return p.plan
}

// claim decides which ReplicaSets the deployment controls: its own that
// still match, and matching orphans it adopts (planned as adopted); ones
// that stopped matching are released.
func (p *planner) claim(all []*appsv1.ReplicaSet, sel labels.Selector) []*appsv1.ReplicaSet {
	var claimed []*appsv1.ReplicaSet
	for _, rs := range all {
		switch controller.DecideClaim(p.d, rs, sel.Matches(labels.Set(rs.Labels))) {
		case controller.KeepObject:
			claimed = append(claimed, rs)
		case controller.AdoptObject:
			p.plan.Adopt = append(p.plan.Adopt, rs)
			adopted := rs.DeepCopy()
			adopted.OwnerReferences = append(adopted.OwnerReferences, *metav1.NewControllerRef(p.d, controllerKind))
			claimed = append(claimed, adopted)
		case controller.ReleaseObject:
			p.plan.Release = append(p.plan.Release, rs)
		}
	}
	return claimed
}

// podsByReplicaSet groups pods (terminal ones too) by the UID of the
// ReplicaSet in rsList that controls them.
func podsByReplicaSet(pods []*corev1.Pod, rsList []*appsv1.ReplicaSet) map[types.UID][]*corev1.Pod {
	m := make(map[types.UID][]*corev1.Pod, len(rsList))
	for _, rs := range rsList {
		m[rs.UID] = []*corev1.Pod{}
	}
	for _, pod := range pods {
		ref := metav1.GetControllerOfNoCopy(pod)
		if ref == nil {
			continue
		}
		if _, ok := m[ref.UID]; ok {
			m[ref.UID] = append(m[ref.UID], pod)
		}
	}
	return m
}

// syncStatusOnly writes the status without changing any ReplicaSet.
func (p *planner) syncStatusOnly(rsList []*appsv1.ReplicaSet) {
	newRS, oldRSs := p.replicaSets(rsList, false)
	p.syncDeploymentStatus(append(oldRSs, newRS), newRS)
}

// syncScale handles a paused deployment or a change of its size: scale,
// clean up old ReplicaSets if paused, write the status.
func (p *planner) syncScale(rsList []*appsv1.ReplicaSet) {
	newRS, oldRSs := p.replicaSets(rsList, false)
	p.scale(newRS, oldRSs)
	if p.d.Spec.Paused {
		p.cleanup(oldRSs)
	}
	p.syncDeploymentStatus(append(oldRSs, newRS), newRS)
}

// checkPausedConditions records pausing and resuming in the Progressing
// condition (Unknown), so that a resumed deployment does not time out at
// once.
func (p *planner) checkPausedConditions() {
	d := p.d
	if !hasProgressDeadline(d) {
		return
	}
	cond := getCondition(d.Status, appsv1.DeploymentProgressing)
	if cond != nil && cond.Reason == ReasonTimedOut {
		return
	}
	pausedExists := cond != nil && cond.Reason == ReasonPaused
	switch {
	case d.Spec.Paused && !pausedExists:
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonPaused, "Deployment is paused", p.now))
	case !d.Spec.Paused && pausedExists:
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonResumed, "Deployment is resumed", p.now))
	}
}

// isScalingEvent: an active ReplicaSet was sized for another number of
// replicas than the deployment now has.
func (p *planner) isScalingEvent(rsList []*appsv1.ReplicaSet) bool {
	newRS, oldRSs := p.replicaSets(rsList, false)
	for _, rs := range filterActive(append(oldRSs, newRS)) {
		if desired, ok := intAnnotation(rs, DesiredReplicasAnnotation); ok && desired != dReplicas(p.d) {
			return true
		}
	}
	return false
}

// replicaSets returns the new ReplicaSet (planned to be created if asked
// and missing) with its revision brought up to date, and the old ones.
func (p *planner) replicaSets(rsList []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet) {
	_, oldRSs := FindOldReplicaSets(p.d, rsList)
	if !p.found {
		p.found = true
		p.newRS = p.existingNewReplicaSet(rsList, oldRSs)
	}
	if p.newRS == nil && create {
		p.newRS = p.createNewReplicaSet(oldRSs)
	}
	return p.newRS, oldRSs
}

// existingNewReplicaSet finds the ReplicaSet whose template is the
// deployment's, raising its revision above every old one's (this is how a
// rollback makes an old ReplicaSet new again).
func (p *planner) existingNewReplicaSet(rsList, oldRSs []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	d := p.d
	existing := FindNewReplicaSet(d, rsList)
	if existing == nil {
		return nil
	}
	newRevision := strconv.FormatInt(MaxRevision(oldRSs)+1, 10)
	rsCopy := existing.DeepCopy()
	annotationsUpdated := SetNewReplicaSetAnnotations(d, rsCopy, newRevision, true, maxRevHistoryLengthInChars)
	if annotationsUpdated || rsCopy.Spec.MinReadySeconds != d.Spec.MinReadySeconds {
		rsCopy.Spec.MinReadySeconds = d.Spec.MinReadySeconds
		p.step(Step{Kind: UpdateReplicaSet, ReplicaSet: rsCopy})
		return rsCopy
	}
	SetDeploymentRevision(d, rsCopy.Annotations[RevisionAnnotation])
	if hasProgressDeadline(d) && getCondition(d.Status, appsv1.DeploymentProgressing) == nil {
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonFoundNewReplicaSet,
			fmt.Sprintf("Found new replica set %q", rsCopy.Name), p.now))
	}
	return rsCopy
}

// createNewReplicaSet plans the creation of the ReplicaSet with the
// deployment's template, named after its hash, sized as the strategy
// allows now.
func (p *planner) createNewReplicaSet(oldRSs []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	d := p.d
	newRevision := strconv.FormatInt(MaxRevision(oldRSs)+1, 10)
	template := *d.Spec.Template.DeepCopy()
	hash := ComputeHash(&template, d.Status.CollisionCount)
	template.Labels = withLabel(d.Spec.Template.Labels, appsv1.DefaultDeploymentUniqueLabelKey, hash)
	selector := d.Spec.Selector.DeepCopy()
	if selector.MatchLabels == nil {
		selector.MatchLabels = map[string]string{}
	}
	selector.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	newRS := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            d.Name + "-" + hash,
			Namespace:       d.Namespace,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, controllerKind)},
			Labels:          template.Labels,
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        new(int32),
			MinReadySeconds: d.Spec.MinReadySeconds,
			Selector:        selector,
			Template:        template,
		},
	}
	count, err := NewRSNewReplicas(d, append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS), newRS)
	if err != nil {
		p.fail(err)
		return nil
	}
	*newRS.Spec.Replicas = count
	SetNewReplicaSetAnnotations(d, newRS, newRevision, false, maxRevHistoryLengthInChars)
	s := Step{Kind: CreateReplicaSet, ReplicaSet: newRS, Before: d.DeepCopy()}
	if count > 0 {
		s.Event = &Event{corev1.EventTypeNormal, "ScalingReplicaSet", fmt.Sprintf("Scaled up replica set %s from 0 to %d", newRS.Name, count)}
	}
	p.step(s)
	SetDeploymentRevision(d, newRevision)
	if hasProgressDeadline(d) {
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewReplicaSetCreated,
			fmt.Sprintf("Created new replica set %q", newRS.Name), p.now))
	}
	return newRS
}

// planCreateFailure is what follows a failed create of the new ReplicaSet
// rs (planned from the deployment before): err is the create's error, and
// cached the ReplicaSet of that name in the cache, if any. A name taken by
// our own ReplicaSet of the same template means the cache was behind: look
// again (retry); so does one not in the cache yet (with the error). A name
// taken by another is a hash collision: bump collisionCount. Any other failure is reported in the Progressing
// condition and an event.
func planCreateFailure(before *appsv1.Deployment, rs *appsv1.ReplicaSet, err error, cached *appsv1.ReplicaSet, now time.Time) (status *appsv1.Deployment, events []Event, retry bool) {
	switch {
	case apierrors.IsAlreadyExists(err) && cached == nil:
		// Not in the cache yet: fail, and look again.
		return nil, nil, false
	case apierrors.IsAlreadyExists(err):
		if ref := metav1.GetControllerOfNoCopy(cached); ref != nil && ref.UID == before.UID && EqualIgnoreHash(&before.Spec.Template, &cached.Spec.Template) {
			return nil, nil, true
		}
		d := before.DeepCopy()
		if d.Status.CollisionCount == nil {
			d.Status.CollisionCount = new(int32)
		}
		*d.Status.CollisionCount++
		return d, nil, false
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil, nil, false
	}
	msg := fmt.Sprintf("Failed to create new replica set %q: %v", rs.Name, err)
	if hasProgressDeadline(before) {
		status = before.DeepCopy()
		setCondition(&status.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonFailedRSCreate, msg, now))
	}
	return status, []Event{{corev1.EventTypeWarning, ReasonFailedRSCreate, msg}}, false
}

func withLabel(l map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(l)+1)
	for lk, lv := range l {
		out[lk] = lv
	}
	out[k] = v
	return out
}

// scale resizes the deployment's ReplicaSets after a change of its size:
// the only active (or the newest) ReplicaSet takes it all; with a
// saturated new ReplicaSet the old ones go to 0; during a rolling update
// the change is spread proportionally.
func (p *planner) scale(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) {
	d := p.d
	if rs := FindActiveOrLatest(newRS, oldRSs); rs != nil {
		if replicas(rs) != dReplicas(d) {
			p.scaleAndRecord(rs, dReplicas(d), false)
		}
		return
	}
	if IsSaturated(d, newRS) {
		for _, old := range filterActive(oldRSs) {
			p.scaleAndRecord(old, 0, false)
		}
		return
	}
	if isRollingUpdate(d) {
		ops, op := proportionalScaleOps(d, newRS, oldRSs)
		for _, o := range ops {
			p.scaleReplicaSet(o.RS, o.To, op, false)
		}
	}
}

// scaleAndRecord scales rs to to, "up" or "down" as it goes.
func (p *planner) scaleAndRecord(rs *appsv1.ReplicaSet, to int32, quiet bool) (bool, *appsv1.ReplicaSet) {
	if replicas(rs) == to {
		return false, rs
	}
	op := "down"
	if replicas(rs) < to {
		op = "up"
	}
	return p.scaleReplicaSet(rs, to, op, quiet)
}

// scaleReplicaSet plans setting rs's replicas and its desired/max
// annotations, recording ScalingReplicaSet when the size changes. It
// returns whether the size changes, and rs as it will be.
func (p *planner) scaleReplicaSet(rs *appsv1.ReplicaSet, to int32, op string, quiet bool) (bool, *appsv1.ReplicaSet) {
	d := p.d
	sizeChanged := replicas(rs) != to
	desired, maxReplicas := dReplicas(d), dReplicas(d)+MaxSurge(d)
	if !sizeChanged && !replicasAnnotationsNeedUpdate(rs, desired, maxReplicas) {
		return false, rs
	}
	from := replicas(rs)
	rsCopy := rs.DeepCopy()
	rsCopy.Spec.Replicas = &to
	SetReplicasAnnotations(rsCopy, desired, maxReplicas)
	s := Step{Kind: UpdateReplicaSet, ReplicaSet: rsCopy, Quiet: quiet}
	if sizeChanged {
		s.Event = &Event{corev1.EventTypeNormal, "ScalingReplicaSet", fmt.Sprintf("Scaled %s replica set %s from %d to %d", op, rsCopy.Name, from, to)}
	}
	p.step(s)
	return sizeChanged, rsCopy
}

// cleanup deletes the oldest old ReplicaSets beyond revisionHistoryLimit,
// of those that have no pods left.
func (p *planner) cleanup(oldRSs []*appsv1.ReplicaSet) {
	d := p.d
	if !hasRevisionHistoryLimit(d) {
		return
	}
	var cleanable []*appsv1.ReplicaSet
	for _, rs := range oldRSs {
		if rs != nil && rs.DeletionTimestamp == nil {
			cleanable = append(cleanable, rs)
		}
	}
	diff := len(cleanable) - int(*d.Spec.RevisionHistoryLimit)
	if diff <= 0 {
		return
	}
	sort.Sort(byRevision(cleanable))
	for _, rs := range cleanable[:diff] {
		if rs.Status.Replicas != 0 || replicas(rs) != 0 || rs.Generation > rs.Status.ObservedGeneration || rs.DeletionTimestamp != nil {
			continue
		}
		p.step(Step{Kind: DeleteReplicaSet, ReplicaSet: rs})
	}
}

// syncDeploymentStatus sets the status calculated from the ReplicaSets.
func (p *planner) syncDeploymentStatus(allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) {
	p.d.Status = calculateStatus(allRSs, newRS, p.d, p.now)
}

// syncRolloutStatus sets the rollout's status and conditions; when they do
// not change it asks to look again when the progress deadline may pass.
func (p *planner) syncRolloutStatus(allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) {
	d := p.d
	st := calculateStatus(allRSs, newRS, d, p.now)
	rolloutConditions(d, allRSs, newRS, &st, p.now)
	if !reflect.DeepEqual(d.Status, st) {
		d.Status = st
		return
	}
	switch after, ok := stuckRequeue(d, &st, p.now); {
	case !ok:
	case after == 0:
		p.plan.Result = reconcile.Result{Requeue: true}
	default:
		p.plan.Result = reconcile.Result{RequeueAfter: after}
	}
}

// rolloutRolling moves a RollingUpdate deployment one step: grow the new
// ReplicaSet as far as maxSurge allows, else shrink old ones as far as
// maxUnavailable allows; once complete, clean up old ReplicaSets.
func (p *planner) rolloutRolling(rsList []*appsv1.ReplicaSet) {
	d := p.d
	newRS, oldRSs := p.replicaSets(rsList, true)
	if p.failed {
		return
	}
	allRSs := append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS)
	scaledUp := p.reconcileNewReplicaSet(allRSs, newRS)
	if p.failed {
		return
	}
	if scaledUp {
		p.syncRolloutStatus(allRSs, newRS)
		return
	}
	if p.reconcileOldReplicaSets(allRSs, filterActive(oldRSs), newRS) {
		p.syncRolloutStatus(allRSs, newRS)
		return
	}
	if DeploymentComplete(d, &d.Status) {
		p.cleanup(oldRSs)
	}
	p.syncRolloutStatus(allRSs, newRS)
}

// reconcileNewReplicaSet grows (or shrinks) the new ReplicaSet as far as
// the strategy allows; it reports whether its size changes.
func (p *planner) reconcileNewReplicaSet(allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) bool {
	d := p.d
	switch {
	case replicas(newRS) == dReplicas(d):
		return false
	case replicas(newRS) > dReplicas(d):
		scaled, _ := p.scaleAndRecord(newRS, dReplicas(d), false)
		return scaled
	}
	n, err := NewRSNewReplicas(d, allRSs, newRS)
	if err != nil {
		p.fail(err)
		return false
	}
	scaled, _ := p.scaleAndRecord(newRS, n, false)
	return scaled
}

// reconcileOldReplicaSets first removes old pods that are not available
// (that costs no availability), then old pods beyond the minimum
// available; it reports whether any size changes. Its writes are quiet.
func (p *planner) reconcileOldReplicaSets(allRSs, oldRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) bool {
	if totalSpecReplicas(oldRSs) == 0 {
		return false
	}
	maxScaledDown := oldRSsMaxScaleDown(p.d, allRSs, newRS)
	if maxScaledDown <= 0 {
		return false
	}
	oldRSs = append([]*appsv1.ReplicaSet(nil), oldRSs...)
	scaled := false
	apply := func(ops []scaleOp) {
		for _, o := range ops {
			did, updated := p.scaleAndRecord(o.RS, o.To, true)
			scaled = scaled || did
			for i := range oldRSs {
				if oldRSs[i].UID == updated.UID {
					oldRSs[i] = updated
				}
			}
		}
	}
	apply(cleanupUnhealthyOps(oldRSs, maxScaledDown))
	apply(scaleDownOldOps(p.d, append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS), oldRSs))
	return scaled
}

// rolloutRecreate moves a Recreate deployment one step: scale every old
// ReplicaSet to 0, wait until none of their pods runs, then create the new
// ReplicaSet at full size.
func (p *planner) rolloutRecreate(rsList []*appsv1.ReplicaSet, pods map[types.UID][]*corev1.Pod) {
	d := p.d
	// Do not create the new ReplicaSet yet: no scaling up before the old
	// pods are gone.
	newRS, oldRSs := p.replicaSets(rsList, false)
	allRSs := append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS)
	scaledDown := false
	for _, rs := range filterActive(oldRSs) {
		did, _ := p.scaleAndRecord(rs, 0, false)
		scaledDown = scaledDown || did
	}
	if scaledDown || oldPodsRunning(newRS, oldRSs, pods) {
		p.syncRolloutStatus(allRSs, newRS)
		return
	}
	if newRS == nil {
		newRS, oldRSs = p.replicaSets(rsList, true)
		if p.failed {
			return
		}
		allRSs = append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS)
	}
	p.scaleAndRecord(newRS, dReplicas(d), false)
	if DeploymentComplete(d, &d.Status) {
		p.cleanup(oldRSs)
	}
	p.syncRolloutStatus(allRSs, newRS)
}

// oldPodsRunning: an old ReplicaSet still reports pods, or a pod of one is
// not terminal (pods in phase Unknown count as running).
func oldPodsRunning(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet, pods map[types.UID][]*corev1.Pod) bool {
	if totalStatusReplicas(oldRSs) > 0 {
		return true
	}
	for uid, ps := range pods {
		if newRS != nil && newRS.UID == uid {
			continue
		}
		for _, pod := range ps {
			if pod.Status.Phase != corev1.PodFailed && pod.Status.Phase != corev1.PodSucceeded {
				return true
			}
		}
	}
	return false
}
