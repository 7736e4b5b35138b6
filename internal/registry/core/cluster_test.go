package core

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestNamespace(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}
	expect(t, create(t, "namespaces", ns), "")
	if ns.Status.Phase != corev1.NamespaceActive || len(ns.Spec.Finalizers) != 1 || ns.Spec.Finalizers[0] != "kubernetes" ||
		ns.Labels["kubernetes.io/metadata.name"] != "team-a" {
		t.Errorf("namespace: %+v", ns)
	}
	if f := lookup(t, "namespaces").Strategy.SelectableFields(ns); f["status.phase"] != "Active" || f["name"] != "team-a" {
		t.Errorf("fields %v", f)
	}

	bad := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "Team.A"}}
	expect(t, create(t, "namespaces", bad), `metadata.name: Invalid value: "Team.A": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`)

	withFin := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"custom"}}}
	expect(t, create(t, "namespaces", withFin), `spec.finalizers: Invalid value: "custom": name is neither a standard finalizer name nor is it fully qualified`)

	// A main-resource update cannot drop the finalizer.
	n := ns.DeepCopy()
	n.Spec.Finalizers = nil
	expect(t, update(t, "namespaces", n, ns), "")
	if len(n.Spec.Finalizers) != 1 {
		t.Errorf("finalizers changed through the main resource")
	}

	vs := lookup(t, "namespaces").Strategy.ValidateStatusUpdate
	n = ns.DeepCopy()
	n.Status.Phase = corev1.NamespaceTerminating
	expect(t, strs(vs(n, ns)), `status.Phase: Invalid value: "Terminating": may only be 'Active' if `+"`deletionTimestamp`"+` is empty`)
	n.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	expect(t, strs(vs(n, ns)), "")

	fin := ns.DeepCopy()
	fin.Spec.Finalizers = []corev1.FinalizerName{"bad"}
	expect(t, strs(ValidateNamespaceFinalize(fin)), `spec.finalizers[0]: Invalid value: "bad": name is neither a standard finalizer name nor is it fully qualified`)
}

func TestNode(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Spec: corev1.NodeSpec{PodCIDR: "10.244.1.0/24", Taints: []corev1.Taint{{Key: "a", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("110")},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.1.10"}}}}
	expect(t, create(t, "nodes", node), "")
	if len(node.Spec.PodCIDRs) != 1 || node.Status.Allocatable.Cpu().String() != "4" || len(node.Status.Addresses) != 1 {
		t.Errorf("node defaults / status kept on create: %+v", node)
	}
	if f := lookup(t, "nodes").Strategy.SelectableFields(node); f["spec.unschedulable"] != "false" {
		t.Errorf("fields %v", f)
	}

	n := node.DeepCopy()
	n.Spec.PodCIDR, n.Spec.PodCIDRs = "", []string{"10.244.2.0/24"}
	expect(t, update(t, "nodes", n, node), `spec.podCIDRs: Forbidden: node updates may not change podCIDR except from "" to valid`)

	bad := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}, Spec: corev1.NodeSpec{PodCIDRs: []string{"10.244.1.0"},
		Taints: []corev1.Taint{{Key: "a", Effect: "Sometimes"}}}}
	errs := create(t, "nodes", bad)
	expect(t, errs, `spec.podCIDRs[0]: Invalid value: "10.244.1.0": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)`)
	expect(t, errs, `metadata.taints[0].effect: Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`)
}

func TestPersistentVolume(t *testing.T) {
	now = func() metav1.Time { return metav1.NewTime(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)) }
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv1"}, Spec: corev1.PersistentVolumeSpec{
		AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
		PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data"}},
	}}
	expect(t, create(t, "persistentvolumes", pv), "")
	if pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain || *pv.Spec.VolumeMode != corev1.PersistentVolumeFilesystem ||
		pv.Status.Phase != corev1.VolumePending || pv.Status.LastPhaseTransitionTime == nil || *pv.Spec.HostPath.Type != "" {
		t.Errorf("pv defaults: %+v", pv)
	}

	empty := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv2"}}
	errs := create(t, "persistentvolumes", empty)
	expect(t, errs, "spec.accessModes: Required value")
	expect(t, errs, "spec.capacity: Required value")
	expect(t, errs, "spec: Required value: must specify a volume type")

	n := pv.DeepCopy()
	n.Spec.HostPath.Path = "/other"
	expect(t, update(t, "persistentvolumes", n, pv), "spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation\n…")
	n = pv.DeepCopy()
	n.Spec.Capacity[corev1.ResourceStorage] = resource.MustParse("2Gi")
	expect(t, update(t, "persistentvolumes", n, pv), "")

	vs := lookup(t, "persistentvolumes").Strategy.ValidateStatusUpdate
	now = func() metav1.Time { return metav1.NewTime(time.Date(2025, 1, 2, 0, 0, 0, 0, time.UTC)) }
	n = pv.DeepCopy()
	n.Status.Phase = corev1.VolumeAvailable
	expect(t, strs(vs(n, pv)), "")
	if n.Status.LastPhaseTransitionTime.Day() != 2 {
		t.Errorf("lastPhaseTransitionTime not stamped: %v", n.Status.LastPhaseTransitionTime)
	}
}

func TestPersistentVolumeClaim(t *testing.T) {
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}}
	expect(t, create(t, "persistentvolumeclaims", pvc), "")
	if pvc.Status.Phase != corev1.ClaimPending || *pvc.Spec.VolumeMode != corev1.PersistentVolumeFilesystem {
		t.Errorf("pvc defaults: %+v", pvc)
	}

	bad := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{"ReadSometimes"}}}
	errs := create(t, "persistentvolumeclaims", bad)
	expect(t, errs, `spec.accessModes: Unsupported value: "ReadSometimes": supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"`)
	expect(t, errs, "spec.resources[storage]: Required value")
	bad.Spec.AccessModes = nil
	expect(t, create(t, "persistentvolumeclaims", bad), "spec.accessModes: Required value: at least 1 access mode is required")

	// The binder may set volumeName once.
	n := pvc.DeepCopy()
	n.Spec.VolumeName = "pv1"
	expect(t, update(t, "persistentvolumeclaims", n, pvc), "")
	// An unbound claim cannot change its request.
	n = pvc.DeepCopy()
	n.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
	expect(t, update(t, "persistentvolumeclaims", n, pvc),
		"spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n…")
	// A bound claim can grow.
	bound := pvc.DeepCopy()
	bound.Status.Phase = corev1.ClaimBound
	bound.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	n = bound.DeepCopy()
	n.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
	expect(t, update(t, "persistentvolumeclaims", n, bound), "")
	n = bound.DeepCopy()
	n.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("512Mi")
	expect(t, update(t, "persistentvolumeclaims", n, bound), "spec.resources.requests.storage: Forbidden: field can not be less than status.capacity")
	n = pvc.DeepCopy()
	n.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeBlock)
	expect(t, update(t, "persistentvolumeclaims", n, pvc), `volumeMode: Invalid value: "Block": field is immutable`)
}
