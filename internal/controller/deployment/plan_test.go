package deployment

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// ---- a fake API for plans: applyPlan writes a Plan into a State ----

// applyPlan is what apply does, on a State instead of the API server: the
// claims, the ReplicaSet steps and the status, as the informers would
// show them next.
func applyPlan(t *testing.T, st State, p Plan) State {
	t.Helper()
	if p.Err != nil {
		t.Fatalf("plan failed: %v", p.Err)
	}
	next := State{Deployment: st.Deployment, Pods: st.Pods, Now: st.Now}
	byName := map[string]*appsv1.ReplicaSet{}
	var order []string
	for _, rs := range st.ReplicaSets {
		byName[rs.Name] = rs.DeepCopy()
		order = append(order, rs.Name)
	}
	for _, rs := range p.Adopt {
		c := byName[rs.Name]
		c.OwnerReferences = append(c.OwnerReferences, *metav1.NewControllerRef(st.Deployment, controllerKind))
	}
	for _, rs := range p.Release {
		byName[rs.Name].OwnerReferences = nil
	}
	for _, s := range p.Steps {
		rs := s.ReplicaSet.DeepCopy()
		switch s.Kind {
		case CreateReplicaSet:
			if byName[rs.Name] != nil {
				t.Fatalf("create of %s, which exists", rs.Name)
			}
			rs.UID = types.UID(rs.Name)
			rs.CreationTimestamp = metav1.NewTime(st.Now)
			order = append(order, rs.Name)
		case UpdateReplicaSet:
			if byName[rs.Name] == nil {
				t.Fatalf("update of %s, which does not exist", rs.Name)
			}
			rs.Generation++
		case DeleteReplicaSet:
			delete(byName, rs.Name)
			continue
		}
		byName[rs.Name] = rs
	}
	for _, n := range order {
		if rs := byName[n]; rs != nil {
			next.ReplicaSets = append(next.ReplicaSets, rs)
			delete(byName, n)
		}
	}
	if p.Status != nil {
		d := st.Deployment.DeepCopy()
		d.Status = p.Status.Status
		if rev, ok := p.Status.Annotations[RevisionAnnotation]; ok {
			if d.Annotations == nil {
				d.Annotations = map[string]string{}
			}
			d.Annotations[RevisionAnnotation] = rev
		}
		next.Deployment = d
	}
	return next
}

// podsStep is the ReplicaSet controller and the nodes: every ReplicaSet
// runs exactly its replicas, all ready and available.
func podsStep(st State) State {
	for _, rs := range st.ReplicaSets {
		n := replicas(rs)
		rs.Status = appsv1.ReplicaSetStatus{Replicas: n, FullyLabeledReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
			ObservedGeneration: rs.Generation, TerminatingReplicas: ptr.To[int32](0)}
	}
	return st
}

// describe prints a Plan one line a write, for the table tests.
func describe(p Plan) []string {
	var out []string
	for _, e := range p.Events {
		out = append(out, fmt.Sprintf("event %s %s: %s", e.Type, e.Reason, e.Message))
	}
	for _, rs := range p.Adopt {
		out = append(out, "adopt "+rs.Name)
	}
	for _, rs := range p.Release {
		out = append(out, "release "+rs.Name)
	}
	for _, s := range p.Steps {
		line := fmt.Sprintf("%s %s", s.Kind, s.ReplicaSet.Name)
		if s.Kind != DeleteReplicaSet {
			line += fmt.Sprintf(" replicas=%d revision=%s", replicas(s.ReplicaSet), s.ReplicaSet.Annotations[RevisionAnnotation])
		}
		if h := s.ReplicaSet.Annotations[RevisionHistoryAnnotation]; h != "" {
			line += " history=" + h
		}
		if s.Quiet {
			line += " (quiet)"
		}
		out = append(out, line)
		if s.Event != nil {
			out = append(out, fmt.Sprintf("  then event %s %s: %s", s.Event.Type, s.Event.Reason, s.Event.Message))
		}
	}
	if d := p.Status; d != nil {
		line := fmt.Sprintf("status revision=%s replicas=%d updated=%d available=%d", d.Annotations[RevisionAnnotation],
			d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.AvailableReplicas)
		if c := getCondition(d.Status, appsv1.DeploymentProgressing); c != nil {
			line += fmt.Sprintf(" Progressing=%s/%s %q", c.Status, c.Reason, c.Message)
		}
		if d.Status.CollisionCount != nil {
			line += fmt.Sprintf(" collisionCount=%d", *d.Status.CollisionCount)
		}
		out = append(out, line)
	}
	switch {
	case p.Result.RequeueAfter > 0:
		out = append(out, fmt.Sprintf("requeue after %s", p.Result.RequeueAfter))
	case p.Result.Requeue:
		out = append(out, "requeue")
	}
	return out
}

