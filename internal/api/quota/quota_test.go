package quota

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

func list(pairs ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		l[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return l
}

func pod(name string, requests, limits corev1.ResourceList) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}}}}
}

func TestPodUsage(t *testing.T) {
	now := time.Unix(1000, 0)
	finished := pod("done", list("cpu", "1"), nil)
	finished.Status.Phase = corev1.PodSucceeded
	pastGrace := pod("gone", list("cpu", "1"), nil)
	pastGrace.DeletionTimestamp = &metav1.Time{Time: now.Add(-time.Minute)}
	pastGrace.DeletionGracePeriodSeconds = ptr.To[int64](30)
	for _, tt := range []struct {
		name string
		pod  *corev1.Pod
		want corev1.ResourceList
	}{
		{"requests and limits", pod("a", list("cpu", "500m", "memory", "1Gi"), list("cpu", "1", "memory", "1Gi")),
			list("count/pods", "1", "pods", "1", "cpu", "500m", "requests.cpu", "500m", "memory", "1Gi", "requests.memory", "1Gi",
				"limits.cpu", "1", "limits.memory", "1Gi")},
		{"best effort", pod("b", nil, nil), list("count/pods", "1", "pods", "1")},
		{"extended and hugepages", pod("c", list("example.com/gpu", "2", "hugepages-2Mi", "4Mi"), nil),
			list("count/pods", "1", "pods", "1", "requests.example.com/gpu", "2", "hugepages-2Mi", "4Mi", "requests.hugepages-2Mi", "4Mi")},
		{"terminal: only the object count", finished, list("count/pods", "1")},
		{"past its deletion grace period", pastGrace, list("count/pods", "1")},
	} {
		got, err := pods{}.Usage(tt.pod, now)
		if err != nil || !Equal(got, tt.want) {
			t.Errorf("%s: usage %s, %v; want %s", tt.name, String(got), err, String(tt.want))
		}
	}
}

func TestPodConstraints(t *testing.T) {
	p := &corev1.Pod{Spec: corev1.PodSpec{
		Containers: []corev1.Container{
			{Name: "a", Resources: corev1.ResourceRequirements{Limits: list("cpu", "1")}},
			{Name: "b"},
		},
		InitContainers: []corev1.Container{{Name: "init"}},
	}}
	err := pods{}.Constraints([]corev1.ResourceName{"limits.cpu", "limits.memory", "pods"}, p)
	want := "must specify limits.cpu for: b,init; limits.memory for: a,b,init"
	if err == nil || err.Error() != want {
		t.Fatalf("constraints: %v, want %q", err, want)
	}
	if err := (pods{}).Constraints([]corev1.ResourceName{"pods", "count/pods"}, p); err != nil {
		t.Errorf("pods alone need no resources: %v", err)
	}
}

func TestPodScopes(t *testing.T) {
	bestEffort := pod("be", nil, nil)
	burstable := pod("bu", list("cpu", "1"), nil)
	terminating := pod("t", nil, nil)
	terminating.Spec.ActiveDeadlineSeconds = ptr.To[int64](60)
	high := pod("h", list("cpu", "1"), nil)
	high.Spec.PriorityClassName = "high"
	cross := pod("x", nil, nil)
	cross.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
		{Namespaces: []string{"other"}, TopologyKey: "kubernetes.io/hostname"}}}}
	exists := func(s corev1.ResourceQuotaScope) corev1.ScopedResourceSelectorRequirement {
		return corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists}
	}
	in := corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"high"}}
	notIn := corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpNotIn, Values: []string{"high"}}
	for _, tt := range []struct {
		sel  corev1.ScopedResourceSelectorRequirement
		pod  *corev1.Pod
		want bool
	}{
		{exists(corev1.ResourceQuotaScopeBestEffort), bestEffort, true},
		{exists(corev1.ResourceQuotaScopeBestEffort), burstable, false},
		{exists(corev1.ResourceQuotaScopeNotBestEffort), burstable, true},
		{exists(corev1.ResourceQuotaScopeTerminating), terminating, true},
		{exists(corev1.ResourceQuotaScopeTerminating), bestEffort, false},
		{exists(corev1.ResourceQuotaScopeNotTerminating), bestEffort, true},
		{exists(corev1.ResourceQuotaScopePriorityClass), high, true},
		{exists(corev1.ResourceQuotaScopePriorityClass), burstable, false},
		{in, high, true},
		{in, burstable, false},
		{notIn, burstable, true},
		{notIn, high, false},
		{exists(corev1.ResourceQuotaScopeCrossNamespacePodAffinity), cross, true},
		{exists(corev1.ResourceQuotaScopeCrossNamespacePodAffinity), bestEffort, false},
	} {
		got, err := pods{}.MatchesScope(tt.sel, tt.pod)
		if err != nil || got != tt.want {
			t.Errorf("%s %s %v on %s: %v, %v; want %v", tt.sel.ScopeName, tt.sel.Operator, tt.sel.Values, tt.pod.Name, got, err, tt.want)
		}
	}
}

