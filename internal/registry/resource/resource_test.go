package resource

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"plainkube.dev/plainkube/internal/registry/registrytest"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/registry"
)

// expectErrors compares errs with want, in order, each by prefix.
// TestDiscoveryNames: names, scopes and subresources as upstream's
// published discovery of resource.k8s.io/v1 (no short names, no categories).
func TestDiscoveryNames(t *testing.T) {
	want := map[string]string{
		"deviceclasses":          "deviceclass  cluster",
		"resourceclaims":         "resourceclaim  namespaced status",
		"resourceclaimtemplates": "resourceclaimtemplate  namespaced",
		"resourceslices":         "resourceslice  cluster",
		"devicetaintrules":       "devicetaintrule  cluster status",
	}
	for _, r := range Resources() {
		scope := "cluster"
		if r.Namespaced {
			scope = "namespaced"
		}
		got := strings.TrimSpace(fmt.Sprintf("%s %s %s %s", r.Singular, strings.Join(r.ShortNames, ","), scope, strings.Join(r.Subresources, ",")))
		if got != want[r.Plural] || len(r.Categories) > 0 || r.Verbs != nil {
			t.Errorf("%s: %q categories %v verbs %v, want %q and all verbs", r.Plural, got, r.Categories, r.Verbs, want[r.Plural])
		}
		delete(want, r.Plural)
	}
	if len(want) > 0 {
		t.Errorf("missing: %v", want)
	}
}

func selector(expr string) resourcev1.DeviceSelector {
	return resourcev1.DeviceSelector{CEL: &resourcev1.CELDeviceSelector{Expression: expr}}
}

func TestDeviceClassRules(t *testing.T) {
	r := resourceNamed(t, "deviceclasses")
	good := &resourcev1.DeviceClass{Spec: resourcev1.DeviceClassSpec{
		Selectors: []resourcev1.DeviceSelector{selector(`device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].model == "a100"`)},
		Config: []resourcev1.DeviceClassConfiguration{{DeviceConfiguration: resourcev1.DeviceConfiguration{Opaque: &resourcev1.OpaqueDeviceConfiguration{
			Driver: "gpu.example.com", Parameters: runtime.RawExtension{Raw: []byte(`{"sharing":"time-slicing"}`)}}}}},
		ExtendedResourceName: ptr.To("example.com/gpu"),
	}}
	expectErrors(t, "good class", r.Strategy.Validate(good))

	bad := &resourcev1.DeviceClass{Spec: resourcev1.DeviceClassSpec{
		Selectors: []resourcev1.DeviceSelector{{}, selector("noSuchVar"), selector(`device.driver`)},
		Config: []resourcev1.DeviceClassConfiguration{{}, {DeviceConfiguration: resourcev1.DeviceConfiguration{Opaque: &resourcev1.OpaqueDeviceConfiguration{
			Driver: "Not_A_Driver", Parameters: runtime.RawExtension{Raw: []byte(`[1]`)}}}}},
		ExtendedResourceName: ptr.To("cpu"),
	}}
	expectErrors(t, "bad class", r.Strategy.Validate(bad),
		"spec.selectors[0].cel: Required value",
		`spec.selectors[1].cel.expression: Invalid value: "noSuchVar": compilation failed: ERROR: <input>:1:1: undeclared reference to 'noSuchVar'`,
		`spec.selectors[2].cel.expression: Invalid value: "device.driver": must evaluate to bool`,
		"spec.config[0].opaque: Required value",
		`spec.config[1].opaque.driver: Invalid value: "Not_A_Driver": a lowercase RFC 1123 subdomain`,
		`spec.config[1].opaque.parameters: Invalid value: "<value omitted>": must be a valid JSON object`,
		`spec.extendedResourceName: Invalid value: "cpu": must be a valid extended resource name`)

	many := &resourcev1.DeviceClass{}
	for range 33 {
		many.Spec.Selectors = append(many.Spec.Selectors, selector("true"))
	}
	expectErrors(t, "33 selectors", r.Strategy.Validate(many), "spec.selectors: Too many: 33: must have at most 32 items")

	// An expression accepted before is not compiled again while it stays.
	stored := &resourcev1.DeviceClass{Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{selector("noSuchVar")}}}
	expectErrors(t, "unchanged stored selector", r.Strategy.ValidateUpdate(stored, stored.DeepCopy()))
}