// ---- fixtures ----

// rolledOut is a deployment at revision 1 (template nginx:1, all n
// replicas available in "web-v1"), with its spec then changed by edit.
func rolledOut(n int32, edit func(*appsv1.Deployment)) State {
	d := deploy(n, "3", "2")
	d.Annotations = map[string]string{RevisionAnnotation: "1"}
	v1 := ownedRS(d, "web-v1", n, time.Hour, "1")
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
		TerminatingReplicas: ptr.To[int32](0),
		Conditions: []appsv1.DeploymentCondition{
			newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, ReasonMinimumReplicasAvailable, "Deployment has minimum availability.", t0.Add(-time.Hour)),
			newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewReplicaSetAvailable, `ReplicaSet "web-v1" has successfully progressed.`, t0.Add(-time.Hour)),
		}}
	st := podsStep(State{Deployment: d, ReplicaSets: []*appsv1.ReplicaSet{v1}, Now: t0})
	if edit != nil {
		d.Generation++
		edit(d)
	}
	return st
}

// ownedRS is a ReplicaSet of d with d's current template, spec replicas
// (all available), created age ago, at revision rev.
func ownedRS(d *appsv1.Deployment, name string, spec int32, age time.Duration, rev string) *appsv1.ReplicaSet {
	rs := rset(name, spec, spec, age)
	rs.Spec.Template = *d.Spec.Template.DeepCopy()
	rs.Labels = d.Spec.Template.Labels
	rs.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(d, controllerKind)}
	rs.Annotations[RevisionAnnotation] = rev
	SetReplicasAnnotations(rs, dReplicas(d), dReplicas(d)+MaxSurge(d))
	return rs
}

func setImage(image string) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = image }
}

func newRSName(d *appsv1.Deployment) string {
	return d.Name + "-" + ComputeHash(&d.Spec.Template, d.Status.CollisionCount)
}

// ---- the rollout, driven by the real plan ----

