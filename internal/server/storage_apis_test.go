package server

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// invalidWith fails unless err is a 422 whose message contains want.
func invalidWith(t *testing.T, what string, err error, want string) {
	t.Helper()
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: %v, want 422 with %q", what, err, want)
	}
}

// TestCSIDriversAndNodes: storage.k8s.io/v1 CSIDrivers get upstream
// v1.37's defaults and keep attachRequired and their modes; CSINodes keep
// what a driver registered (but its allocatable count) and their status
// subresource drops storage health (an alpha field upstream keeps off).
func TestCSIDriversAndNodes(t *testing.T) {
	_, cfg := startServer(t)
	warned := &warnings{}
	cfg.WarningHandler = warned
	cs := clientset(t, cfg)
	ctx := context.Background()
	drivers := cs.StorageV1().CSIDrivers()

	// Tokens without serviceAccountTokenInSecrets: upstream's warning.
	if _, err := drivers.Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "tokens.example.com"},
		Spec: storagev1.CSIDriverSpec{TokenRequests: []storagev1.TokenRequest{{Audience: "vault"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := warned.take(); len(got) != 1 || !strings.HasPrefix(got[0], "spec.serviceAccountTokenInSecrets is unset; if supported by this CSI driver") {
		t.Errorf("warnings of a driver asking for tokens: %q", got)
	}

	d, err := drivers.Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "hostpath.csi.k8s.io"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := d.Spec
	if !*s.AttachRequired || *s.PodInfoOnMount || *s.StorageCapacity || *s.RequiresRepublish || *s.SELinuxMount || *s.PreventPodSchedulingIfMissing ||
		*s.FSGroupPolicy != storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy || len(s.VolumeLifecycleModes) != 1 || s.VolumeLifecycleModes[0] != storagev1.VolumeLifecyclePersistent {
		t.Errorf("CSIDriver defaults: %+v", s)
	}
	d.Spec.AttachRequired = ptr.To(false)
	_, err = drivers.Update(ctx, d, metav1.UpdateOptions{})
	invalidWith(t, "changing attachRequired", err, "spec.attachedRequired: Invalid value: false: field is immutable")
	d.Spec.AttachRequired = ptr.To(true)
	d.Spec.PodInfoOnMount = ptr.To(true)
	if d, err = drivers.Update(ctx, d, metav1.UpdateOptions{}); err != nil || d.Generation != 1 {
		t.Errorf("changing podInfoOnMount: generation %d, %v; want 1, nil", d.Generation, err)
	}
	_, err = drivers.Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "short.example.com"}, Spec: storagev1.CSIDriverSpec{
		TokenRequests: []storagev1.TokenRequest{{Audience: "a", ExpirationSeconds: ptr.To(int64(60))}}, FSGroupPolicy: ptr.To(storagev1.FSGroupPolicy("Some")),
	}}, metav1.CreateOptions{})
	invalidWith(t, "a short token and an unknown fsGroupPolicy", err, "spec.tokenRequests[0].expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes")
	invalidWith(t, "an unknown fsGroupPolicy", err, `spec.fsGroupPolicy: Unsupported value: "Some": supported values: "File", "None", "ReadWriteOnceWithFSType"`)

	nodes := cs.StorageV1().CSINodes()
	n, err := nodes.Create(ctx, &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
		{Name: "hostpath.csi.k8s.io", NodeID: "node-1", TopologyKeys: []string{"topology.hostpath.csi/node"}},
	}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Spec.Drivers[0].Allocatable = &storagev1.VolumeNodeResources{Count: ptr.To(int32(10))}
	if n, err = nodes.Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("changing a driver's allocatable count: %v", err)
	}
	n.Spec.Drivers[0].NodeID = "other"
	_, err = nodes.Update(ctx, n, metav1.UpdateOptions{})
	invalidWith(t, "changing a driver's node ID", err, "spec.drivers: Invalid value")
	n.Spec.Drivers[0].NodeID = "node-1"
	n.Status.StorageHealth = []storagev1.StorageHealth{{Name: "hostpath.csi.k8s.io"}}
	if n, err = nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil || len(n.Status.StorageHealth) != 0 {
		t.Errorf("status write of storage health: %+v, %v; want it dropped", n.Status, err)
	}
	_, err = nodes.Create(ctx, &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "node-2"}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
		{Name: "a.example.com", NodeID: "n"}, {Name: "a.example.com"},
	}}}, metav1.CreateOptions{})
	invalidWith(t, "a driver twice, without a node ID", err, `spec.drivers[1].nodeID: Required value`)
	invalidWith(t, "a driver twice", err, `spec.drivers[1].name: Duplicate value: "a.example.com"`)
	if list, err := nodes.List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 1 {
		t.Errorf("CSINodes: %v, %v", list, err)
	}
}