func exactRequest(name, class string) resourcev1.DeviceRequest {
	return resourcev1.DeviceRequest{Name: name, Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: class}}
}

func TestResourceClaimRules(t *testing.T) {
	r := resourceNamed(t, "resourceclaims")
	claim := &resourcev1.ResourceClaim{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
		Requests: []resourcev1.DeviceRequest{exactRequest("gpu", "gpu.example.com"), {Name: "nic", FirstAvailable: []resourcev1.DeviceSubRequest{
			{Name: "fast", DeviceClassName: "nic-fast"}, {Name: "slow", DeviceClassName: "nic-slow", AllocationMode: resourcev1.DeviceAllocationModeAll}}}},
		Constraints: []resourcev1.DeviceConstraint{{Requests: []string{"gpu", "nic/fast"}, MatchAttribute: ptr.To(resourcev1.FullyQualifiedName("example.com/numa"))}},
	}}}
	r.Strategy.Default(claim)
	if e := claim.Spec.Devices.Requests[0].Exactly; e.AllocationMode != resourcev1.DeviceAllocationModeExactCount || e.Count != 1 {
		t.Errorf("defaulted request: mode %q count %d, want ExactCount 1", e.AllocationMode, e.Count)
	}
	if s := claim.Spec.Devices.Requests[1].FirstAvailable[1]; s.Count != 0 {
		t.Errorf("defaulted All subrequest: count %d, want 0", s.Count)
	}
	expectErrors(t, "good claim", r.Strategy.Validate(claim))

	bad := &resourcev1.ResourceClaim{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
		Requests: []resourcev1.DeviceRequest{
			{Name: "none"},
			{Name: "all", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "c", AllocationMode: resourcev1.DeviceAllocationModeAll, Count: 2}},
			{Name: "all", Exactly: &resourcev1.ExactDeviceRequest{AllocationMode: "Some", Tolerations: []resourcev1.DeviceToleration{{Operator: "Exists", Value: "x"}}}},
		},
		Constraints: []resourcev1.DeviceConstraint{{Requests: []string{"missing"}}},
	}}}
	expectErrors(t, "bad claim", r.Strategy.Validate(bad),
		"spec.devices.requests[0]: Required value: exactly one of `exactly` or `firstAvailable` is required",
		`spec.devices.requests[1].exactly.count: Invalid value: 2: must not be specified when allocationMode is 'All'`,
		"spec.devices.requests[2].exactly.deviceClassName: Required value",
		`spec.devices.requests[2].exactly.allocationMode: Unsupported value: "Some": supported values: "All", "ExactCount"`,
		`spec.devices.requests[2].exactly.tolerations[0].value: Invalid value: "x": must be empty for operator `+"`Exists`",
		`spec.devices.requests[2]: Duplicate value: "all"`,
		`spec.devices.constraints[0].requests[0]: Invalid value: "missing": must be the name of a request in the claim or the name of a request and a subrequest separated by '/'`,
		"spec.devices.constraints[0].matchAttribute: Required value")

	many := &resourcev1.ResourceClaim{}
	for i := range 33 {
		many.Spec.Devices.Requests = append(many.Spec.Devices.Requests, exactRequest(fmt.Sprintf("r%d", i), "c"))
	}
	expectErrors(t, "33 requests", r.Strategy.Validate(many), "spec.devices.requests: Too many: 33: must have at most 32 items")

	changed := claim.DeepCopy()
	changed.Spec.Devices.Requests[0].Exactly.DeviceClassName = "other"
	expectErrors(t, "spec change", r.Strategy.ValidateUpdate(changed, claim), "spec: Invalid value: ")
	if !r.Strategy.ValidateUpdateOnly {
		t.Error("a claim update is checked only for the immutable spec, as upstream")
	}
}