// TestRollingUpdateSimulation rolls deployments out by running plan,
// applying its Plan, and letting pods become available one step after
// they are asked for. No step exceeds replicas+maxSurge pods nor leaves
// fewer than replicas-maxUnavailable available, and the rollout finishes
// complete (NewReplicaSetAvailable) with the old ReplicaSet at 0.
func TestRollingUpdateSimulation(t *testing.T) {
	tests := []struct {
		replicas           int32
		surge, unavailable string
	}{
		{3, "25%", "25%"}, {4, "25%", "25%"}, {10, "25%", "25%"}, {10, "0", "1"}, {10, "1", "0"},
		{5, "3", "2"}, {1, "25%", "25%"}, {7, "100%", "0"}, {7, "0", "100%"}, {2, "50%", "50%"},
	}
	for _, tt := range tests {
		name := fmt.Sprintf("%d replicas surge %s unavailable %s", tt.replicas, tt.surge, tt.unavailable)
		t.Run(name, func(t *testing.T) {
			st := rolledOut(tt.replicas, func(d *appsv1.Deployment) {
				s, u := deploy(1, tt.surge, tt.unavailable).Spec.Strategy.RollingUpdate.MaxSurge, deploy(1, tt.surge, tt.unavailable).Spec.Strategy.RollingUpdate.MaxUnavailable
				d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: s, MaxUnavailable: u}
				setImage("nginx:2")(d)
			})
			d := st.Deployment
			maxPods := tt.replicas + MaxSurge(d)
			minAvailable := tt.replicas - MaxUnavailable(d)
			check := func(step int, when string) {
				var total, avail int32
				for _, rs := range st.ReplicaSets {
					total += replicas(rs)
					avail += min(rs.Status.AvailableReplicas, replicas(rs))
				}
				if total > maxPods || avail < minAvailable {
					t.Fatalf("step %d, %s: %d pods (max %d), %d available (min %d)", step, when, total, maxPods, avail, minAvailable)
				}
			}
			for step := 0; ; step++ {
				if step > 100 {
					t.Fatal("no convergence")
				}
				p := plan(st)
				for _, s := range p.Steps {
					if s.Kind == UpdateReplicaSet && s.Event == nil && s.ReplicaSet.Annotations[RevisionAnnotation] == "" {
						t.Fatalf("step %d: update of %s without a revision", step, s.ReplicaSet.Name)
					}
				}
				st = applyPlan(t, st, p)
				check(step, "after the controller")
				st = podsStep(st)
				check(step, "after the pods")
				st.Now = st.Now.Add(time.Second)
				c := getCondition(st.Deployment.Status, appsv1.DeploymentProgressing)
				if len(p.Steps) == 0 && p.Status == nil {
					if c == nil || c.Reason != ReasonNewReplicaSetAvailable || !DeploymentComplete(st.Deployment, &st.Deployment.Status) {
						t.Fatalf("step %d: nothing more to do, but not complete: %+v", step, st.Deployment.Status)
					}
					break
				}
			}
			if n := len(st.ReplicaSets); n != 2 {
				t.Fatalf("%d ReplicaSets, want 2", n)
			}
			for _, rs := range st.ReplicaSets {
				want := int32(0)
				if rs.Name == newRSName(st.Deployment) {
					want = tt.replicas
				}
				if replicas(rs) != want {
					t.Errorf("%s has %d replicas, want %d", rs.Name, replicas(rs), want)
				}
			}
			if got := st.Deployment.Annotations[RevisionAnnotation]; got != "2" {
				t.Errorf("deployment revision %q, want 2", got)
			}
		})
	}
}

