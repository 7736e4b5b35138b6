package deployment

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/dump"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func podTemplate(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}}},
	}
}

// deploy is a RollingUpdate deployment of n replicas.
func deploy(n int32, surge, unavailable string) *appsv1.Deployment {
	s, u := intstr.Parse(surge), intstr.Parse(unavailable)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "d-uid", Generation: 1},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(n),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: podTemplate("nginx:1"),
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &s, MaxUnavailable: &u}},
			ProgressDeadlineSeconds: ptr.To[int32](600), RevisionHistoryLimit: ptr.To[int32](10)},
	}
}

// rset is a ReplicaSet of spec replicas, available available, created age ago.
func rset(name string, spec, available int32, age time.Duration) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name),
			CreationTimestamp: metav1.NewTime(t0.Add(-age)), Annotations: map[string]string{}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(spec), Template: podTemplate("nginx:" + name)},
		Status: appsv1.ReplicaSetStatus{Replicas: spec, ReadyReplicas: available, AvailableReplicas: available,
			FullyLabeledReplicas: spec},
	}
}

func withMax(rs *appsv1.ReplicaSet, desired, max int32) *appsv1.ReplicaSet {
	SetReplicasAnnotations(rs, desired, max)
	return rs
}

func TestComputeHash(t *testing.T) {
	tmpl := podTemplate("nginx:1")
	h := ComputeHash(&tmpl, nil)
	if h != ComputeHash(&tmpl, nil) {
		t.Fatal("hash is not deterministic")
	}
	// Upstream's recipe, spelled out.
	f := fnv.New32a()
	fmt.Fprintf(f, "%v", dump.ForHash(tmpl))
	if want := safeEncode(f.Sum32()); h != want {
		t.Errorf("hash = %s, want %s", h, want)
	}
	if !strings.HasPrefix(dump.ForHash(tmpl), "(v1.PodTemplateSpec){ObjectMeta:(v1.ObjectMeta){Name:(string) ") {
		t.Errorf("printed form = %.60s…", dump.ForHash(tmpl))
	}
	for _, c := range h {
		if !strings.ContainsRune("bcdfghjklmnpqrstvwxz2456789", c) {
			t.Errorf("hash %q has %q, outside SafeEncodeString's alphabet", h, c)
		}
	}
	one := int32(1)
	withCollision := ComputeHash(&tmpl, &one)
	f.Reset()
	fmt.Fprintf(f, "%v", dump.ForHash(tmpl))
	b := make([]byte, 8)
	binary.LittleEndian.PutUint32(b, 1)
	f.Write(b)
	if want := safeEncode(f.Sum32()); withCollision != want || withCollision == h {
		t.Errorf("hash with collisionCount 1 = %s, want %s (≠ %s)", withCollision, want, h)
	}
	other := podTemplate("nginx:2")
	if ComputeHash(&other, nil) == h {
		t.Error("another template hashes the same")
	}
	// EqualIgnoreHash ignores only the pod-template-hash label.
	labeled := tmpl.DeepCopy()
	labeled.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = h
	if !EqualIgnoreHash(&tmpl, labeled) || EqualIgnoreHash(&tmpl, &other) {
		t.Error("EqualIgnoreHash is wrong")
	}
	if _, ok := tmpl.Labels[appsv1.DefaultDeploymentUniqueLabelKey]; ok {
		t.Error("EqualIgnoreHash changed its argument")
	}
}

func safeEncode(sum uint32) string {
	// rand.SafeEncodeString maps each character of the decimal number.
	const alphanums = "bcdfghjklmnpqrstvwxz2456789"
	s := []byte(fmt.Sprint(sum))
	for i, c := range s {
		s[i] = alphanums[int(c)%len(alphanums)]
	}
	return string(s)
}