func TestResourceClaimStatusRules(t *testing.T) {
	r := resourceNamed(t, "resourceclaims")
	claim := &resourcev1.ResourceClaim{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
		Requests: []resourcev1.DeviceRequest{exactRequest("gpu", "gpu.example.com")}}}}
	r.Strategy.Default(claim)

	reserved := claim.DeepCopy()
	reserved.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "p"}}
	expectErrors(t, "reserved, not allocated", r.Strategy.ValidateStatusUpdate(reserved, claim),
		"status.reservedFor[0].uid: Required value",
		"status.reservedFor: Forbidden: may not be specified when `allocated` is not set")

	allocated := claim.DeepCopy()
	allocated.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{
		Results: []resourcev1.DeviceRequestAllocationResult{{Request: "gpu", Driver: "gpu.example.com", Pool: "node-1", Device: "gpu-0"}}}}
	allocated.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "p", UID: "1234"}}
	allocated.Status.Devices = []resourcev1.AllocatedDeviceStatus{{Driver: "gpu.example.com", Pool: "node-1", Device: "gpu-0"}}
	expectErrors(t, "allocated and reserved", r.Strategy.ValidateStatusUpdate(allocated, claim))

	badResult := claim.DeepCopy()
	badResult.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{
		Results: []resourcev1.DeviceRequestAllocationResult{{Request: "cpu", Driver: "gpu.example.com", Pool: "node-1", Device: "gpu-0"}}}}
	badResult.Status.Devices = []resourcev1.AllocatedDeviceStatus{{Driver: "gpu.example.com", Pool: "node-1", Device: "gpu-1"}}
	expectErrors(t, "unknown request, unallocated device", r.Strategy.ValidateStatusUpdate(badResult, claim),
		`status.devices[0]: Invalid value: "gpu.example.com/node-1/gpu-1": must be an allocated device in the claim`,
		`status.allocation.devices.results[0].request: Invalid value: "cpu": must be the name of a request`)

	moved := allocated.DeepCopy()
	moved.Status.Allocation.Devices.Results[0].Device = "gpu-1"
	moved.Status.Devices = nil
	expectErrors(t, "allocation changed", r.Strategy.ValidateStatusUpdate(moved, allocated), "status.allocation: Invalid value: ")

	// Deallocating drops the deallocated devices' statuses.
	deallocated := allocated.DeepCopy()
	deallocated.Status.Allocation, deallocated.Status.ReservedFor = nil, nil
	merged := r.Parts["status"].Merge(deallocated, allocated).(*resourcev1.ResourceClaim)
	if merged.Status.Devices != nil {
		t.Errorf("device statuses after deallocation: %v, want none", merged.Status.Devices)
	}
}

func TestResourceClaimTemplateRules(t *testing.T) {
	r := resourceNamed(t, "resourceclaimtemplates")
	tmpl := &resourcev1.ResourceClaimTemplate{Spec: resourcev1.ResourceClaimTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Name: "fixed", Labels: map[string]string{"app": "x"}},
		Spec:       resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{exactRequest("Bad_Name", "c")}}},
	}}
	r.Strategy.Default(tmpl)
	expectErrors(t, "bad template", r.Strategy.Validate(tmpl),
		"spec.metadata.name: Forbidden: cannot be set",
		`spec.spec.devices.requests[0].name: Invalid value: "Bad_Name": a lowercase RFC 1123 label`)
	if got := tmpl.Spec.Spec.Devices.Requests[0].Exactly.Count; got != 1 {
		t.Errorf("defaulted template request count %d, want 1", got)
	}
}

func sliceOn(node string, devices ...resourcev1.Device) *resourcev1.ResourceSlice {
	return &resourcev1.ResourceSlice{Spec: resourcev1.ResourceSliceSpec{Driver: "gpu.example.com", NodeName: ptr.To(node),
		Pool: resourcev1.ResourcePool{Name: node, ResourceSliceCount: 1}, Devices: devices}}
}