func TestServiceAndClaimUsage(t *testing.T) {
	lb := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}, {Port: 443}}}}
	got, _ := services{}.Usage(lb, time.Time{})
	if want := list("count/services", "1", "services", "1", "services.nodeports", "2", "services.loadbalancers", "1"); !Equal(got, want) {
		t.Errorf("load balancer: %s, want %s", String(got), String(want))
	}
	pvc := &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("gold"),
		Resources: corev1.VolumeResourceRequirements{Requests: list("storage", "1Gi")}}}
	got, _ = claims{}.Usage(pvc, time.Time{})
	want := list("count/persistentvolumeclaims", "1", "persistentvolumeclaims", "1", "requests.storage", "1Gi",
		"gold.storageclass.storage.k8s.io/persistentvolumeclaims", "1", "gold.storageclass.storage.k8s.io/requests.storage", "1Gi")
	if !Equal(got, want) {
		t.Errorf("claim: %s, want %s", String(got), String(want))
	}
	if m := (claims{}).MatchingResources([]corev1.ResourceName{"gold.storageclass.storage.k8s.io/requests.storage", "pods"}); len(m) != 1 {
		t.Errorf("claims match %v", m)
	}
}

func TestUsed(t *testing.T) {
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "ns"}, Spec: corev1.ResourceQuotaSpec{
		Hard:   list("pods", "10", "requests.cpu", "4"),
		Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating},
	}}
	counts := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "counts", Namespace: "ns"}, Spec: corev1.ResourceQuotaSpec{
		Hard: list("count/configmaps", "5", "configmaps", "5", "count/deployments.apps", "2", "example.com/unknown", "1"),
	}}
	terminating := pod("t", list("cpu", "1"), nil)
	terminating.Spec.ActiveDeadlineSeconds = ptr.To[int64](10)
	done := pod("d", list("cpu", "1"), nil)
	done.Status.Phase = corev1.PodFailed
	objects := map[schema.GroupResource][]runtime.Object{
		{Resource: "pods"}:                       {pod("a", list("cpu", "500m"), nil), pod("b", list("cpu", "250m"), nil), terminating, done},
		{Resource: "configmaps"}:                 {&corev1.ConfigMap{}, &corev1.ConfigMap{}},
		{Group: "apps", Resource: "deployments"}: {},
	}
	lister := func(gr schema.GroupResource) ([]runtime.Object, error) { return objects[gr], nil }
	// The terminating pod is out of scope; the failed one counts nowhere
	// but count/pods, which this quota does not limit.
	used, err := Used(q, lister, time.Now())
	if want := list("pods", "2", "requests.cpu", "750m"); err != nil || !Equal(used, want) {
		t.Errorf("used %s, %v; want %s", String(used), err, String(want))
	}
	// Nothing counts example.com/unknown: it has no value.
	used, err = Used(counts, lister, time.Now())
	if want := list("count/configmaps", "2", "configmaps", "2", "count/deployments.apps", "0"); err != nil || !Equal(used, want) {
		t.Errorf("used %s, %v; want %s", String(used), err, String(want))
	}
	// A scoped quota counts only what is in its scopes: no configmaps.
	counts.Spec.Scopes = q.Spec.Scopes
	used, _ = Used(counts, lister, time.Now())
	if want := list("count/configmaps", "0", "configmaps", "0", "count/deployments.apps", "0"); !Equal(used, want) {
		t.Errorf("scoped: used %s, want %s", String(used), String(want))
	}
}

func TestObjectCountNames(t *testing.T) {
	for _, tt := range []struct {
		gr   schema.GroupResource
		name corev1.ResourceName
	}{
		{schema.GroupResource{Resource: "configmaps"}, "count/configmaps"},
		{schema.GroupResource{Group: "apps", Resource: "deployments"}, "count/deployments.apps"},
		{schema.GroupResource{Group: "example.com", Resource: "widgets"}, "count/widgets.example.com"},
	} {
		if got := ObjectCountName(tt.gr); got != tt.name {
			t.Errorf("%v: %s, want %s", tt.gr, got, tt.name)
		}
		if gr, ok := ParseObjectCountName(tt.name); !ok || gr != tt.gr {
			t.Errorf("parse %s: %v, %v", tt.name, gr, ok)
		}
	}
}