// TestRecreateSimulation: old pods all go before the new ReplicaSet is
// created at full size.
func TestRecreateSimulation(t *testing.T) {
	st := rolledOut(3, func(d *appsv1.Deployment) {
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
		setImage("nginx:2")(d)
	})
	oldPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "old-pod",
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(st.ReplicaSets[0], appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	st.Pods = []*corev1.Pod{oldPod}
	newName := newRSName(st.Deployment)
	for step := 0; step < 10; step++ {
		p := plan(st)
		for _, s := range p.Steps {
			if s.Kind == CreateReplicaSet && (len(st.Pods) > 0 || st.ReplicaSets[0].Status.Replicas > 0) {
				t.Fatalf("step %d: new ReplicaSet created while old pods run", step)
			}
		}
		st = applyPlan(t, st, p)
		if step == 1 {
			// The old ReplicaSet reports no pods, but its pod is still
			// terminating: the next pass waits for it.
			if len(p.Steps) != 0 {
				t.Fatalf("step 1: %v", describe(p))
			}
			st.Pods = nil
		}
		if step != 0 {
			st = podsStep(st)
		} else {
			// The ReplicaSet controller reports the scale-down; the pod is
			// still there.
			st.ReplicaSets[0].Status = appsv1.ReplicaSetStatus{ObservedGeneration: st.ReplicaSets[0].Generation, TerminatingReplicas: ptr.To[int32](1)}
		}
	}
	if len(st.ReplicaSets) != 2 || st.ReplicaSets[1].Name != newName || replicas(st.ReplicaSets[1]) != 3 || replicas(st.ReplicaSets[0]) != 0 {
		t.Fatalf("after recreate: %s", names(st.ReplicaSets))
	}
	if !DeploymentComplete(st.Deployment, &st.Deployment.Status) {
		t.Errorf("not complete: %+v", st.Deployment.Status)
	}
}

// ---- State → Plan ----

func TestPlan(t *testing.T) {
	v2 := func(d *appsv1.Deployment) string { return newRSName(d) }
	tests := []struct {
		name  string
		state func() State
		want  func(st State) []string
	}{
		{
			name:  "rolled out: nothing to do",
			state: func() State { return rolledOut(10, nil) },
			want:  func(State) []string { return nil },
		},
		{
			name:  "new template: create the new ReplicaSet with the surge, scale the old by maxUnavailable",
			state: func() State { return rolledOut(10, setImage("nginx:2")) },
			want: func(st State) []string {
				n := v2(st.Deployment)
				return []string{
					"create " + n + " replicas=3 revision=2",
					"  then event Normal ScalingReplicaSet: Scaled up replica set " + n + " from 0 to 3",
					"update web-v1 replicas=8 revision=1 (quiet)",
					"  then event Normal ScalingReplicaSet: Scaled down replica set web-v1 from 10 to 8",
					`status revision=2 replicas=10 updated=0 available=10 Progressing=True/NewReplicaSetCreated "Created new replica set \"` + n + `\""`,
				}
			},
		},
		{
			name:  "new pods available: grow the new ReplicaSet to the surge limit first",
			state: func() State { return midRollout(8, 3) },
			want: func(st State) []string {
				n := v2(st.Deployment)
				return []string{
					"update " + n + " replicas=5 revision=2",
					"  then event Normal ScalingReplicaSet: Scaled up replica set " + n + " from 3 to 5",
					`status revision=2 replicas=11 updated=3 available=11 Progressing=True/ReplicaSetUpdated "ReplicaSet \"` + n + `\" is progressing."`,
				}
			},
		},
		{
			name: "complete: old ReplicaSets beyond revisionHistoryLimit are deleted, oldest first",
			state: func() State {
				st := rolledOut(2, nil)
				st.Deployment.Spec.RevisionHistoryLimit = ptr.To[int32](1)
				for i, name := range []string{"web-old1", "web-old2"} {
					rs := rset(name, 0, 0, time.Duration(3-i)*time.Hour)
					rs.OwnerReferences = st.ReplicaSets[0].OwnerReferences
					rs.Labels = st.ReplicaSets[0].Labels
					rs.Annotations[RevisionAnnotation] = "0"
					st.ReplicaSets = append(st.ReplicaSets, rs)
				}
				return st
			},
			want: func(State) []string { return []string{"delete web-old1"} },
		},
		{
			name: "Recreate: old ReplicaSets go to 0 first",
			state: func() State {
				return rolledOut(3, func(d *appsv1.Deployment) {
					d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
					setImage("nginx:2")(d)
				})
			},
			want: func(State) []string {
				return []string{
					"update web-v1 replicas=0 revision=1",
					"  then event Normal ScalingReplicaSet: Scaled down replica set web-v1 from 3 to 0",
					`status revision=1 replicas=3 updated=0 available=3 Progressing=True/NewReplicaSetAvailable "ReplicaSet \"web-v1\" has successfully progressed."`,
				}
			},
		},
		{
			name: "Recreate: no old pods left: the new ReplicaSet at full size",
			state: func() State {
				st := rolledOut(3, func(d *appsv1.Deployment) {
					d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
					setImage("nginx:2")(d)
				})
				st.ReplicaSets[0] = withReplicas(st.ReplicaSets[0], 0)
				st.ReplicaSets[0].Status = appsv1.ReplicaSetStatus{}
				return st
			},
			want: func(st State) []string {
				n := v2(st.Deployment)
				return []string{
					"create " + n + " replicas=3 revision=2",
					"  then event Normal ScalingReplicaSet: Scaled up replica set " + n + " from 0 to 3",
					`status revision=2 replicas=0 updated=0 available=0 Progressing=True/NewReplicaSetCreated "Created new replica set \"` + n + `\""`,
				}
			},
		},
		{
			name: "rollback: the old ReplicaSet with the template becomes new, its revision raised",
			state: func() State {
				st := rolledOut(4, nil)
				st.ReplicaSets[0].Annotations[RevisionAnnotation] = "2"
				st.Deployment.Annotations[RevisionAnnotation] = "2"
				// web-v0 has the template the deployment is rolled back to.
				back := rset("web-v0", 0, 0, 2*time.Hour)
				back.Spec.Template = *st.Deployment.Spec.Template.DeepCopy()
				back.Spec.Template.Spec.Containers[0].Image = "nginx:0"
				back.Labels, back.OwnerReferences = st.ReplicaSets[0].Labels, st.ReplicaSets[0].OwnerReferences
				back.Annotations[RevisionAnnotation] = "1"
				st.ReplicaSets = append(st.ReplicaSets, back)
				st.Deployment.Generation++
				setImage("nginx:0")(st.Deployment)
				return st
			},
			want: func(State) []string {
				return []string{
					"update web-v0 replicas=0 revision=3 history=1",
					"update web-v0 replicas=3 revision=3 history=1",
					"  then event Normal ScalingReplicaSet: Scaled up replica set web-v0 from 0 to 3",
					`status revision=2 replicas=4 updated=0 available=4 Progressing=True/NewReplicaSetAvailable "ReplicaSet \"web-v1\" has successfully progressed."`,
				}
			},
		},
		{
			name:  "no progress past the deadline: ProgressDeadlineExceeded",
			state: func() State { return stuck(t0.Add(-11 * time.Minute)) },
			want: func(st State) []string {
				return []string{`status revision=2 replicas=4 updated=1 available=3 Progressing=False/ProgressDeadlineExceeded "ReplicaSet \"` + v2(st.Deployment) + `\" has timed out progressing."`}
			},
		},
		{
			name:  "no progress, deadline ahead: look again when it passes",
			state: func() State { return stuck(t0.Add(-4 * time.Minute)) },
			want:  func(State) []string { return []string{"requeue after 6m1s"} },
		},
		{
			name: "scaled with one active ReplicaSet: it takes the new size",
			state: func() State {
				return rolledOut(10, func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](15) })
			},
			want: func(State) []string {
				return []string{
					"update web-v1 replicas=15 revision=1",
					"  then event Normal ScalingReplicaSet: Scaled up replica set web-v1 from 10 to 15",
					`status revision=1 replicas=10 updated=10 available=10 Progressing=True/NewReplicaSetAvailable "ReplicaSet \"web-v1\" has successfully progressed."`,
				}
			},
		},
		{
			name: "scaled during a rollout: proportionally, the leftover to the largest",
			state: func() State {
				st := midRollout(8, 4)
				st.Deployment.Spec.Replicas = ptr.To[int32](20)
				return st
			},
			want: func(st State) []string {
				n := v2(st.Deployment)
				return []string{
					"update web-v1 replicas=16 revision=1",
					"  then event Normal ScalingReplicaSet: Scaled up replica set web-v1 from 8 to 16",
					"update " + n + " replicas=7 revision=2",
					"  then event Normal ScalingReplicaSet: Scaled up replica set " + n + " from 4 to 7",
					`status revision=2 replicas=12 updated=4 available=12 Progressing=True/NewReplicaSetAvailable "ReplicaSet \"web-v1\" has successfully progressed."`,
				}
			},
		},
		{
			name: "paused: the template change waits; Progressing says paused",
			state: func() State {
				return rolledOut(3, func(d *appsv1.Deployment) {
					d.Spec.Paused = true
					setImage("nginx:2")(d)
				})
			},
			want: func(State) []string {
				return []string{`status revision=1 replicas=3 updated=0 available=3 Progressing=Unknown/DeploymentPaused "Deployment is paused"`}
			},
		},
		{
			name: "selecting all pods: a warning, nothing else",
			state: func() State {
				return rolledOut(3, func(d *appsv1.Deployment) { d.Spec.Selector = &metav1.LabelSelector{} })
			},
			want: func(State) []string {
				return []string{
					"event Warning SelectingAll: This deployment is selecting all pods. A non-empty selector is required.",
					`status revision=1 replicas=3 updated=3 available=3 Progressing=True/NewReplicaSetAvailable "ReplicaSet \"web-v1\" has successfully progressed."`,
				}
			},
		},
		{
			name: "a matching orphan is adopted, a ReplicaSet that stopped matching released",
			state: func() State {
				st := rolledOut(3, nil)
				orphan := rset("web-orphan", 0, 0, 3*time.Hour)
				orphan.Labels = map[string]string{"app": "web"}
				stray := rset("web-stray", 0, 0, 3*time.Hour)
				stray.Labels = map[string]string{"app": "other"}
				stray.OwnerReferences = st.ReplicaSets[0].OwnerReferences
				st.ReplicaSets = append(st.ReplicaSets, orphan, stray)
				return st
			},
			want: func(State) []string { return []string{"adopt web-orphan", "release web-stray"} },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := tt.state()
			got, want := describe(plan(st)), tt.want(st)
			if !slices.Equal(got, want) {
				t.Errorf("plan:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
		})
	}
}

