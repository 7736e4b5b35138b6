package volumerestrictions

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plainkube.dev/plainkube/internal/scheduler/framework"
	"plainkube.dev/plainkube/internal/scheduler/internal/st"
)

func gcePD(name string, ro bool) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: name, ReadOnly: ro}}}
}

func TestDiskConflict(t *testing.T) {
	const no = "Unschedulable: " + ErrReasonDiskConflict
	tests := []struct {
		name     string
		existing *v1.Pod
		pod      *v1.Pod
		want     string
	}{
		{"same disk", st.Pod("e").Volume(gcePD("d", false)).Node("n").Obj(), st.Pod("p").Volume(gcePD("d", false)).Obj(), no},
		{"same disk, both read-only", st.Pod("e").Volume(gcePD("d", true)).Node("n").Obj(), st.Pod("p").Volume(gcePD("d", true)).Obj(), ""},
		{"other disk", st.Pod("e").Volume(gcePD("d", false)).Node("n").Obj(), st.Pod("p").Volume(gcePD("x", false)).Obj(), ""},
		{"no volumes", st.Pod("e").Volume(gcePD("d", false)).Node("n").Obj(), st.Pod("p").Obj(), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := framework.NewSnapshot([]*v1.Pod{tt.existing}, []*v1.Node{st.Node("n").Obj()})
			got := st.Reasons(st.Filter(t, st.Framework(t, Name, New, ""), tt.pod, snap))["n"]
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestReadWriteOncePod(t *testing.T) {
	pvc := func(name string, mode v1.PersistentVolumeAccessMode) *v1.PersistentVolumeClaim {
		return &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: v1.PersistentVolumeClaimSpec{AccessModes: []v1.PersistentVolumeAccessMode{mode}}}
	}
	nodes := []*v1.Node{st.Node("n1").Obj(), st.Node("n2").Obj()}
	existing := []*v1.Pod{st.Pod("e").PVC("rwop").Node("n1").Obj(), st.Pod("f").PVC("rwo").Node("n1").Obj()}
	tests := []struct {
		name string
		pod  *v1.Pod
		want string
	}{
		{"claim in use by another pod", st.Pod("p").PVC("rwop").Obj(), "Unschedulable: " + ErrReasonReadWriteOncePodConflict},
		{"ReadWriteOnce claim is not restricted here", st.Pod("p").PVC("rwo").Obj(), ""},
		{"missing claim", st.Pod("p").PVC("nope").Obj(), `UnschedulableAndUnresolvable: persistentvolumeclaim "nope" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := framework.NewSnapshot(existing, nodes)
			claims := map[string]*v1.PersistentVolumeClaim{
				"default/rwop": pvc("rwop", v1.ReadWriteOncePod),
				"default/rwo":  pvc("rwo", v1.ReadWriteOnce),
			}
			snap.PVC = func(key string) (*v1.PersistentVolumeClaim, bool) { c, ok := claims[key]; return c, ok }
			got := st.Reasons(st.Filter(t, st.Framework(t, Name, New, ""), tt.pod, snap))
			for _, n := range []string{"n1", "n2"} {
				if got[n] != tt.want {
					t.Errorf("%s: got %q, want %q", n, got[n], tt.want)
				}
			}
		})
	}
}
