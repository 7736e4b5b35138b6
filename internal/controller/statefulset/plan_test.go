package statefulset

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

var now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// mk builds pods from specs "<ordinal>:<rev>:<state>", state one of
// ready, pending, failed, deleting.
func mk(specs ...string) []*corev1.Pod {
	var out []*corev1.Pod
	for _, s := range specs {
		f := strings.Split(s, ":")
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-" + f[0],
			Labels: map[string]string{appsv1.ControllerRevisionHashLabelKey: f[1]}}}
		switch f[2] {
		case "ready", "deleting":
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
			if f[2] == "deleting" {
				p.DeletionTimestamp = ptr.To(metav1.NewTime(now))
			}
		case "pending":
			p.Status.Phase = corev1.PodPending
		case "failed":
			p.Status.Phase = corev1.PodFailed
		}
		out = append(out, p)
	}
	return out
}

func show(acts []Action) string {
	var s []string
	for _, a := range acts {
		if a.Type == Create {
			s = append(s, fmt.Sprintf("+%d@%s", a.Ordinal, a.Revision))
		} else {
			s = append(s, fmt.Sprintf("-%d", a.Ordinal))
		}
	}
	return strings.Join(s, " ")
}

func TestPlan(t *testing.T) {
	for _, tc := range []struct {
		name      string
		replicas  int
		parallel  bool
		onDelete  bool
		partition int
		update    string
		pods      []*corev1.Pod
		want      string
	}{
		{name: "first pod", replicas: 3, want: "+0@u"},
		{name: "wait for web-0", replicas: 3, pods: mk("0:u:pending"), want: ""},
		{name: "then web-1", replicas: 3, pods: mk("0:u:ready"), want: "+1@u"},
		{name: "gap refilled first", replicas: 3, pods: mk("0:u:ready", "2:u:ready"), want: "+1@u"},
		{name: "parallel creates all", replicas: 3, parallel: true, want: "+0@u +1@u +2@u"},
		{name: "failed pod replaced", replicas: 2, pods: mk("0:u:failed", "1:u:ready"), want: "-0"},
		{name: "scale down highest first", replicas: 1, pods: mk("0:u:ready", "1:u:ready", "2:u:ready"), want: "-2"},
		{name: "scale down waits for termination", replicas: 1, pods: mk("0:u:ready", "1:u:ready", "2:u:deleting"), want: ""},
		{name: "scale down waits for health", replicas: 1, pods: mk("0:u:pending", "1:u:ready"), want: ""},
		{name: "scale down to 0 halts while the pods are unhealthy", replicas: 0, pods: mk("0:u:pending", "1:u:pending", "2:u:pending"), want: ""},
		{name: "scale down deletes the first unhealthy condemned pod", replicas: 0, pods: mk("0:u:pending"), want: "-0"},
		{name: "scale down past a healthy pod to the first unhealthy", replicas: 0, pods: mk("0:u:pending", "1:u:ready"), want: "-1"},
		{name: "parallel scale down", replicas: 1, parallel: true, pods: mk("0:u:ready", "1:u:ready", "2:u:ready"), want: "-2 -1"},
		{name: "rolling update highest first", replicas: 3, pods: mk("0:c:ready", "1:c:ready", "2:c:ready"), want: "-2"},
		{name: "rolling update next", replicas: 3, pods: mk("0:c:ready", "1:c:ready", "2:u:ready"), want: "-1"},
		{name: "rolling update waits", replicas: 3, pods: mk("0:c:ready", "1:c:ready", "2:u:pending"), want: ""},
		{name: "recreated on update revision", replicas: 3, pods: mk("0:c:ready", "1:c:ready"), want: "+2@u"},
		{name: "partition", replicas: 3, partition: 2, pods: mk("0:c:ready", "1:c:ready", "2:u:ready"), want: ""},
		{name: "below partition recreated on current", replicas: 3, partition: 2, pods: mk("1:c:ready", "2:u:ready"), want: "+0@c"},
		{name: "on delete: nothing deleted", replicas: 2, onDelete: true, pods: mk("0:c:ready", "1:c:ready"), want: ""},
		{name: "on delete: recreated on update", replicas: 2, onDelete: true, pods: mk("0:c:ready"), want: "+1@u"},
		{name: "foreign names ignored", replicas: 1, pods: append(mk("0:u:ready"), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-01"}}), want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := State{SetName: "web", Replicas: tc.replicas, Parallel: tc.parallel, RollingUpdate: !tc.onDelete,
				Partition: tc.partition, CurrentRevision: "c", UpdateRevision: "u", Pods: tc.pods, Now: now}
			if got := show(plan(in)); got != tc.want {
				t.Errorf("plan = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestOrdinal(t *testing.T) {
	for name, want := range map[string]int{"web-0": 0, "web-12": 12, "web-01": -1, "web-": -1, "webx-1": -1, "web-a": -1, "web-web-1": -1} {
		got, ok := Ordinal("web", name)
		if !ok {
			got = -1
		}
		if got != want {
			t.Errorf("Ordinal(%q) = %d, want %d", name, got, want)
		}
	}
}

func TestComputeStatus(t *testing.T) {
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 4}, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3)}}
	st := ComputeStatus(set, mk("0:c:ready", "1:u:pending", "2:u:ready"), "c", "u", now)
	if st.Replicas != 3 || st.ReadyReplicas != 2 || st.AvailableReplicas != 2 || st.CurrentReplicas != 1 || st.UpdatedReplicas != 2 ||
		st.CurrentRevision != "c" || st.ObservedGeneration != 4 {
		t.Errorf("mid-rollout status %+v", st)
	}
	st = ComputeStatus(set, mk("0:u:ready", "1:u:ready", "2:u:ready"), "c", "u", now)
	if st.CurrentRevision != "u" || st.CurrentReplicas != 3 || st.UpdatedReplicas != 3 {
		t.Errorf("finished status %+v", st)
	}
}

func TestNewPod(t *testing.T) {
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u1"},
		Spec: appsv1.StatefulSetSpec{ServiceName: "svc", VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "www"}}}}}
	tmpl := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "www"}}}}
	p := NewPod(set, tmpl, 2, "web-abc")
	if p.Name != "web-2" || p.Spec.Hostname != "web-2" || p.Spec.Subdomain != "svc" || p.Labels[PodNameLabel] != "web-2" ||
		p.Labels[PodIndexLabel] != "2" || p.Labels[appsv1.ControllerRevisionHashLabelKey] != "web-abc" || p.Labels["app"] != "web" {
		t.Errorf("pod %+v", p.ObjectMeta)
	}
	if len(p.Spec.Volumes) != 1 || p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "www-web-2" {
		t.Errorf("volumes %+v", p.Spec.Volumes)
	}
	if !metav1.IsControlledBy(p, set) {
		t.Errorf("owners %v", p.OwnerReferences)
	}
	if tmpl.Labels[PodNameLabel] != "" {
		t.Error("template modified")
	}
}