// stuck is a rollout of 4 replicas (maxSurge 0, maxUnavailable 1) to
// nginx:2 whose new pod never becomes available, last progressing at
// lastProgress.
func stuck(lastProgress time.Time) State {
	st := rolledOut(4, func(d *appsv1.Deployment) {
		d.Spec.Strategy.RollingUpdate = deploy(4, "0", "1").Spec.Strategy.RollingUpdate
		setImage("nginx:2")(d)
	})
	d := st.Deployment
	st.ReplicaSets[0] = withReplicas(st.ReplicaSets[0], 3)
	newRS := ownedRS(d, newRSName(d), 1, time.Minute, "2")
	newRS.Status.AvailableReplicas, newRS.Status.ReadyReplicas = 0, 0
	st.ReplicaSets = append(st.ReplicaSets, newRS)
	d.Annotations[RevisionAnnotation] = "2"
	d.Status = calculateStatus(st.ReplicaSets, newRS, d, lastProgress)
	setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonReplicaSetUpdated,
		fmt.Sprintf("ReplicaSet %q is progressing.", newRS.Name), lastProgress))
	for i := range d.Status.Conditions {
		d.Status.Conditions[i].LastUpdateTime = metav1.NewTime(lastProgress)
	}
	return st
}

// midRollout is a rollout of 10 replicas (maxSurge 3, maxUnavailable 2)
// from nginx:1 to nginx:2 with old and new pods, all available.
func midRollout(old, new int32) State {
	st := rolledOut(10, setImage("nginx:2"))
	st.ReplicaSets[0] = withReplicas(st.ReplicaSets[0], old)
	st.ReplicaSets = append(st.ReplicaSets, ownedRS(st.Deployment, newRSName(st.Deployment), new, 0, "2"))
	st.Deployment.Annotations[RevisionAnnotation] = "2"
	return st
}