func TestResolveFenceposts(t *testing.T) {
	tests := []struct {
		surge, unavailable string
		desired            int32
		wantSurge, wantU   int32
	}{
		{"25%", "25%", 4, 1, 1},
		{"25%", "25%", 1, 1, 0},  // surge rounds up, unavailable down
		{"25%", "25%", 10, 3, 2}, // 2.5 → 3 and 2
		{"0%", "0%", 10, 0, 1},   // both zero: unavailable becomes 1
		{"0", "1%", 10, 0, 1},
		{"1", "0", 3, 1, 0},
		{"50%", "10%", 3, 2, 0},
		{"10", "5", 3, 10, 5},
	}
	for _, tt := range tests {
		s, u := intstr.Parse(tt.surge), intstr.Parse(tt.unavailable)
		gs, gu, err := ResolveFenceposts(&s, &u, tt.desired)
		if err != nil || gs != tt.wantSurge || gu != tt.wantU {
			t.Errorf("ResolveFenceposts(%s, %s, %d) = %d, %d, %v; want %d, %d", tt.surge, tt.unavailable, tt.desired, gs, gu, err, tt.wantSurge, tt.wantU)
		}
	}
	// MaxUnavailable is capped at replicas; Recreate has neither.
	if got := MaxUnavailable(deploy(3, "10", "5")); got != 3 {
		t.Errorf("MaxUnavailable = %d, want 3", got)
	}
	rec := deploy(3, "1", "1")
	rec.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	if MaxSurge(rec) != 0 || MaxUnavailable(rec) != 0 {
		t.Error("Recreate has a surge or unavailable allowance")
	}
	if got := MaxUnavailable(deploy(0, "1", "1")); got != 0 {
		t.Errorf("MaxUnavailable of 0 replicas = %d", got)
	}
}

func TestNewRSNewReplicas(t *testing.T) {
	tests := []struct {
		name    string
		d       *appsv1.Deployment
		newRS   *appsv1.ReplicaSet
		old     []*appsv1.ReplicaSet
		want    int32
		recreat bool
	}{
		{name: "first step takes the surge", d: deploy(10, "3", "0"), newRS: rset("new", 0, 0, 0),
			old: []*appsv1.ReplicaSet{rset("old", 10, 10, time.Hour)}, want: 3},
		{name: "percent surge rounds up", d: deploy(10, "25%", "0"), newRS: rset("new", 2, 2, 0),
			old: []*appsv1.ReplicaSet{rset("old", 10, 10, time.Hour)}, want: 3},
		{name: "at the limit: no change", d: deploy(10, "2", "0"), newRS: rset("new", 2, 2, 0),
			old: []*appsv1.ReplicaSet{rset("old", 10, 10, time.Hour)}, want: 2},
		{name: "never above replicas", d: deploy(4, "2", "0"), newRS: rset("new", 3, 3, 0),
			old: nil, want: 4},
		{name: "old pods count against the surge", d: deploy(4, "1", "1"), newRS: rset("new", 1, 0, 0),
			old: []*appsv1.ReplicaSet{rset("a", 2, 2, 2*time.Hour), rset("b", 1, 1, time.Hour)}, want: 2},
		{name: "recreate: all at once", d: deploy(5, "1", "1"), newRS: rset("new", 0, 0, 0),
			old: []*appsv1.ReplicaSet{rset("old", 5, 5, time.Hour)}, want: 5, recreat: true},
	}
	for _, tt := range tests {
		if tt.recreat {
			tt.d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
		}
		got, err := NewRSNewReplicas(tt.d, append(tt.old, tt.newRS), tt.newRS)
		if err != nil || got != tt.want {
			t.Errorf("%s: got %d, %v; want %d", tt.name, got, err, tt.want)
		}
	}
}

func opsString(ops []scaleOp) string {
	var parts []string
	for _, o := range ops {
		parts = append(parts, fmt.Sprintf("%s:%d->%d", o.RS.Name, replicas(o.RS), o.To))
	}
	return strings.Join(parts, " ")
}

