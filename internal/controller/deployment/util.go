package deployment

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/dump"
)

// Annotations the controller keeps on deployments and their ReplicaSets.
const (
	// RevisionAnnotation is the revision of a ReplicaSet, and of a
	// deployment the revision of its newest ReplicaSet.
	RevisionAnnotation = "deployment.kubernetes.io/revision"
	// RevisionHistoryAnnotation lists the earlier revisions a ReplicaSet had
	// (it was rolled back to), comma-separated.
	RevisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	// DesiredReplicasAnnotation is the deployment's replicas when the
	// ReplicaSet was last scaled.
	DesiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	// MaxReplicasAnnotation is the deployment's replicas plus maxSurge then.
	MaxReplicasAnnotation = "deployment.kubernetes.io/max-replicas"
	// deprecatedRollbackTo round-trips extensions/v1beta1's rollbackTo.
	deprecatedRollbackTo = "deprecated.deployment.rollback.to"
	// maxRevHistoryLengthInChars bounds RevisionHistoryAnnotation.
	maxRevHistoryLengthInChars = 2000
)

// Condition reasons, as upstream's.
const (
	// Progressing.
	ReasonNewReplicaSetCreated   = "NewReplicaSetCreated"
	ReasonFoundNewReplicaSet     = "FoundNewReplicaSet"
	ReasonReplicaSetUpdated      = "ReplicaSetUpdated"
	ReasonNewReplicaSetAvailable = "NewReplicaSetAvailable"
	ReasonTimedOut               = "ProgressDeadlineExceeded"
	ReasonPaused                 = "DeploymentPaused"
	ReasonResumed                = "DeploymentResumed"
	ReasonFailedRSCreate         = "ReplicaSetCreateError"
	// Available.
	ReasonMinimumReplicasAvailable   = "MinimumReplicasAvailable"
	ReasonMinimumReplicasUnavailable = "MinimumReplicasUnavailable"
)

// ---- the pod-template-hash ----

