package server

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourceapply "k8s.io/client-go/applyconfigurations/resource/v1"
	"k8s.io/utils/ptr"
)

// TestResourceClaimLifecycle: resource.k8s.io/v1 is served. A
// DeviceClass with a bad CEL selector is refused; a ResourceClaim is
// created defaulted, its spec never changes, its status takes an
// allocation and a reservation, its STATE column follows, and it is
// deleted. ResourceSlices are listed by spec.nodeName.
func TestResourceClaimLifecycle(t *testing.T) {
	_, cfg := startServer(t)
	cs := clientset(t, cfg)
	ctx := context.Background()
	rapi := cs.ResourceV1()

	bad := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: resourcev1.DeviceClassSpec{
		Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: "device.driver"}}}}}
	_, err := rapi.DeviceClasses().Create(ctx, bad, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.selectors[0].cel.expression") {
		t.Fatalf("a DeviceClass whose selector is not a bool: %v, want 422", err)
	}
	class := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.example.com"}, Spec: resourcev1.DeviceClassSpec{
		Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: `device.driver == "gpu.example.com"`}}}}}
	if class, err = rapi.DeviceClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if class.Generation != 1 {
		t.Errorf("a new DeviceClass has generation %d, want 1", class.Generation)
	}

	// Server-side apply knows the kind's schema.
	applied, err := rapi.DeviceClasses().Apply(ctx, resourceapply.DeviceClass("nic.example.com").WithSpec(resourceapply.DeviceClassSpec().
		WithSelectors(resourceapply.DeviceSelector().WithCEL(resourceapply.CELDeviceSelector().WithExpression(`device.driver == "nic.example.com"`)))),
		metav1.ApplyOptions{FieldManager: "test"})
	if err != nil || len(applied.ManagedFields) != 1 || len(applied.Spec.Selectors) != 1 {
		t.Fatalf("apply of a DeviceClass: %v %+v", err, applied)
	}

	claims := rapi.ResourceClaims("default")
	claim := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}, Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
		Requests: []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: class.Name}}}}},
		Status: resourcev1.ResourceClaimStatus{ReservedFor: []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "sneaky", UID: "1"}}}}
	if claim, err = claims.Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if e := claim.Spec.Devices.Requests[0].Exactly; e.AllocationMode != resourcev1.DeviceAllocationModeExactCount || e.Count != 1 {
		t.Errorf("created claim's request: mode %q count %d, want ExactCount 1", e.AllocationMode, e.Count)
	}
	if len(claim.Status.ReservedFor) != 0 {
		t.Errorf("a create set the status: %+v", claim.Status)
	}
	claimState := func(want string) {
		t.Helper()
		code, _, body := raw(t, cfg, "GET", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims", "", "application/json;as=Table;v=v1;g=meta.k8s.io", "")
		var table metav1.Table
		if err := json.Unmarshal([]byte(body), &table); code != 200 || err != nil {
			t.Fatalf("table: %d %s", code, body)
		}
		if len(table.ColumnDefinitions) != 3 || table.ColumnDefinitions[1].Name != "State" || len(table.Rows) != 1 || table.Rows[0].Cells[1] != want {
			t.Errorf("claims table: %s, want state %q", body, want)
		}
	}
	claimState("pending")

	changed := claim.DeepCopy()
	changed.Spec.Devices.Requests[0].Exactly.Count = 2
	if _, err := claims.Update(ctx, changed, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "field is immutable") {
		t.Errorf("changing a claim's spec: %v, want 422 immutable", err)
	}

	reserved := claim.DeepCopy()
	reserved.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "p", UID: "1234"}}
	if _, err := claims.UpdateStatus(ctx, reserved, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "may not be specified when `allocated` is not set") {
		t.Errorf("reserving an unallocated claim: %v, want 422", err)
	}
	reserved.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{
		Results: []resourcev1.DeviceRequestAllocationResult{{Request: "gpu", Driver: "gpu.example.com", Pool: "node-1", Device: "gpu-0"}}}}
	reserved.Spec.Devices.Requests[0].Exactly.Count = 5 // a status write keeps the stored spec
	got, err := claims.UpdateStatus(ctx, reserved, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Devices.Requests[0].Exactly.Count != 1 || got.Status.Allocation == nil || len(got.Status.ReservedFor) != 1 {
		t.Errorf("after the status write: spec %+v status %+v", got.Spec, got.Status)
	}
	claimState("allocated,reserved")

	moved := got.DeepCopy()
	moved.Status.Allocation.Devices.Results[0].Device = "gpu-1"
	if _, err := claims.UpdateStatus(ctx, moved, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("changing an allocation: %v, want 422", err)
	}
	plain := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Spec: claim.Spec}
	granted, err := claims.Create(ctx, plain, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	granted.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{
		Results: []resourcev1.DeviceRequestAllocationResult{{Request: "gpu", Driver: "gpu.example.com", Pool: "node-1", Device: "gpu-0", AdminAccess: ptr.To(true)}}}}
	if _, err := claims.UpdateStatus(ctx, granted, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "status.allocation.devices.results[0].adminAccess: Forbidden") {
		t.Errorf("granting admin access in an unlabelled namespace: %v, want 422", err)
	}
	if err := claims.Delete(ctx, claim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := claims.Get(ctx, claim.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: %v, want 404", err)
	}

	// Admin access to devices only in a namespace labelled for it.
	admin := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "admin"}, Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
		Requests: []resourcev1.DeviceRequest{{Name: "all", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: class.Name,
			AllocationMode: resourcev1.DeviceAllocationModeAll, AdminAccess: ptr.To(true)}}}}}}
	_, err = claims.Create(ctx, admin, metav1.CreateOptions{})
	if want := "spec.devices.requests[0].adminAccess: Forbidden: admin access to devices requires the `resource.kubernetes.io/admin-access: true` label on the containing namespace"; !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("admin access in an unlabelled namespace: %v, want 422 %q", err, want)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "dra-admin", Labels: map[string]string{"resource.kubernetes.io/admin-access": "true"}}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rapi.ResourceClaims(ns.Name).Create(ctx, admin, metav1.CreateOptions{}); err != nil {
		t.Errorf("admin access in a labelled namespace: %v", err)
	}

	for _, node := range []string{"node-1", "node-2"} {
		slice := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-gpus"}, Spec: resourcev1.ResourceSliceSpec{
			Driver: "gpu.example.com", NodeName: ptr.To(node), Pool: resourcev1.ResourcePool{Name: node, ResourceSliceCount: 1},
			Devices: []resourcev1.Device{{Name: "gpu-0"}}}}
		if _, err := rapi.ResourceSlices().Create(ctx, slice, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := rapi.ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=node-2,spec.driver=gpu.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "node-2-gpus" {
		t.Errorf("slices of node-2: %d items", len(list.Items))
	}
}