func TestScaleDownAmounts(t *testing.T) {
	tests := []struct {
		name      string
		d         *appsv1.Deployment
		newRS     *appsv1.ReplicaSet
		old       []*appsv1.ReplicaSet
		wantMax   int32
		wantClean string
		wantDown  string // after the cleanup ops are applied
	}{
		{
			// Upstream's example: 10 replicas, maxUnavailable 2, maxSurge 3;
			// the new ReplicaSet has 5 pods, none available.
			name: "new pods not available: nothing", d: deploy(10, "3", "2"),
			newRS: rset("new", 5, 0, 0), old: []*appsv1.ReplicaSet{rset("old", 8, 8, time.Hour)},
			wantMax: 0,
		},
		{
			name: "maxUnavailable allows some while new pods start", d: deploy(10, "3", "2"),
			newRS: rset("new", 3, 0, 0), old: []*appsv1.ReplicaSet{rset("old", 10, 10, time.Hour)},
			wantMax: 2, wantDown: "old:10->8",
		},
		{
			name: "new pods available: old scale down by the excess", d: deploy(10, "3", "2"),
			newRS: rset("new", 3, 3, 0), old: []*appsv1.ReplicaSet{rset("old", 10, 10, time.Hour)},
			wantMax: 5, wantDown: "old:10->5",
		},
		{
			name: "unhealthy old pods go first, oldest ReplicaSet first", d: deploy(10, "3", "2"),
			newRS: rset("new", 3, 3, 0),
			old:   []*appsv1.ReplicaSet{rset("mid", 4, 2, time.Hour), rset("oldest", 6, 5, 2*time.Hour)},
			// 13 pods - 8 min - 0 new unavailable = 5
			wantMax: 5, wantClean: "oldest:6->5 mid:4->2",
			// then available 5+2+3 = 10, min 8: 2 more from the oldest.
			wantDown: "oldest:5->3",
		},
		{
			name: "cleanup bounded by maxScaledDown", d: deploy(10, "0", "1"),
			newRS: rset("new", 0, 0, 0), old: []*appsv1.ReplicaSet{rset("old", 10, 5, time.Hour)},
			wantMax: 1, wantClean: "old:10->9",
		},
		{
			// Just scaled down: status still counts the 4 pods being deleted.
			name: "stale status of a scaled-down ReplicaSet is not counted", d: deploy(4, "1", "1"),
			newRS: rset("new", 2, 2, 0), old: []*appsv1.ReplicaSet{func() *appsv1.ReplicaSet {
				rs := rset("old", 2, 4, time.Hour)
				rs.Status.Replicas = 4
				return rs
			}()},
			// 4 pods - 3 min - 0 = 1; available counts 2+2, min 3: 1.
			wantMax: 1, wantDown: "old:2->1",
		},
		{
			name: "enough unavailable already: nothing", d: deploy(4, "1", "1"),
			newRS: rset("new", 1, 0, 0), old: []*appsv1.ReplicaSet{rset("old", 3, 3, time.Hour)},
			wantMax: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			all := append(slices.Clone(tt.old), tt.newRS)
			got := oldRSsMaxScaleDown(tt.d, all, tt.newRS)
			if got != tt.wantMax {
				t.Fatalf("maxScaledDown = %d, want %d", got, tt.wantMax)
			}
			if got <= 0 {
				return
			}
			clean := cleanupUnhealthyOps(tt.old, got)
			if s := opsString(clean); s != tt.wantClean {
				t.Errorf("cleanup = %q, want %q", s, tt.wantClean)
			}
			old := slices.Clone(tt.old)
			for _, o := range clean {
				for i := range old {
					if old[i] == o.RS {
						c := o.RS.DeepCopy()
						c.Spec.Replicas = ptr.To(o.To)
						old[i] = c
					}
				}
			}
			down := scaleDownOldOps(tt.d, append(slices.Clone(old), tt.newRS), old)
			if s := opsString(down); s != tt.wantDown {
				t.Errorf("scale down = %q, want %q", s, tt.wantDown)
			}
		})
	}
}