// ComputeHash is upstream's pod-template-hash: FNV-32a over the template
// printed by spew as upstream prints it for hashing (k8s.io/utils/dump's
// ForHash), followed by the collision count as 8 little-endian bytes when
// set, written as a decimal number through rand.SafeEncodeString.
func ComputeHash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%v", dump.ForHash(*template))
	if collisionCount != nil {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint32(b, uint32(*collisionCount))
		h.Write(b)
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// EqualIgnoreHash reports whether two templates are semantically equal
// but for the pod-template-hash label.
func EqualIgnoreHash(t1, t2 *corev1.PodTemplateSpec) bool {
	c1, c2 := t1.DeepCopy(), t2.DeepCopy()
	delete(c1.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	delete(c2.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	return equality.Semantic.DeepEqual(c1, c2)
}

// ---- new and old ReplicaSets ----

// FindNewReplicaSet is the oldest ReplicaSet whose template equals the
// deployment's (ignoring the hash), or nil.
func FindNewReplicaSet(d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	sorted := append([]*appsv1.ReplicaSet(nil), rsList...)
	sort.Sort(byCreation(sorted))
	for _, rs := range sorted {
		if EqualIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
			return rs
		}
	}
	return nil
}

// FindOldReplicaSets returns the ReplicaSets other than the new one: those
// with replicas, and all of them.
func FindOldReplicaSets(d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (withReplicas, all []*appsv1.ReplicaSet) {
	newRS := FindNewReplicaSet(d, rsList)
	for _, rs := range rsList {
		if newRS != nil && rs.UID == newRS.UID {
			continue
		}
		all = append(all, rs)
		if replicas(rs) != 0 {
			withReplicas = append(withReplicas, rs)
		}
	}
	return withReplicas, all
}

// FindActiveOrLatest is the only ReplicaSet with replicas, or with none the
// new one or else the newest; nil when several have replicas.
func FindActiveOrLatest(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	if newRS == nil && len(oldRSs) == 0 {
		return nil
	}
	sort.Sort(sort.Reverse(byCreation(oldRSs)))
	active := filterActive(append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS))
	switch len(active) {
	case 0:
		if newRS != nil {
			return newRS
		}
		return oldRSs[0]
	case 1:
		return active[0]
	default:
		return nil
	}
}

// filterActive keeps the ReplicaSets with spec.replicas > 0.
func filterActive(rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range rss {
		if rs != nil && replicas(rs) > 0 {
			out = append(out, rs)
		}
	}
	return out
}

func replicas(rs *appsv1.ReplicaSet) int32 {
	if rs.Spec.Replicas == nil {
		return 1
	}
	return *rs.Spec.Replicas
}

func dReplicas(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

// ---- revisions and annotations ----

// Revision is a ReplicaSet's revision (0 when it has none).
func Revision(rs metav1.Object) (int64, error) {
	v, ok := rs.GetAnnotations()[RevisionAnnotation]
	if !ok {
		return 0, nil
	}
	return strconv.ParseInt(v, 10, 64)
}

// MaxRevision is the highest revision among rss (unparsable ones skipped).
func MaxRevision(rss []*appsv1.ReplicaSet) int64 {
	var m int64
	for _, rs := range rss {
		if v, err := Revision(rs); err == nil && v > m {
			m = v
		}
	}
	return m
}

// skipCopy are the deployment annotations not copied to its ReplicaSets.
var skipCopy = map[string]bool{
	corev1.LastAppliedConfigAnnotation: true,
	RevisionAnnotation:                 true,
	RevisionHistoryAnnotation:          true,
	DesiredReplicasAnnotation:          true,
	MaxReplicasAnnotation:              true,
	deprecatedRollbackTo:               true,
}

// copyDeploymentAnnotations copies the deployment's annotations (but the
// controller's own and last-applied-configuration) onto rs.
func copyDeploymentAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	changed := false
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	for k, v := range d.Annotations {
		if skipCopy[k] {
			continue
		}
		if cur, ok := rs.Annotations[k]; ok && cur == v {
			continue
		}
		rs.Annotations[k] = v
		changed = true
	}
	return changed
}

// SetNewReplicaSetAnnotations brings the new ReplicaSet's annotations up
// to date: the deployment's annotations, the revision raised to
// newRevision (recording the one it replaces in the revision history: a
// rollback), and for a ReplicaSet about to be created the replica counts.
// It reports whether anything changed.
func SetNewReplicaSetAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet, newRevision string, exists bool, historyLimit int) bool {
	changed := copyDeploymentAnnotations(d, rs)
	oldRevision, had := rs.Annotations[RevisionAnnotation]
	oldN, err := strconv.ParseInt(oldRevision, 10, 64)
	if err != nil {
		if oldRevision != "" {
			return false
		}
		oldN = 0
	}
	newN, err := strconv.ParseInt(newRevision, 10, 64)
	if err != nil {
		return false
	}
	if oldN < newN {
		rs.Annotations[RevisionAnnotation] = newRevision
		changed = true
	}
	if had && oldN < newN {
		history := rs.Annotations[RevisionHistoryAnnotation]
		old := strings.Split(history, ",")
		if len(old[0]) == 0 {
			rs.Annotations[RevisionHistoryAnnotation] = oldRevision
		} else {
			total := len(history) + len(oldRevision) + 1
			start := 0
			for total > historyLimit && start < len(old) {
				total -= len(old[start]) + 1
				start++
			}
			if total <= historyLimit {
				rs.Annotations[RevisionHistoryAnnotation] = strings.Join(append(old[start:], oldRevision), ",")
			}
		}
	}
	if !exists && SetReplicasAnnotations(rs, dReplicas(d), dReplicas(d)+MaxSurge(d)) {
		changed = true
	}
	return changed
}

// SetDeploymentRevision sets the deployment's revision annotation.
func SetDeploymentRevision(d *appsv1.Deployment, revision string) bool {
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	if d.Annotations[RevisionAnnotation] == revision {
		return false
	}
	d.Annotations[RevisionAnnotation] = revision
	return true
}

// SetReplicasAnnotations records desired and max replicas on rs.
func SetReplicasAnnotations(rs *appsv1.ReplicaSet, desired, max int32) bool {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	changed := false
	if s := strconv.Itoa(int(desired)); rs.Annotations[DesiredReplicasAnnotation] != s {
		rs.Annotations[DesiredReplicasAnnotation] = s
		changed = true
	}
	if s := strconv.Itoa(int(max)); rs.Annotations[MaxReplicasAnnotation] != s {
		rs.Annotations[MaxReplicasAnnotation] = s
		changed = true
	}
	return changed
}

// replicasAnnotationsNeedUpdate reports whether SetReplicasAnnotations
// would change rs.
func replicasAnnotationsNeedUpdate(rs *appsv1.ReplicaSet, desired, max int32) bool {
	return rs.Annotations[DesiredReplicasAnnotation] != strconv.Itoa(int(desired)) ||
		rs.Annotations[MaxReplicasAnnotation] != strconv.Itoa(int(max))
}

func intAnnotation(rs *appsv1.ReplicaSet, key string) (int32, bool) {
	v, ok := rs.Annotations[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, false
	}
	return int32(n), true
}

// ---- rolling-update math ----

// ResolveFenceposts resolves maxSurge (rounding up) and maxUnavailable
// (rounding down) against desired; both zero makes maxUnavailable 1.
func ResolveFenceposts(maxSurge, maxUnavailable *intstr.IntOrString, desired int32) (int32, int32, error) {
	zero := intstr.FromInt32(0)
	surge, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(maxSurge, zero), int(desired), true)
	if err != nil {
		return 0, 0, err
	}
	unavailable, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(maxUnavailable, zero), int(desired), false)
	if err != nil {
		return 0, 0, err
	}
	if surge == 0 && unavailable == 0 {
		unavailable = 1
	}
	return int32(surge), int32(unavailable), nil
}

