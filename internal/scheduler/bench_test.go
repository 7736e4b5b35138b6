package scheduler

import (
	"context"
	"fmt"
	"math/rand"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"plainkube.dev/plainkube/internal/scheduler/framework"
	"plainkube.dev/plainkube/internal/scheduler/internal/st"
)

// benchCluster is 1000 nodes in 10 zones with 10 pods each (a tenth of
// them with anti-affinity), the shape of upstream's scheduler_perf
// SchedulingBasic runs.
func benchCluster(b *testing.B) *framework.Snapshot {
	b.Helper()
	const numNodes, podsPerNode = 1000, 10
	nodes := make([]*v1.Node, 0, numNodes)
	pods := make([]*v1.Pod, 0, numNodes*podsPerNode)
	for i := range numNodes {
		n := st.Node(fmt.Sprintf("node-%04d", i)).Capacity("32", "128Gi").Res(v1.ResourcePods, "110").
			Zone(fmt.Sprintf("zone-%d", i%10)).Image("registry.example/app:latest", 200).Obj()
		nodes = append(nodes, n)
		for j := range podsPerNode {
			p := st.Pod(fmt.Sprintf("p-%d-%d", i, j)).Label("app", fmt.Sprintf("app-%d", j)).Req("500m", "1Gi").Node(n.Name)
			if j == 0 {
				p.PodAntiAffinity(v1.LabelHostname, "app", "app-0")
			}
			pods = append(pods, p.Obj())
		}
	}
	return framework.NewSnapshot(pods, nodes)
}

// benchWorkloads says that ReplicaSet "rs" selects app=app-1 (a tenth of
// benchCluster's pods), so its pods get the default spreading constraints.
type benchWorkloads struct{}

func (benchWorkloads) Services(string) []*v1.Service { return nil }

func (benchWorkloads) ControllerSelector(_ string, owner *metav1.OwnerReference) labels.Selector {
	if owner.Kind == "ReplicaSet" && owner.Name == "rs" {
		return labels.SelectorFromSet(labels.Set{"app": "app-1"})
	}
	return nil
}

// replicaSetPod is a new replica of ReplicaSet "rs", the density
// workload's shape: default spreading over 1000 pods like it.
func replicaSetPod() *v1.Pod {
	p := st.Pod("new").Label("app", "app-1").Req("1", "2Gi").Obj()
	yes := true
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs-uid", Controller: &yes}}
	return p
}

func BenchmarkScheduleOne(b *testing.B) {
	snap := benchCluster(b)
	snap.Workloads = benchWorkloads{}
	f := defaultFramework(b)
	cases := []struct {
		name string
		pod  *v1.Pod
	}{
		{"basic", st.Pod("new").Req("1", "2Gi").Obj()},
		{"spread", st.Pod("new").Label("app", "web").Req("1", "2Gi").Spread(1, v1.LabelTopologyZone, v1.DoNotSchedule, "app", "web").Spread(1, v1.LabelHostname, v1.ScheduleAnyway, "app", "web").Obj()},
		{"affinity", st.Pod("new").Label("app", "web").Req("1", "2Gi").PodAntiAffinity(v1.LabelHostname, "app", "web").PreferPodAffinity(10, v1.LabelTopologyZone, "app", "app-1").Obj()},
		{"replicaset", replicaSetPod()},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			a := NewAlgorithm(rand.New(rand.NewSource(1)))
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if d := a.Decide(ctx, f, snap, c.pod); d.Err != nil {
					b.Fatal(d.Err)
				}
			}
		})
	}
}