func TestProportionalScale(t *testing.T) {
	// Every case: maxSurge 0, maxUnavailable 1, and ReplicaSets sized for
	// a deployment of `from` replicas.
	tests := []struct {
		name     string
		from, to int32
		newRS    int32
		old      []int32 // oldest first
		wantNew  int32
		wantOld  []int32
		wantOp   string
	}{
		{name: "5 -> 10", from: 5, to: 10, newRS: 2, old: []int32{3}, wantNew: 4, wantOld: []int32{6}, wantOp: "up"},
		{name: "5 -> 3", from: 5, to: 3, newRS: 2, old: []int32{3}, wantNew: 1, wantOld: []int32{2}, wantOp: "down"},
		{name: "9 -> 4", from: 9, to: 4, newRS: 8, old: []int32{1}, wantNew: 4, wantOld: []int32{0}, wantOp: "down"},
		{name: "7 -> 10", from: 7, to: 10, newRS: 2, old: []int32{3, 2}, wantNew: 3, wantOld: []int32{4, 3}, wantOp: "up"},
		{name: "13 -> 8", from: 13, to: 8, newRS: 2, old: []int32{8, 3}, wantNew: 1, wantOld: []int32{5, 2}, wantOp: "down"},
		{name: "to zero", from: 6, to: 0, newRS: 2, old: []int32{4}, wantNew: 0, wantOld: []int32{0}, wantOp: "down"},
		// Leftovers go to the largest ReplicaSet.
		{name: "3 -> 4 leftover", from: 3, to: 4, newRS: 1, old: []int32{1, 1}, wantNew: 2, wantOld: []int32{1, 1}, wantOp: "up"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := deploy(tt.to, "0", "1")
			d.Status.Replicas = tt.from
			newRS := withMax(rset("new", tt.newRS, tt.newRS, 0), tt.from, tt.from)
			var old []*appsv1.ReplicaSet
			for i, n := range tt.old {
				old = append(old, withMax(rset(fmt.Sprintf("old%d", i), n, n, time.Duration(len(tt.old)-i)*time.Hour), tt.from, tt.from))
			}
			ops, op := proportionalScaleOps(d, newRS, old)
			got := map[string]int32{}
			for _, o := range ops {
				got[o.RS.Name] = o.To
			}
			if op != tt.wantOp || got["new"] != tt.wantNew {
				t.Errorf("op %q new %d; want %q %d (%s)", op, got["new"], tt.wantOp, tt.wantNew, opsString(ops))
			}
			for i, want := range tt.wantOld {
				if g := got[fmt.Sprintf("old%d", i)]; g != want {
					t.Errorf("old%d = %d, want %d (%s)", i, g, want, opsString(ops))
				}
			}
		})
	}
}

func TestFindReplicaSets(t *testing.T) {
	d := deploy(3, "1", "1")
	cur := rset("cur", 3, 3, time.Minute)
	cur.Spec.Template = *d.Spec.Template.DeepCopy()
	cur.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = "abc"
	dup := cur.DeepCopy() // same template, newer
	dup.Name, dup.UID, dup.CreationTimestamp = "dup", "dup", metav1.NewTime(t0)
	old := rset("old", 0, 0, time.Hour)
	older := rset("older", 2, 2, 2*time.Hour)
	list := []*appsv1.ReplicaSet{dup, old, cur, older}
	if got := FindNewReplicaSet(d, list); got != cur {
		t.Errorf("new = %v, want the oldest matching (cur)", got.Name)
	}
	with, all := FindOldReplicaSets(d, list)
	if names(with) != "dup,older" || names(all) != "dup,old,older" {
		t.Errorf("old with replicas %q, all %q", names(with), names(all))
	}
	if got := FindActiveOrLatest(nil, []*appsv1.ReplicaSet{old, older}); got != older {
		t.Errorf("active = %v", got.Name)
	}
	if got := FindActiveOrLatest(cur, []*appsv1.ReplicaSet{old, older}); got != nil {
		t.Errorf("two active: got %v", got.Name)
	}
	zero := rset("zero", 0, 0, time.Minute)
	if got := FindActiveOrLatest(nil, []*appsv1.ReplicaSet{old, zero}); got != zero {
		t.Errorf("none active: want the newest, got %v", got.Name)
	}
	// byRevision: by number, then age.
	r := []*appsv1.ReplicaSet{rset("r10", 0, 0, 0), rset("r2", 0, 0, 0), rset("r2old", 0, 0, time.Hour), rset("none", 0, 0, 0)}
	r[0].Annotations[RevisionAnnotation] = "10"
	r[1].Annotations[RevisionAnnotation] = "2"
	r[2].Annotations[RevisionAnnotation] = "2"
	slices.SortFunc(r, func(a, b *appsv1.ReplicaSet) int {
		if byRevision([]*appsv1.ReplicaSet{a, b}).Less(0, 1) {
			return -1
		}
		return 1
	})
	if names(r) != "none,r2old,r2,r10" {
		t.Errorf("by revision: %s", names(r))
	}
	if MaxRevision(r) != 10 {
		t.Errorf("MaxRevision = %d", MaxRevision(r))
	}
}

func names(rss []*appsv1.ReplicaSet) string {
	var out []string
	for _, rs := range rss {
		out = append(out, rs.Name)
	}
	return strings.Join(out, ",")
}