func isRollingUpdate(d *appsv1.Deployment) bool {
	return d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType && d.Spec.Strategy.RollingUpdate != nil
}

// MaxSurge is how many pods a rolling deployment may run above replicas.
func MaxSurge(d *appsv1.Deployment) int32 {
	if !isRollingUpdate(d) {
		return 0
	}
	s, _, _ := ResolveFenceposts(d.Spec.Strategy.RollingUpdate.MaxSurge, d.Spec.Strategy.RollingUpdate.MaxUnavailable, dReplicas(d))
	return s
}

// MaxUnavailable is how many pods below replicas a rolling deployment may
// be available, at most replicas.
func MaxUnavailable(d *appsv1.Deployment) int32 {
	if !isRollingUpdate(d) || dReplicas(d) == 0 {
		return 0
	}
	_, u, _ := ResolveFenceposts(d.Spec.Strategy.RollingUpdate.MaxSurge, d.Spec.Strategy.RollingUpdate.MaxUnavailable, dReplicas(d))
	return min(u, dReplicas(d))
}

// NewRSNewReplicas is the size the new ReplicaSet may grow to now: for a
// rolling update as far as replicas+maxSurge pods in all allows, never
// above replicas; for Recreate replicas.
func NewRSNewReplicas(d *appsv1.Deployment, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) (int32, error) {
	switch d.Spec.Strategy.Type {
	case appsv1.RollingUpdateDeploymentStrategyType:
		var surge *intstr.IntOrString
		if d.Spec.Strategy.RollingUpdate != nil {
			surge = d.Spec.Strategy.RollingUpdate.MaxSurge
		}
		maxSurge, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(surge, intstr.FromInt32(0)), int(dReplicas(d)), true)
		if err != nil {
			return 0, err
		}
		current := totalSpecReplicas(allRSs)
		maxTotal := dReplicas(d) + int32(maxSurge)
		if current >= maxTotal {
			return replicas(newRS), nil
		}
		up := min(maxTotal-current, dReplicas(d)-replicas(newRS))
		return replicas(newRS) + up, nil
	case appsv1.RecreateDeploymentStrategyType:
		return dReplicas(d), nil
	default:
		return 0, fmt.Errorf("deployment type %v isn't supported", d.Spec.Strategy.Type)
	}
}

// scaleOp sets a ReplicaSet's replicas to To.
type scaleOp struct {
	RS *appsv1.ReplicaSet
	To int32
}

// oldRSsMaxScaleDown is how many old pods a rolling update may remove now:
// all pods, less the minimum available, less the new ReplicaSet's pods that
// are not available yet (so that a broken new template does not eat the
// old pods).
func oldRSsMaxScaleDown(d *appsv1.Deployment, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) int32 {
	minAvailable := dReplicas(d) - MaxUnavailable(d)
	newUnavailable := replicas(newRS) - newRS.Status.AvailableReplicas
	return totalSpecReplicas(allRSs) - minAvailable - newUnavailable
}

