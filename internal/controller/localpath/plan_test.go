package localpath

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plainkube.dev/plainkube/internal/api/localpath"
)

func TestVolumeFor(t *testing.T) {
	block := corev1.PersistentVolumeBlock
	retain := corev1.PersistentVolumeReclaimRetain
	claim := func(opts ...func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data", UID: "u1"},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}},
				VolumeMode:  &block,
			},
		}
		for _, o := range opts {
			o(c)
		}
		return c
	}
	real := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{corev1.LabelHostname: "host-1"},
		Annotations: map[string]string{localpath.NodeDirAnnotation: "/data/storage"}}}
	sim := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "sim-1"}}
	class := localpath.StorageClass()
	retained := localpath.StorageClass()
	retained.ReclaimPolicy = &retain
	other := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Provisioner: "example.com/x"}

	pv, why := volumeFor(claim(), class, real)
	if why != "" {
		t.Fatal(why)
	}
	if pv.Name != "pvc-u1" || pv.Spec.HostPath.Path != "/data/storage/pvc-u1_ns_data" || *pv.Spec.HostPath.Type != corev1.HostPathDirectoryOrCreate {
		t.Errorf("volume %s at %+v", pv.Name, pv.Spec.HostPath)
	}
	if pv.Labels[localpath.NodeLabel] != "n1" || len(pv.Finalizers) != 1 || pv.Finalizers[0] != localpath.CleanupFinalizer {
		t.Errorf("labels %v finalizers %v", pv.Labels, pv.Finalizers)
	}
	term := pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0]
	if term.Key != corev1.LabelHostname || term.Values[0] != "host-1" {
		t.Errorf("node affinity %+v", term)
	}
	if q := pv.Spec.Capacity[corev1.ResourceStorage]; q.String() != "2Gi" || *pv.Spec.VolumeMode != block || pv.Spec.AccessModes[0] != corev1.ReadWriteOnce {
		t.Errorf("size %s mode %v access %v", q.String(), *pv.Spec.VolumeMode, pv.Spec.AccessModes)
	}
	if ref := pv.Spec.ClaimRef; ref.UID != "u1" || ref.Name != "data" || ref.Namespace != "ns" {
		t.Errorf("claimRef %+v", ref)
	}
	if pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || pv.Spec.StorageClassName != "local-path" ||
		pv.Annotations[localpath.ProvisionedByAnnotation] != localpath.Provisioner {
		t.Errorf("reclaim %s class %s annotations %v", pv.Spec.PersistentVolumeReclaimPolicy, pv.Spec.StorageClassName, pv.Annotations)
	}

	// A simulated node: no folder, nothing to clean up.
	pv, _ = volumeFor(claim(), retained, sim)
	if pv.Labels != nil || pv.Finalizers != nil || pv.Spec.HostPath.Path != localpath.SimulatedDir+"/pvc-u1_ns_data" ||
		pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values[0] != "sim-1" || pv.Spec.PersistentVolumeReclaimPolicy != retain {
		t.Errorf("simulated node's volume: %+v", pv)
	}

	for _, tt := range []struct {
		name  string
		claim *corev1.PersistentVolumeClaim
		class *storagev1.StorageClass
		node  *corev1.Node
		want  string
	}{
		{"another provisioner", claim(), other, real, `storage class "x" is not provisioned by plainkube.dev/local-path`},
		{"selector", claim(func(c *corev1.PersistentVolumeClaim) { c.Spec.Selector = &metav1.LabelSelector{} }), class, real, "claim Selector is not supported"},
		{"data source", claim(func(c *corev1.PersistentVolumeClaim) {
			c.Spec.DataSource = &corev1.TypedLocalObjectReference{Name: "s"}
		}), class, real, "plainkube.dev/local-path does not support data sources"},
		{"relative folder", claim(), class, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{localpath.NodeDirAnnotation: "rel"}}}, `node "n" has a local-path folder that is not absolute: "rel"`},
	} {
		if pv, why := volumeFor(tt.claim, tt.class, tt.node); pv != nil || why != tt.want {
			t.Errorf("%s: %v %q, want %q", tt.name, pv, why, tt.want)
		}
	}
}

func TestWantsAndOrphaned(t *testing.T) {
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{annStorageProvisioner: localpath.Provisioner}}}
	if wants(c) {
		t.Error("a claim without a selected node is provisioned")
	}
	c.Annotations[annSelectedNode] = "n1"
	if !wants(c) {
		t.Error("a claim with a selected node is not provisioned")
	}
	c.Spec.VolumeName = "v"
	if wants(c) {
		t.Error("a bound claim is provisioned")
	}

	now := metav1.Now()
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now, Finalizers: []string{localpath.CleanupFinalizer},
		Labels: map[string]string{localpath.NodeLabel: "n1"}, Annotations: map[string]string{localpath.ProvisionedByAnnotation: localpath.Provisioner}}}
	if !orphaned(pv, false) || orphaned(pv, true) {
		t.Error("orphaned: a volume of a deleted node is to be released, of a live one not")
	}
	pv.DeletionTimestamp = nil
	if orphaned(pv, false) {
		t.Error("a volume not being deleted is released")
	}
}
