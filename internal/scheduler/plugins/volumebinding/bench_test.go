package volumebinding

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/component-helpers/storage/volume"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/scheduler/framework"
)

// informerHandle lends the plugin an informer factory whose caches the
// benchmark fills directly; the rest of Handle is not used.
type informerHandle struct {
	framework.Handle
	f informers.SharedInformerFactory
}

func (h informerHandle) SharedInformerFactory() informers.SharedInformerFactory { return h.f }

func (informerHandle) ClientSet() kubernetes.Interface { return nil }

// BenchmarkPreFilterFilter is one cycle's VolumeBinding work for a pod on
// 1000 nodes: a pod without claims (skipped), one with two bound local
// volumes on the last node, and one with two WaitForFirstConsumer claims
// of a provisioning class.
func BenchmarkPreFilterFilter(b *testing.B) {
	f := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	pvcs := f.Core().V1().PersistentVolumeClaims().Informer().GetIndexer()
	pvs := f.Core().V1().PersistentVolumes().Informer().GetIndexer()
	classes := f.Storage().V1().StorageClasses().Informer().GetIndexer()
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	wait := storagev1.VolumeBindingWaitForFirstConsumer
	must(classes.Add(&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local-path"}, Provisioner: "plainkube.dev/local-path", VolumeBindingMode: &wait}))
	nodes := make([]*framework.NodeInfo, 1000)
	for i := range nodes {
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%04d", i), Labels: map[string]string{v1.LabelHostname: fmt.Sprintf("node-%04d", i)}}}
		nodes[i] = framework.NewNodeInfo()
		nodes[i].SetNode(n)
	}
	claim := func(name string, bound bool) {
		c := &v1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
			Spec: v1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("local-path"),
				Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}}},
		}
		if bound {
			c.Spec.VolumeName = "pv-" + name
			c.Annotations = map[string]string{volume.AnnBindCompleted: "yes"}
			must(pvs.Add(&v1.PersistentVolume{
				ObjectMeta: metav1.ObjectMeta{Name: c.Spec.VolumeName},
				Spec: v1.PersistentVolumeSpec{StorageClassName: "local-path",
					PersistentVolumeSource: v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: "/mnt/" + name}},
					NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
						MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{"node-0999"}}},
					}}}}},
			}))
		}
		must(pvcs.Add(c))
	}
	withClaims := func(names ...string) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "new", UID: "new"}}
		for _, n := range names {
			p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: n, VolumeSource: v1.VolumeSource{
				PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: n}}})
		}
		return p
	}
	claim("b1", true)
	claim("b2", true)
	claim("d1", false)
	claim("d2", false)
	pl, err := New(nil, informerHandle{f: f})
	must(err)
	vb := pl.(*VolumeBinding)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		pod  *v1.Pod
	}{{"no-claims", withClaims()}, {"bound", withClaims("b1", "b2")}, {"delayed", withClaims("d1", "d2")}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				state := framework.NewCycleState()
				_, s := vb.PreFilter(ctx, state, c.pod, nodes)
				if s.IsSkip() {
					continue
				}
				if !s.IsSuccess() {
					b.Fatal(s.AsError())
				}
				for _, ni := range nodes {
					vb.Filter(ctx, state, c.pod, ni)
				}
			}
		})
	}
}