// cleanupUnhealthyOps scales old ReplicaSets (oldest first) down by their
// unavailable pods, at most maxCleanup in all: removing them costs no
// availability.
func cleanupUnhealthyOps(oldRSs []*appsv1.ReplicaSet, maxCleanup int32) []scaleOp {
	sorted := append([]*appsv1.ReplicaSet(nil), oldRSs...)
	sort.Sort(byCreation(sorted))
	var ops []scaleOp
	var total int32
	for _, rs := range sorted {
		if total >= maxCleanup {
			break
		}
		r := replicas(rs)
		if r == 0 || r == rs.Status.AvailableReplicas {
			continue
		}
		n := min(maxCleanup-total, r-rs.Status.AvailableReplicas)
		if n <= 0 {
			continue
		}
		ops = append(ops, scaleOp{RS: rs, To: r - n})
		total += n
	}
	return ops
}

// scaleDownOldOps scales old ReplicaSets (oldest first) down by as many
// pods as are available beyond the minimum. A ReplicaSet counts at most
// spec.replicas available pods: right after it was scaled down its status
// may still count pods being deleted (upstream counts them, and can thus
// briefly go below the minimum).
func scaleDownOldOps(d *appsv1.Deployment, allRSs, oldRSs []*appsv1.ReplicaSet) []scaleOp {
	minAvailable := dReplicas(d) - MaxUnavailable(d)
	var available int32
	for _, rs := range allRSs {
		if rs != nil {
			available += min(rs.Status.AvailableReplicas, replicas(rs))
		}
	}
	if available <= minAvailable {
		return nil
	}
	sorted := append([]*appsv1.ReplicaSet(nil), oldRSs...)
	sort.Sort(byCreation(sorted))
	want := available - minAvailable
	var ops []scaleOp
	var total int32
	for _, rs := range sorted {
		if total >= want {
			break
		}
		r := replicas(rs)
		if r == 0 {
			continue
		}
		n := min(r, want-total)
		ops = append(ops, scaleOp{RS: rs, To: r - n})
		total += n
	}
	return ops
}

// IsSaturated: rs runs exactly the deployment's replicas, all available,
// and was sized for them.
func IsSaturated(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	if rs == nil {
		return false
	}
	desired, ok := intAnnotation(rs, DesiredReplicasAnnotation)
	return ok && replicas(rs) == dReplicas(d) && desired == dReplicas(d) && rs.Status.AvailableReplicas == dReplicas(d)
}

// proportionalScaleOps spreads a change of the deployment's size over its
// active ReplicaSets in proportion to their sizes (each ReplicaSet's
// max-replicas annotation says what size the deployment had when it was
// sized). The largest takes the rounding leftover; on ties scale-ups favour
// newer ReplicaSets and scale-downs older ones. It returns an op for every
// active ReplicaSet (some may not change) and "up" or "down".
func proportionalScaleOps(d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) ([]scaleOp, string) {
	all := filterActive(append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS))
	current := totalSpecReplicas(all)
	var allowed int32
	if dReplicas(d) > 0 {
		allowed = dReplicas(d) + MaxSurge(d)
	}
	toAdd := allowed - current
	op := ""
	switch {
	case toAdd > 0:
		sort.Sort(bySizeNewer(all))
		op = "up"
	case toAdd < 0:
		sort.Sort(bySizeOlder(all))
		op = "down"
	}
	sizes := make([]int32, len(all))
	var added int32
	for i, rs := range all {
		sizes[i] = replicas(rs)
		if toAdd != 0 {
			p := proportion(rs, d, toAdd, added)
			sizes[i] += p
			added += p
		}
	}
	ops := make([]scaleOp, len(all))
	for i, rs := range all {
		if i == 0 && toAdd != 0 {
			sizes[i] = max(sizes[i]+toAdd-added, 0)
		}
		ops[i] = scaleOp{RS: rs, To: sizes[i]}
	}
	return ops, op
}

// proportion is how many replicas rs gains (or loses) of toAdd, given added
// already handed out.
func proportion(rs *appsv1.ReplicaSet, d *appsv1.Deployment, toAdd, added int32) int32 {
	if rs == nil || replicas(rs) == 0 || toAdd == 0 || toAdd == added {
		return 0
	}
	fraction := replicaSetFraction(rs, d)
	allowed := toAdd - added
	if toAdd > 0 {
		return min(fraction, allowed)
	}
	return max(fraction, allowed)
}