// withReplicas is rs scaled to n, its pods (all available) following.
func withReplicas(rs *appsv1.ReplicaSet, n int32) *appsv1.ReplicaSet {
	rs = rs.DeepCopy()
	rs.Spec.Replicas = ptr.To(n)
	rs.Status.Replicas, rs.Status.ReadyReplicas, rs.Status.AvailableReplicas, rs.Status.FullyLabeledReplicas = n, n, n, n
	return rs
}

// A failed create of the new ReplicaSet: a collision bumps
// collisionCount, our own ReplicaSet in the cache retries, other errors
// are reported.
func TestPlanCreateFailure(t *testing.T) {
	st := rolledOut(3, setImage("nginx:2"))
	p := plan(st)
	create := p.Steps[0]
	if create.Kind != CreateReplicaSet {
		t.Fatalf("first step %v", describe(p))
	}
	gr := appsv1.Resource("replicasets")
	exists := apierrors.NewAlreadyExists(gr, create.ReplicaSet.Name)

	status, events, retry := planCreateFailure(create.Before, create.ReplicaSet, exists, nil, t0)
	if status != nil || events != nil || retry {
		t.Errorf("not in the cache yet: %v %v %v", status, events, retry)
	}
	ours := create.ReplicaSet.DeepCopy()
	status, _, retry = planCreateFailure(create.Before, create.ReplicaSet, exists, ours, t0)
	if status != nil || !retry {
		t.Errorf("ours in the cache: status %v retry %v", status, retry)
	}
	theirs := ours.DeepCopy()
	theirs.OwnerReferences = nil
	status, _, _ = planCreateFailure(create.Before, create.ReplicaSet, exists, theirs, t0)
	if status == nil || status.Status.CollisionCount == nil || *status.Status.CollisionCount != 1 {
		t.Errorf("collision: %v", status)
	}
	status, events, _ = planCreateFailure(create.Before, create.ReplicaSet, fmt.Errorf("quota"), nil, t0)
	wantMsg := fmt.Sprintf("Failed to create new replica set %q: quota", create.ReplicaSet.Name)
	if c := getCondition(status.Status, appsv1.DeploymentProgressing); c == nil || c.Reason != ReasonFailedRSCreate || c.Message != wantMsg ||
		len(events) != 1 || events[0] != (Event{corev1.EventTypeWarning, ReasonFailedRSCreate, wantMsg}) {
		t.Errorf("create error: %+v %v", status.Status.Conditions, events)
	}
}