func TestSetNewReplicaSetAnnotations(t *testing.T) {
	d := deploy(4, "25%", "25%")
	d.Annotations = map[string]string{"team": "a", RevisionAnnotation: "7", corev1.LastAppliedConfigAnnotation: "{}"}
	rs := rset("new", 0, 0, 0)
	if !SetNewReplicaSetAnnotations(d, rs, "3", false, maxRevHistoryLengthInChars) {
		t.Fatal("nothing changed")
	}
	want := map[string]string{"team": "a", RevisionAnnotation: "3", DesiredReplicasAnnotation: "4", MaxReplicasAnnotation: "5"}
	if fmt.Sprint(rs.Annotations) != fmt.Sprint(want) {
		t.Errorf("annotations = %v, want %v", rs.Annotations, want)
	}
	if SetNewReplicaSetAnnotations(d, rs, "3", true, maxRevHistoryLengthInChars) {
		t.Error("a second pass changed something")
	}
	// A rollback to this ReplicaSet: revision 3 → 5, history "3"; again → "3,5".
	SetNewReplicaSetAnnotations(d, rs, "5", true, maxRevHistoryLengthInChars)
	if rs.Annotations[RevisionAnnotation] != "5" || rs.Annotations[RevisionHistoryAnnotation] != "3" {
		t.Errorf("after rollback: %v", rs.Annotations)
	}
	SetNewReplicaSetAnnotations(d, rs, "8", true, maxRevHistoryLengthInChars)
	if rs.Annotations[RevisionAnnotation] != "8" || rs.Annotations[RevisionHistoryAnnotation] != "3,5" {
		t.Errorf("after second rollback: %v", rs.Annotations)
	}
	// The history is trimmed from the front to the limit.
	SetNewReplicaSetAnnotations(d, rs, "9", true, 4)
	if rs.Annotations[RevisionHistoryAnnotation] != "5,8" {
		t.Errorf("trimmed history = %q", rs.Annotations[RevisionHistoryAnnotation])
	}
	// Never lowered.
	if SetNewReplicaSetAnnotations(d, rs, "2", true, maxRevHistoryLengthInChars) || rs.Annotations[RevisionAnnotation] != "9" {
		t.Errorf("revision lowered: %v", rs.Annotations)
	}
	if !SetDeploymentRevision(d, "9") || SetDeploymentRevision(d, "9") || d.Annotations[RevisionAnnotation] != "9" {
		t.Error("SetDeploymentRevision")
	}
}

func cond(st appsv1.DeploymentStatus, ct appsv1.DeploymentConditionType) appsv1.DeploymentCondition {
	if c := getCondition(st, ct); c != nil {
		return *c
	}
	return appsv1.DeploymentCondition{}
}

func TestCalculateStatus(t *testing.T) {
	d := deploy(4, "1", "1")
	d.Generation = 5
	newRS := rset("new", 2, 1, 0)
	newRS.Status.ReadyReplicas = 2
	newRS.Status.TerminatingReplicas = ptr.To[int32](1)
	oldRS := rset("old", 2, 2, time.Hour)
	oldRS.Status.ObservedGeneration = 1
	oldRS.Status.TerminatingReplicas = ptr.To[int32](2)
	st := calculateStatus([]*appsv1.ReplicaSet{oldRS, newRS}, newRS, d, t0)
	if st.ObservedGeneration != 5 || st.Replicas != 4 || st.UpdatedReplicas != 2 || st.ReadyReplicas != 4 ||
		st.AvailableReplicas != 3 || st.UnavailableReplicas != 1 || st.TerminatingReplicas == nil || *st.TerminatingReplicas != 3 {
		t.Errorf("status = %+v", st)
	}
	if c := cond(st, appsv1.DeploymentAvailable); c.Status != corev1.ConditionTrue || c.Reason != ReasonMinimumReplicasAvailable ||
		c.Message != "Deployment has minimum availability." {
		t.Errorf("available = %+v", c)
	}
	newRS.Status.AvailableReplicas = 0
	st = calculateStatus([]*appsv1.ReplicaSet{oldRS, newRS}, newRS, d, t0)
	if c := cond(st, appsv1.DeploymentAvailable); c.Status != corev1.ConditionFalse || c.Reason != ReasonMinimumReplicasUnavailable ||
		c.Message != "Deployment does not have minimum availability." {
		t.Errorf("available = %+v", c)
	}
	// A ReplicaSet seen by its controller without terminatingReplicas: unknown.
	oldRS.Status.TerminatingReplicas = nil
	if st := calculateStatus([]*appsv1.ReplicaSet{oldRS, newRS}, newRS, d, t0); st.TerminatingReplicas != nil {
		t.Error("terminatingReplicas should be unknown")
	}
}