func replicaSetFraction(rs *appsv1.ReplicaSet, d *appsv1.Deployment) int32 {
	if dReplicas(d) == 0 {
		return -replicas(rs)
	}
	deploymentMax := dReplicas(d) + MaxSurge(d)
	before, ok := intAnnotation(rs, MaxReplicasAnnotation)
	if !ok || before == 0 {
		before = d.Status.Replicas
	}
	if before == 0 {
		return 0
	}
	size := float64(replicas(rs)*deploymentMax) / float64(before)
	return int32(math.Round(size)) - replicas(rs)
}

// ---- counts ----

func totalSpecReplicas(rss []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += replicas(rs)
		}
	}
	return n
}

func totalStatusReplicas(rss []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += rs.Status.Replicas
		}
	}
	return n
}

func totalReadyReplicas(rss []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += rs.Status.ReadyReplicas
		}
	}
	return n
}

func totalAvailableReplicas(rss []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += rs.Status.AvailableReplicas
		}
	}
	return n
}

// totalTerminatingReplicas sums terminatingReplicas; nil if a ReplicaSet
// the ReplicaSet controller has seen does not report it.
func totalTerminatingReplicas(rss []*appsv1.ReplicaSet) *int32 {
	var n int32
	for _, rs := range rss {
		switch {
		case rs == nil:
		case rs.Status.ObservedGeneration == 0 && rs.Status.TerminatingReplicas == nil:
		case rs.Status.TerminatingReplicas == nil:
			return nil
		default:
			n += *rs.Status.TerminatingReplicas
		}
	}
	return &n
}

// ---- status and conditions ----

// hasProgressDeadline: progressDeadlineSeconds is set and not "never".
func hasProgressDeadline(d *appsv1.Deployment) bool {
	return d.Spec.ProgressDeadlineSeconds != nil && *d.Spec.ProgressDeadlineSeconds != math.MaxInt32
}

func hasRevisionHistoryLimit(d *appsv1.Deployment) bool {
	return d.Spec.RevisionHistoryLimit != nil && *d.Spec.RevisionHistoryLimit != math.MaxInt32
}

// calculateStatus is the deployment's status from its ReplicaSets: counts,
// observedGeneration, and the Available condition; other conditions are
// carried over.
func calculateStatus(allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment, now time.Time) appsv1.DeploymentStatus {
	available := totalAvailableReplicas(allRSs)
	unavailable := max(totalSpecReplicas(allRSs)-available, 0)
	st := appsv1.DeploymentStatus{
		ObservedGeneration:  d.Generation,
		Replicas:            totalStatusReplicas(allRSs),
		UpdatedReplicas:     totalStatusReplicas([]*appsv1.ReplicaSet{newRS}),
		ReadyReplicas:       totalReadyReplicas(allRSs),
		AvailableReplicas:   available,
		UnavailableReplicas: unavailable,
		TerminatingReplicas: totalTerminatingReplicas(allRSs),
		CollisionCount:      d.Status.CollisionCount,
	}
	st.Conditions = append(st.Conditions, d.Status.Conditions...)
	if available >= dReplicas(d)-MaxUnavailable(d) {
		setCondition(&st, newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, ReasonMinimumReplicasAvailable,
			"Deployment has minimum availability.", now))
	} else {
		setCondition(&st, newCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, ReasonMinimumReplicasUnavailable,
			"Deployment does not have minimum availability.", now))
	}
	return st
}

// DeploymentComplete: every replica is updated and available, none old,
// and the current generation observed.
func DeploymentComplete(d *appsv1.Deployment, st *appsv1.DeploymentStatus) bool {
	n := dReplicas(d)
	return st.UpdatedReplicas == n && st.Replicas == n && st.AvailableReplicas == n && st.ObservedGeneration >= d.Generation
}

// DeploymentProgressing: since the last status, more pods are updated,
// ready or available, or fewer are old.
func DeploymentProgressing(d *appsv1.Deployment, st *appsv1.DeploymentStatus) bool {
	old := d.Status
	return st.UpdatedReplicas > old.UpdatedReplicas ||
		st.Replicas-st.UpdatedReplicas < old.Replicas-old.UpdatedReplicas ||
		st.ReadyReplicas > old.ReadyReplicas ||
		st.AvailableReplicas > old.AvailableReplicas
}