func TestResourceSliceRules(t *testing.T) {
	r := resourceNamed(t, "resourceslices")
	good := sliceOn("node-1", resourcev1.Device{Name: "gpu-0", Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
		"model": {StringValue: ptr.To("a100")}, "gpu.example.com/driverVersion": {VersionValue: ptr.To("1.2.3-rc.1")}},
		Taints: []resourcev1.DeviceTaint{{Key: "example.com/broken", Effect: resourcev1.DeviceTaintEffectNoSchedule}}})
	r.Strategy.Default(good)
	if good.Spec.Devices[0].Taints[0].TimeAdded == nil {
		t.Error("a device taint without timeAdded was not stamped")
	}
	expectErrors(t, "good slice", r.Strategy.Validate(good))
	f := r.Strategy.SelectableFields(good)
	if f["spec.nodeName"] != "node-1" || f["spec.driver"] != "gpu.example.com" || f["spec.pool.name"] != "node-1" {
		t.Errorf("selectable fields %v", f)
	}

	bad := &resourcev1.ResourceSlice{Spec: resourcev1.ResourceSliceSpec{Driver: "gpu.example.com", NodeName: ptr.To("node-1"), AllNodes: ptr.To(true),
		Pool: resourcev1.ResourcePool{Name: "p"}, Devices: []resourcev1.Device{
			{Name: "d", Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"v": {VersionValue: ptr.To("1.2")}, "none": {}}},
			{Name: "d", NodeName: ptr.To("node-2")},
		}}}
	expectErrors(t, "bad slice", r.Strategy.Validate(bad),
		"spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero",
		"spec: Invalid value: \"{`nodeName`, `allNodes`}\": exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set",
		`spec.devices[0].attributes[none]: Invalid value: "": exactly one value must be specified`,
		`spec.devices[0].attributes[v].version: Invalid value: "1.2": must be a string compatible with semver.org spec 2.0.0`,
		"spec.devices[1]: Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec",
		`spec.devices[1]: Duplicate value: "d"`)

	typed := sliceOn("node-1", resourcev1.Device{Name: "d"})
	typed.Spec.PartitionTypeAttribute = ptr.To(resourcev1.FullyQualifiedName("gpu.example.com/profile"))
	expectErrors(t, "partition type without counters", r.Strategy.Validate(typed),
		`spec.partitionTypeAttribute: Invalid value: "gpu.example.com/profile": may only be set on a slice which declares devices that consume counters`)

	none := sliceOn("x")
	none.Spec.NodeName = nil
	expectErrors(t, "no node selection", r.Strategy.Validate(none),
		"spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required")

	many := sliceOn("node-1")
	for i := range 129 {
		many.Spec.Devices = append(many.Spec.Devices, resourcev1.Device{Name: fmt.Sprintf("d%d", i)})
	}
	expectErrors(t, "129 devices", r.Strategy.Validate(many), "spec.devices: Too many: 129: must have at most 128 items")

	moved := good.DeepCopy()
	moved.Spec.NodeName, moved.Spec.Driver = ptr.To("node-2"), "other.example.com"
	expectErrors(t, "moved slice", r.Strategy.ValidateUpdate(moved, good),
		`spec.driver: Invalid value: "other.example.com": field is immutable`,
		`spec.nodeName: Invalid value: "node-2": field is immutable`)
}

func TestDeviceTaintRuleRules(t *testing.T) {
	r := resourceNamed(t, "devicetaintrules")
	rule := &resourcev1.DeviceTaintRule{Spec: resourcev1.DeviceTaintRuleSpec{
		DeviceSelector: &resourcev1.DeviceTaintSelector{Driver: ptr.To("gpu.example.com"), Pool: ptr.To("node-1"), Device: ptr.To("Gpu_0")},
		Taint:          resourcev1.DeviceTaint{Key: "example.com/maintenance", Effect: "Evict"},
	}}
	r.Strategy.Default(rule)
	if rule.Spec.Taint.TimeAdded == nil {
		t.Fatal("a rule's taint without timeAdded was not stamped")
	}
	expectErrors(t, "bad rule", r.Strategy.Validate(rule),
		`spec.deviceSelector.device: Invalid value: "Gpu_0": a lowercase RFC 1123 label`,
		`spec.taint.effect: Unsupported value: "Evict": supported values: "NoExecute", "NoSchedule", "None"`)

	rule.Spec.DeviceSelector.Device = ptr.To("gpu-0")
	rule.Spec.Taint.Effect = resourcev1.DeviceTaintEffectNoSchedule
	rule.Spec.Taint.TimeAdded = &metav1.Time{Time: time.Now().Add(-time.Hour).Truncate(time.Second)}
	expectErrors(t, "good rule", r.Strategy.Validate(rule))

	// A new effect gets a new timeAdded unless the client set one.
	updated := rule.DeepCopy()
	updated.Spec.Taint.Effect = resourcev1.DeviceTaintEffectNoExecute
	r.Strategy.PrepareForUpdate(t.Context(), updated, rule)
	if !updated.Spec.Taint.TimeAdded.After(rule.Spec.Taint.TimeAdded.Time) {
		t.Errorf("timeAdded after an effect change: %v, was %v", updated.Spec.Taint.TimeAdded, rule.Spec.Taint.TimeAdded)
	}

	withStatus := rule.DeepCopy()
	for i := range 9 {
		withStatus.Status.Conditions = append(withStatus.Status.Conditions, metav1.Condition{Type: fmt.Sprintf("C%d", i), Status: metav1.ConditionTrue,
			Reason: "R", LastTransitionTime: metav1.Now()})
	}
	expectErrors(t, "nine conditions", r.Strategy.ValidateStatusUpdate(withStatus, rule), "status.conditions: Too many: 9: must have at most 8 items")
}