func TestRolloutConditions(t *testing.T) {
	earlier := t0.Add(-time.Minute)
	progressing := func(reason string, s corev1.ConditionStatus, at time.Time) appsv1.DeploymentCondition {
		return newCondition(appsv1.DeploymentProgressing, s, reason, "x", at)
	}
	tests := []struct {
		name       string
		replicas   int32                   // 3 if 0
		old        appsv1.DeploymentStatus // the deployment's current status
		new        appsv1.DeploymentStatus // counts calculated now
		deadline   *int32
		newRSFail  bool
		wantReason string
		wantStatus corev1.ConditionStatus
		wantMsg    string
		wantUpdate time.Time // lastUpdateTime
		wantTrans  time.Time // lastTransitionTime
	}{
		{
			name:       "complete",
			old:        appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 2, Conditions: []appsv1.DeploymentCondition{progressing(ReasonReplicaSetUpdated, corev1.ConditionTrue, earlier)}},
			new:        appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 3},
			wantReason: ReasonNewReplicaSetAvailable, wantStatus: corev1.ConditionTrue,
			wantMsg:    `ReplicaSet "web-abc" has successfully progressed.`,
			wantUpdate: t0, wantTrans: earlier,
		},
		{
			name: "progress refreshes lastUpdateTime only", replicas: 4,
			old:        appsv1.DeploymentStatus{Replicas: 4, UpdatedReplicas: 1, Conditions: []appsv1.DeploymentCondition{progressing(ReasonReplicaSetUpdated, corev1.ConditionTrue, earlier)}},
			new:        appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 4, UpdatedReplicas: 2},
			wantReason: ReasonReplicaSetUpdated, wantStatus: corev1.ConditionTrue,
			wantMsg:    `ReplicaSet "web-abc" is progressing.`,
			wantUpdate: t0, wantTrans: earlier,
		},
		{
			name: "no progress within the deadline: unchanged", replicas: 4,
			old:        appsv1.DeploymentStatus{Replicas: 4, UpdatedReplicas: 1, Conditions: []appsv1.DeploymentCondition{progressing(ReasonNewReplicaSetCreated, corev1.ConditionTrue, earlier)}},
			new:        appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 4, UpdatedReplicas: 1},
			wantReason: ReasonNewReplicaSetCreated, wantStatus: corev1.ConditionTrue, wantMsg: "x",
			wantUpdate: earlier, wantTrans: earlier,
		},
		{
			name: "no progress past the deadline", replicas: 4,
			old:        appsv1.DeploymentStatus{Replicas: 4, UpdatedReplicas: 1, Conditions: []appsv1.DeploymentCondition{progressing(ReasonReplicaSetUpdated, corev1.ConditionTrue, earlier)}},
			new:        appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 4, UpdatedReplicas: 1},
			deadline:   ptr.To[int32](30),
			wantReason: ReasonTimedOut, wantStatus: corev1.ConditionFalse,
			wantMsg:    `ReplicaSet "web-abc" has timed out progressing.`,
			wantUpdate: t0, wantTrans: t0,
		},
		{
			name:       "already complete: a resync changes nothing",
			old:        appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3, Conditions: []appsv1.DeploymentCondition{progressing(ReasonNewReplicaSetAvailable, corev1.ConditionTrue, earlier)}},
			new:        appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 2},
			wantReason: ReasonNewReplicaSetAvailable, wantStatus: corev1.ConditionTrue, wantMsg: "x",
			wantUpdate: earlier, wantTrans: earlier,
		},
		{
			name:     "no deadline: no Progressing condition",
			old:      appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{progressing(ReasonReplicaSetUpdated, corev1.ConditionTrue, earlier)}},
			new:      appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 3},
			deadline: ptr.To[int32](1<<31 - 1),
		},
		{
			name:       "a ReplicaSet failure is copied",
			old:        appsv1.DeploymentStatus{Replicas: 0, Conditions: []appsv1.DeploymentCondition{progressing(ReasonNewReplicaSetCreated, corev1.ConditionTrue, earlier)}},
			new:        appsv1.DeploymentStatus{ObservedGeneration: 1},
			newRSFail:  true,
			wantReason: ReasonNewReplicaSetCreated, wantStatus: corev1.ConditionTrue, wantMsg: "x",
			wantUpdate: earlier, wantTrans: earlier,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := deploy(3, "1", "1")
			if tt.replicas != 0 {
				d.Spec.Replicas = ptr.To(tt.replicas)
			}
			if tt.deadline != nil {
				d.Spec.ProgressDeadlineSeconds = tt.deadline
			}
			d.Status = tt.old
			newRS := rset("web-abc", 3, 3, 0)
			if tt.newRSFail {
				newRS.Status.Conditions = []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue,
					Reason: "FailedCreate", Message: "quota", LastTransitionTime: metav1.NewTime(earlier)}}
			}
			st := tt.new
			st.Conditions = slices.Clone(tt.old.Conditions)
			rolloutConditions(d, []*appsv1.ReplicaSet{newRS}, newRS, &st, t0)
			c := getCondition(st, appsv1.DeploymentProgressing)
			if tt.wantReason == "" {
				if c != nil {
					t.Fatalf("Progressing = %+v, want none", c)
				}
				return
			}
			if c == nil || c.Reason != tt.wantReason || c.Status != tt.wantStatus || c.Message != tt.wantMsg ||
				!c.LastUpdateTime.Time.Equal(tt.wantUpdate) || !c.LastTransitionTime.Time.Equal(tt.wantTrans) {
				t.Errorf("Progressing = %+v\nwant reason %s status %s message %q updated %v transitioned %v", c, tt.wantReason, tt.wantStatus, tt.wantMsg, tt.wantUpdate, tt.wantTrans)
			}
			f := getCondition(st, appsv1.DeploymentReplicaFailure)
			if tt.newRSFail != (f != nil) {
				t.Errorf("ReplicaFailure = %+v", f)
			}
			if f != nil && (f.Reason != "FailedCreate" || f.Message != "quota") {
				t.Errorf("ReplicaFailure = %+v", f)
			}
		})
	}
}

