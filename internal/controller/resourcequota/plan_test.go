package resourcequota

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/api/quota"
)

func list(pairs ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		l[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return l
}

func pod(name string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Status: corev1.PodStatus{Phase: phase},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: list("cpu", "100m")}}}}}
}

func TestPlan(t *testing.T) {
	podsGR, cmGR := schema.GroupResource{Resource: "pods"}, schema.GroupResource{Resource: "configmaps"}
	q := func(hard, statusHard, used corev1.ResourceList) *corev1.ResourceQuota {
		return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "ns"},
			Spec: corev1.ResourceQuotaSpec{Hard: hard}, Status: corev1.ResourceQuotaStatus{Hard: statusHard, Used: used}}
	}
	twoPods := map[schema.GroupResource][]runtime.Object{podsGR: {pod("a", corev1.PodRunning), pod("b", corev1.PodPending), pod("done", corev1.PodSucceeded)}}
	for _, tt := range []struct {
		name    string
		st      State
		write   bool
		hard    corev1.ResourceList
		used    corev1.ResourceList
		wantErr bool
	}{
		{name: "new quota: hard and used filled in",
			st:    State{Quota: q(list("pods", "5", "requests.cpu", "1"), nil, nil), Objects: twoPods},
			write: true, hard: list("pods", "5", "requests.cpu", "1"), used: list("pods", "2", "requests.cpu", "200m")},
		{name: "already right",
			st: State{Quota: q(list("pods", "5"), list("pods", "5"), list("pods", "2")), Objects: twoPods}},
		{name: "pods deleted: usage given back",
			st:    State{Quota: q(list("pods", "5"), list("pods", "5"), list("pods", "4")), Objects: map[schema.GroupResource][]runtime.Object{podsGR: {pod("a", corev1.PodRunning)}}},
			write: true, hard: list("pods", "5"), used: list("pods", "1")},
		{name: "spec changed: hard follows, a dropped resource leaves used",
			st:    State{Quota: q(list("pods", "3"), list("pods", "5", "count/configmaps", "2"), list("pods", "2", "count/configmaps", "1")), Objects: twoPods},
			write: true, hard: list("pods", "3"), used: list("pods", "2")},
		{name: "object counts",
			st: State{Quota: q(list("count/configmaps", "10"), nil, nil),
				Objects: map[schema.GroupResource][]runtime.Object{cmGR: {&metav1.PartialObjectMetadata{}, &metav1.PartialObjectMetadata{}}}},
			write: true, hard: list("count/configmaps", "10"), used: list("count/configmaps", "2")},
		{name: "a resource nothing counts keeps its value",
			st:    State{Quota: q(list("example.com/things", "3"), list("example.com/things", "3"), list("example.com/things", "1")), Objects: nil},
			write: false},
		{name: "objects not observed",
			st:      State{Quota: q(list("pods", "1"), nil, nil), Objects: nil},
			wantErr: true},
	} {
		tt.st.Now = time.Now()
		p := plan(tt.st)
		if (p.Err != nil) != tt.wantErr {
			t.Errorf("%s: err %v", tt.name, p.Err)
			continue
		}
		if p.Write != tt.write {
			t.Errorf("%s: write %v, want %v (status %v)", tt.name, p.Write, tt.write, p.Status)
			continue
		}
		if !tt.write {
			continue
		}
		if !quota.Equal(p.Status.Hard, tt.hard) || !quota.Equal(p.Status.Used, tt.used) {
			t.Errorf("%s: hard %s used %s; want %s, %s", tt.name, quota.String(p.Status.Hard), quota.String(p.Status.Used),
				quota.String(tt.hard), quota.String(tt.used))
		}
	}
}

func resourceOf(s string) resource.Quantity { return resource.MustParse(s) }