// TestDisabledFeatureFields: fields of the DRA features upstream v1.37
// leaves off are dropped from a new slice, and kept on an update of a
// slice that already uses them.
func TestDisabledFeatureFields(t *testing.T) {
	r := resourceNamed(t, "resourceslices")
	s := sliceOn("node-1", resourcev1.Device{Name: "d", BindingConditions: []string{"ready"}, BindsToNode: ptr.To(true),
		AllowMultipleAllocations: ptr.To(true), ConsumesCounters: []resourcev1.DeviceCounterConsumption{{CounterSet: "mem"}},
		Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"ids": {IntValues: []int64{1, 2}}}})
	r.Strategy.PrepareForCreate(t.Context(), s)
	d := s.Spec.Devices[0]
	if d.BindingConditions != nil || d.BindsToNode != nil || d.AllowMultipleAllocations != nil || d.ConsumesCounters != nil || d.Attributes["ids"].IntValues != nil {
		t.Errorf("a new slice kept fields of disabled features: %+v", d)
	}

	stored := sliceOn("node-1", resourcev1.Device{Name: "d", BindingConditions: []string{"ready"}, BindingFailureConditions: []string{"failed"}})
	updated := stored.DeepCopy()
	updated.Spec.Devices[0].BindingConditions = []string{"ready", "attached"}
	r.Strategy.PrepareForUpdate(t.Context(), updated, stored)
	if got := updated.Spec.Devices[0].BindingConditions; len(got) != 2 {
		t.Errorf("binding conditions of a slice that uses them: %v", got)
	}

	claims := resourceNamed(t, "resourceclaims")
	c := &resourcev1.ResourceClaim{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
		Requests:    []resourcev1.DeviceRequest{exactRequest("a", "c")},
		Constraints: []resourcev1.DeviceConstraint{{DistinctAttribute: ptr.To(resourcev1.FullyQualifiedName("example.com/x"))}}}}}
	claims.Strategy.PrepareForCreate(t.Context(), c)
	if c.Spec.Devices.Constraints[0].DistinctAttribute != nil {
		t.Error("a new claim kept distinctAttribute (consumable capacity is off)")
	}
}

// TestDerivedAttributes: a request's derived attribute must be named by a
// constraint on it and computed by an expression that compiles.
func TestDerivedAttributes(t *testing.T) {
	r := resourceNamed(t, "resourceclaims")
	claim := &resourcev1.ResourceClaim{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
		Requests: []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "c",
			DerivedAttributes: []resourcev1.DeviceDerivedAttribute{
				{Name: "example.com/numa", Expression: `device.attributes["example.com"].numa`},
				{Name: "example.com/unused", Expression: `"x"`},
				{Name: "example.com/broken", Expression: `noSuchVar`},
			}}}},
		Constraints: []resourcev1.DeviceConstraint{{MatchAttribute: ptr.To(resourcev1.FullyQualifiedName("example.com/numa"))},
			{Requests: []string{"gpu"}, MatchAttribute: ptr.To(resourcev1.FullyQualifiedName("example.com/broken"))}},
	}}}
	r.Strategy.Default(claim)
	expectErrors(t, "derived attributes", r.Strategy.Validate(claim),
		`spec.devices.requests[0].exactly.derivedAttributes[1].name: Invalid value: "example.com/unused": must be referenced by at least one matchAttribute or distinctAttribute constraint targeting this request`,
		`spec.devices.requests[0].exactly.derivedAttributes[2].expression: Invalid value: "noSuchVar": compilation failed: ERROR: <input>:1:1: undeclared reference to 'noSuchVar'`)
}

func resourceNamed(t *testing.T, plural string) registry.Resource {
	t.Helper()
	return registrytest.Named(t, Resources(), plural)
}

func expectErrors(t *testing.T, what string, errs field.ErrorList, want ...string) {
	t.Helper()
	registrytest.ExpectErrorPrefixes(t, what, errs, want...)
}