// DeploymentTimedOut: the Progressing condition was last updated longer
// than progressDeadlineSeconds ago (or already says so).
func DeploymentTimedOut(d *appsv1.Deployment, st *appsv1.DeploymentStatus, now time.Time) bool {
	if !hasProgressDeadline(d) {
		return false
	}
	c := getCondition(*st, appsv1.DeploymentProgressing)
	if c == nil {
		return false
	}
	switch c.Reason {
	case ReasonNewReplicaSetAvailable:
		return false
	case ReasonTimedOut:
		return true
	}
	deadline := time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second
	return c.LastUpdateTime.Add(deadline).Before(now)
}

func newCondition(t appsv1.DeploymentConditionType, s corev1.ConditionStatus, reason, msg string, now time.Time) appsv1.DeploymentCondition {
	return appsv1.DeploymentCondition{Type: t, Status: s, LastUpdateTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now),
		Reason: reason, Message: msg}
}

func getCondition(st appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

// setCondition sets c unless a condition of its type has the same status
// and reason; a condition whose status does not change keeps its
// lastTransitionTime.
func setCondition(st *appsv1.DeploymentStatus, c appsv1.DeploymentCondition) {
	cur := getCondition(*st, c.Type)
	if cur != nil && cur.Status == c.Status && cur.Reason == c.Reason {
		return
	}
	if cur != nil && cur.Status == c.Status {
		c.LastTransitionTime = cur.LastTransitionTime
	}
	removeCondition(st, c.Type)
	st.Conditions = append(st.Conditions, c)
}

func removeCondition(st *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) {
	var out []appsv1.DeploymentCondition
	for _, c := range st.Conditions {
		if c.Type != t {
			out = append(out, c)
		}
	}
	st.Conditions = out
}

func replicaSetToDeploymentCondition(c appsv1.ReplicaSetCondition) appsv1.DeploymentCondition {
	return appsv1.DeploymentCondition{Type: appsv1.DeploymentConditionType(c.Type), Status: c.Status,
		LastTransitionTime: c.LastTransitionTime, LastUpdateTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message}
}

// ---- orderings ----

// byCreation: older first, then by name.
type byCreation []*appsv1.ReplicaSet

func (o byCreation) Len() int      { return len(o) }
func (o byCreation) Swap(i, j int) { o[i], o[j] = o[j], o[i] }
func (o byCreation) Less(i, j int) bool {
	if o[i].CreationTimestamp.Equal(&o[j].CreationTimestamp) {
		return o[i].Name < o[j].Name
	}
	return o[i].CreationTimestamp.Before(&o[j].CreationTimestamp)
}

// bySizeOlder: larger first, then older first.
type bySizeOlder []*appsv1.ReplicaSet

func (o bySizeOlder) Len() int      { return len(o) }
func (o bySizeOlder) Swap(i, j int) { o[i], o[j] = o[j], o[i] }
func (o bySizeOlder) Less(i, j int) bool {
	if replicas(o[i]) == replicas(o[j]) {
		return byCreation(o).Less(i, j)
	}
	return replicas(o[i]) > replicas(o[j])
}

// bySizeNewer: larger first, then newer first.
type bySizeNewer []*appsv1.ReplicaSet

func (o bySizeNewer) Len() int      { return len(o) }
func (o bySizeNewer) Swap(i, j int) { o[i], o[j] = o[j], o[i] }
func (o bySizeNewer) Less(i, j int) bool {
	if replicas(o[i]) == replicas(o[j]) {
		return byCreation(o).Less(j, i)
	}
	return replicas(o[i]) > replicas(o[j])
}

// byRevision: lower revision first, then older first.
type byRevision []*appsv1.ReplicaSet

func (o byRevision) Len() int      { return len(o) }
func (o byRevision) Swap(i, j int) { o[i], o[j] = o[j], o[i] }
func (o byRevision) Less(i, j int) bool {
	r1, _ := Revision(o[i])
	r2, _ := Revision(o[j])
	if r1 == r2 {
		return byCreation(o).Less(i, j)
	}
	return r1 < r2
}
