package resourcequota

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/api/quota"
)

func list(pairs ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		l[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return l
}

func rq(name string, hard, used corev1.ResourceList, scopes ...corev1.ResourceQuotaScope) corev1.ResourceQuota {
	return corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec:   corev1.ResourceQuotaSpec{Hard: hard, Scopes: scopes},
		Status: corev1.ResourceQuotaStatus{Hard: hard, Used: used}}
}

func pod(cpuLimit string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", ResourceVersion: "5"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}}
	if cpuLimit != "" {
		p.Spec.Containers[0].Resources.Limits = list("cpu", cpuLimit)
		p.Spec.Containers[0].Resources.Requests = list("cpu", cpuLimit)
	}
	return p
}

func TestCheck(t *testing.T) {
	pods := quota.For(schema.GroupResource{Resource: "pods"})
	services := quota.For(schema.GroupResource{Resource: "services"})
	terminating := pod("1")
	terminating.Spec.ActiveDeadlineSeconds = ptr.To[int64](30)
	for _, tt := range []struct {
		name    string
		quotas  []corev1.ResourceQuota
		req     request
		e       quota.Evaluator
		want    map[int]corev1.ResourceList
		refused string
	}{
		{name: "room left: charged",
			quotas: []corev1.ResourceQuota{rq("q", list("pods", "2"), list("pods", "1"))},
			req:    request{op: quota.Create, obj: pod(""), now: time.Now()}, e: pods,
			want: map[int]corev1.ResourceList{0: list("pods", "2")}},
		{name: "the last unit taken",
			quotas: []corev1.ResourceQuota{rq("q", list("pods", "2"), list("pods", "2"))},
			req:    request{op: quota.Create, obj: pod(""), now: time.Now()}, e: pods,
			refused: "exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2"},
		{name: "only the exceeded resources are named",
			quotas: []corev1.ResourceQuota{rq("compute", list("pods", "5", "limits.cpu", "2", "requests.cpu", "2"), list("pods", "0", "limits.cpu", "1500m", "requests.cpu", "0"))},
			req:    request{op: quota.Create, obj: pod("1"), now: time.Now()}, e: pods,
			refused: "exceeded quota: compute, requested: limits.cpu=1, used: limits.cpu=1500m, limited: limits.cpu=2"},
		{name: "a container without the limit a quota needs",
			quotas: []corev1.ResourceQuota{rq("compute", list("limits.cpu", "2"), list("limits.cpu", "0"))},
			req:    request{op: quota.Create, obj: pod(""), now: time.Now()}, e: pods,
			refused: "failed quota: compute: must specify limits.cpu for: app"},
		{name: "usage not counted yet",
			quotas: []corev1.ResourceQuota{rq("q", list("pods", "2"), nil)},
			req:    request{op: quota.Create, obj: pod(""), now: time.Now()}, e: pods,
			refused: "status unknown for quota: q, resources: pods"},
		{name: "out of scope: not charged",
			quotas: []corev1.ResourceQuota{rq("q", list("pods", "0"), list("pods", "0"), corev1.ResourceQuotaScopeNotTerminating)},
			req:    request{op: quota.Create, obj: terminating, now: time.Now()}, e: pods},
		{name: "two quotas: both charged",
			quotas: []corev1.ResourceQuota{rq("a", list("pods", "3"), list("pods", "1")), rq("b", list("requests.cpu", "4"), list("requests.cpu", "1"))},
			req:    request{op: quota.Create, obj: pod("1"), now: time.Now()}, e: pods,
			want: map[int]corev1.ResourceList{0: list("pods", "2"), 1: list("requests.cpu", "2")}},
		{name: "an update is charged what it adds",
			quotas: []corev1.ResourceQuota{rq("q", list("services", "1", "services.nodeports", "2"), list("services", "1", "services.nodeports", "0"))},
			req: request{op: quota.Update, now: time.Now(),
				obj: &corev1.Service{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "3"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}}}},
				old: &corev1.Service{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "3"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: []corev1.ServicePort{{Port: 80}}}}},
			e:    services,
			want: map[int]corev1.ResourceList{0: list("services", "1", "services.nodeports", "1")}},
	} {
		got, err := check(tt.quotas, tt.req, tt.e)
		var r refusal
		switch {
		case tt.refused != "":
			if !errors.As(err, &r) || err.Error() != tt.refused {
				t.Errorf("%s: %v, want refusal %q", tt.name, err, tt.refused)
			}
			continue
		case err != nil:
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if len(got) != len(tt.want) {
			t.Errorf("%s: charged %v, want %v", tt.name, got, tt.want)
			continue
		}
		for i, w := range tt.want {
			if !quota.Equal(got[i], w) {
				t.Errorf("%s: quota %d used %s, want %s", tt.name, i, quota.String(got[i]), quota.String(w))
			}
		}
	}
}