func TestStuckRequeue(t *testing.T) {
	d := deploy(3, "1", "1")
	d.Spec.ProgressDeadlineSeconds = ptr.To[int32](60)
	incomplete := appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 3, UpdatedReplicas: 1}
	d.Status.Conditions = []appsv1.DeploymentCondition{newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonReplicaSetUpdated, "", t0.Add(-20*time.Second))}
	if after, ok := stuckRequeue(d, &incomplete, t0); !ok || after != 41*time.Second {
		t.Errorf("after %v %v, want 41s", after, ok)
	}
	if after, ok := stuckRequeue(d, &incomplete, t0.Add(time.Minute)); !ok || after != 0 {
		t.Errorf("past the deadline: after %v %v, want now", after, ok)
	}
	complete := appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 3}
	if _, ok := stuckRequeue(d, &complete, t0); ok {
		t.Error("a complete deployment was requeued")
	}
	d.Status.Conditions[0].Reason = ReasonTimedOut
	if _, ok := stuckRequeue(d, &incomplete, t0); ok {
		t.Error("a timed-out deployment was requeued")
	}
}

func TestOldPodsRunning(t *testing.T) {
	newRS := rset("new", 1, 0, 0)
	oldRS := rset("old", 0, 0, time.Hour)
	oldRS.Status.Replicas = 0
	pod := func(ph corev1.PodPhase) *corev1.Pod { return &corev1.Pod{Status: corev1.PodStatus{Phase: ph}} }
	tests := []struct {
		name string
		pods map[types.UID][]*corev1.Pod
		want bool
	}{
		{"none", map[types.UID][]*corev1.Pod{"old": {}}, false},
		{"terminal only", map[types.UID][]*corev1.Pod{"old": {pod(corev1.PodSucceeded), pod(corev1.PodFailed)}}, false},
		{"running", map[types.UID][]*corev1.Pod{"old": {pod(corev1.PodRunning)}}, true},
		{"unknown counts", map[types.UID][]*corev1.Pod{"old": {pod(corev1.PodUnknown)}}, true},
		{"new pods do not count", map[types.UID][]*corev1.Pod{"new": {pod(corev1.PodRunning)}}, false},
	}
	for _, tt := range tests {
		if got := oldPodsRunning(newRS, []*appsv1.ReplicaSet{oldRS}, tt.pods); got != tt.want {
			t.Errorf("%s: got %v", tt.name, got)
		}
	}
	oldRS.Status.Replicas = 1
	if !oldPodsRunning(newRS, []*appsv1.ReplicaSet{oldRS}, nil) {
		t.Error("an old ReplicaSet reporting pods")
	}
}