// TestVolumeAttachmentsCapacitiesAndClasses: a VolumeAttachment's spec is
// immutable and its status written through /status only; a
// CSIStorageCapacity is namespaced with an immutable topology and class; a
// VolumeAttributesClass needs parameters and keeps its driver and them.
func TestVolumeAttachmentsCapacitiesAndClasses(t *testing.T) {
	_, cfg := startServer(t)
	warned := &warnings{}
	cfg.WarningHandler = warned
	cs := clientset(t, cfg)
	ctx := context.Background()

	vas := cs.StorageV1().VolumeAttachments()
	va, err := vas.Create(ctx, &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va-1"}, Spec: storagev1.VolumeAttachmentSpec{
		Attacher: "hostpath.csi.k8s.io", NodeName: "node-1", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-1")},
	}, Status: storagev1.VolumeAttachmentStatus{Attached: true}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if va.Status.Attached {
		t.Errorf("status given on create was kept: %+v", va.Status)
	}
	va.Status = storagev1.VolumeAttachmentStatus{Attached: true, AttachmentMetadata: map[string]string{"dev": "/dev/sdb"}}
	if va, err = vas.UpdateStatus(ctx, va, metav1.UpdateOptions{}); err != nil || !va.Status.Attached {
		t.Fatalf("status write: %+v, %v", va, err)
	}
	va.Spec.NodeName = "node-2"
	_, err = vas.Update(ctx, va, metav1.UpdateOptions{})
	invalidWith(t, "changing the spec", err, "spec: Invalid value")
	va.Spec.NodeName = "node-1"
	va.Status.AttachError = &storagev1.VolumeError{ErrorCode: ptr.To(int32(-1))}
	_, err = vas.UpdateStatus(ctx, va, metav1.UpdateOptions{})
	invalidWith(t, "a negative error code", err, "status.attachError.errorCode: Invalid value: -1: must be between 0 and 2147483647, inclusive")
	_, err = vas.Create(ctx, &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va-2"}, Spec: storagev1.VolumeAttachmentSpec{
		Attacher: "hostpath.csi.k8s.io", NodeName: "node-1", Source: storagev1.VolumeAttachmentSource{
			InlineVolumeSpec: &corev1.PersistentVolumeSpec{Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}},
		},
	}}, metav1.CreateOptions{})
	invalidWith(t, "an inline spec with a capacity", err, "spec.source.inlineVolumeSpec.capacity: Forbidden: may not be specified in the context of inline volumes")
	invalidWith(t, "an inline spec without csi", err, "spec.source.inlineVolumeSpec.csi: Required value: has to be specified in the context of inline volumes")
	_, err = vas.Create(ctx, &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va-3"}, Spec: storagev1.VolumeAttachmentSpec{NodeName: "node-1"}}, metav1.CreateOptions{})
	invalidWith(t, "no attacher", err, "spec.attacher: Required value")
	invalidWith(t, "no source", err, "spec.source: Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName")

	caps := cs.StorageV1().CSIStorageCapacities("default")
	c, err := caps.Create(ctx, &storagev1.CSIStorageCapacity{ObjectMeta: metav1.ObjectMeta{Name: "cap-1"}, StorageClassName: "standard",
		NodeTopology: &metav1.LabelSelector{MatchLabels: map[string]string{"zone": "a"}}, Capacity: ptr.To(resource.MustParse("10Gi"))}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := caps.Create(ctx, &storagev1.CSIStorageCapacity{ObjectMeta: metav1.ObjectMeta{Name: "old-zone"}, StorageClassName: "standard",
		NodeTopology: &metav1.LabelSelector{MatchLabels: map[string]string{"failure-domain.beta.kubernetes.io/zone": "a"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := warned.take(); len(got) != 1 || got[0] != `nodeTopology.matchLabels.failure-domain.beta.kubernetes.io/zone: deprecated since v1.17; use "topology.kubernetes.io/zone" instead` {
		t.Errorf("warnings of a topology with a deprecated label: %q", got)
	}
	if err := caps.Delete(ctx, "old-zone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.Capacity = ptr.To(resource.MustParse("5Gi"))
	if c, err = caps.Update(ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("changing the capacity: %v", err)
	}
	c.StorageClassName = "fast"
	_, err = caps.Update(ctx, c, metav1.UpdateOptions{})
	invalidWith(t, "changing the class", err, `storageClassName: Invalid value: "fast": field is immutable`)
	_, err = caps.Create(ctx, &storagev1.CSIStorageCapacity{ObjectMeta: metav1.ObjectMeta{Name: "cap-2"}, StorageClassName: "standard",
		Capacity: ptr.To(resource.MustParse("-1"))}, metav1.CreateOptions{})
	invalidWith(t, "a negative capacity", err, `capacity: Invalid value: "-1": must be greater than or equal to 0`)
	if list, err := cs.StorageV1().CSIStorageCapacities("").List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 1 || list.Items[0].Namespace != "default" {
		t.Errorf("CSIStorageCapacities of all namespaces: %v, %v", list, err)
	}

	classes := cs.StorageV1().VolumeAttributesClasses()
	_, err = classes.Create(ctx, &storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: "empty"}, DriverName: "hostpath.csi.k8s.io"}, metav1.CreateOptions{})
	invalidWith(t, "a class without parameters", err, "parameters: Required value: must contain at least one key/value pair")
	vac, err := classes.Create(ctx, &storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: "gold"}, DriverName: "hostpath.csi.k8s.io",
		Parameters: map[string]string{"iops": "100"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vac.Parameters["iops"] = "200"
	vac.DriverName = "other.example.com"
	_, err = classes.Update(ctx, vac, metav1.UpdateOptions{})
	invalidWith(t, "changing the driver", err, "driverName: Forbidden: updates to driverName are forbidden.")
	invalidWith(t, "changing parameters", err, "parameters: Forbidden: updates to parameters are forbidden.")
}
