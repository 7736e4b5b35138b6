package interpodaffinity

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"plainkube.dev/plainkube/internal/scheduler/framework"
	"plainkube.dev/plainkube/internal/scheduler/internal/st"
)

const zone = v1.LabelTopologyZone

func nodes() []*v1.Node {
	return []*v1.Node{
		st.Node("a1").Zone("a").Obj(),
		st.Node("a2").Zone("a").Obj(),
		st.Node("b1").Zone("b").Obj(),
		st.Node("nozone").Obj(),
	}
}

func TestFilter(t *testing.T) {
	const (
		affinity     = "UnschedulableAndUnresolvable: " + ErrReasonAffinityRulesNotMatch
		anti         = "Unschedulable: " + ErrReasonAntiAffinityRulesNotMatch
		existingAnti = "Unschedulable: " + ErrReasonExistingAntiAffinityRulesNotMatch
	)
	tests := []struct {
		name     string
		existing []*v1.Pod
		pod      *v1.Pod
		want     map[string]string
	}{
		{
			name:     "affinity to a pod in zone a",
			existing: []*v1.Pod{st.Pod("db").Label("app", "db").Node("a2").Obj()},
			pod:      st.Pod("p").PodAffinity(zone, "app", "db").Obj(),
			want:     map[string]string{"b1": affinity, "nozone": affinity},
		},
		{
			name:     "affinity by hostname",
			existing: []*v1.Pod{st.Pod("db").Label("app", "db").Node("a2").Obj()},
			pod:      st.Pod("p").PodAffinity(v1.LabelHostname, "app", "db").Obj(),
			want:     map[string]string{"a1": affinity, "b1": affinity, "nozone": affinity},
		},
		{
			name: "affinity to a pod in another namespace does not count",
			existing: []*v1.Pod{
				st.Pod("db").Namespace("other").Label("app", "db").Node("a2").Obj(),
				st.Pod("x").Label("app", "web").Node("a2").Obj(),
			},
			pod:  st.Pod("p").Label("app", "web").PodAffinity(zone, "app", "db").Obj(),
			want: map[string]string{"a1": affinity, "a2": affinity, "b1": affinity, "nozone": affinity},
		},
		{
			name: "first pod of a self-affine group goes anywhere with the key",
			pod:  st.Pod("p").Label("app", "web").PodAffinity(zone, "app", "web").Obj(),
			want: map[string]string{"nozone": affinity},
		},
		{
			name:     "anti-affinity: one per zone",
			existing: []*v1.Pod{st.Pod("w1").Label("app", "web").Node("a1").Obj()},
			pod:      st.Pod("p").Label("app", "web").PodAntiAffinity(zone, "app", "web").Obj(),
			want:     map[string]string{"a1": anti, "a2": anti},
		},
		{
			name:     "existing pod's anti-affinity repels the new pod",
			existing: []*v1.Pod{st.Pod("w1").Label("app", "web").PodAntiAffinity(zone, "app", "batch").Node("b1").Obj()},
			pod:      st.Pod("p").Label("app", "batch").Obj(),
			want:     map[string]string{"b1": existingAnti},
		},
		{
			name:     "existing anti-affinity for another label",
			existing: []*v1.Pod{st.Pod("w1").Label("app", "web").PodAntiAffinity(zone, "app", "batch").Node("b1").Obj()},
			pod:      st.Pod("p").Label("app", "other").Obj(),
			want:     map[string]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := st.Reasons(st.Filter(t, st.Framework(t, Name, New, ""), tt.pod, framework.NewSnapshot(tt.existing, nodes())))
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for n, w := range tt.want {
				if got[n] != w {
					t.Errorf("%s: got %q, want %q", n, got[n], w)
				}
			}
		})
	}
}

func TestNamespaceSelector(t *testing.T) {
	existing := []*v1.Pod{st.Pod("db").Namespace("team-a").Label("app", "db").Node("b1").Obj()}
	pod := st.Pod("p").PodAffinity(zone, "app", "db").Obj()
	pod.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	snap := framework.NewSnapshot(existing, nodes())
	snap.NamespaceLabels = map[string]labels.Set{"team-a": {"team": "a"}, "default": {}}
	got := st.Reasons(st.Filter(t, st.Framework(t, Name, New, ""), pod, snap))
	if len(got) != 3 || got["b1"] != "" {
		t.Errorf("got %v, want only b1 to pass", got)
	}
}

func TestScore(t *testing.T) {
	existing := []*v1.Pod{
		st.Pod("db").Label("app", "db").Node("a1").Obj(),
		st.Pod("cache").Label("app", "cache").Node("b1").Obj(),
	}
	tests := []struct {
		name     string
		pod      *v1.Pod
		existing []*v1.Pod
		want     map[string]int64
	}{
		{"prefer the db's zone", st.Pod("p").PreferPodAffinity(10, zone, "app", "db").Obj(), existing, map[string]int64{"a1": 100, "a2": 100, "b1": 0, "nozone": 0}},
		{"avoid the cache's zone", st.Pod("p").PreferPodAntiAffinity(10, zone, "app", "cache").Obj(), existing, map[string]int64{"a1": 100, "a2": 100, "b1": 0, "nozone": 100}},
		{
			"an existing pod's required affinity attracts the new pod",
			st.Pod("p").Label("app", "web").Obj(),
			[]*v1.Pod{st.Pod("e").PodAffinity(zone, "app", "web").Node("b1").Obj()},
			map[string]int64{"a1": 0, "a2": 0, "b1": 100, "nozone": 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := st.Score(t, st.Framework(t, Name, New, ""), tt.pod, framework.NewSnapshot(tt.existing, nodes()))
			for n, w := range tt.want {
				if got[n] != w {
					t.Errorf("%s: got %d, want %d (all %v)", n, got[n], w, got)
				}
			}
		})
	}
}
