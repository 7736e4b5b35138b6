package resource

import (
	resourcev1 "k8s.io/api/resource/v1"
)

// Upstream v1.37 leaves these DRA features off by default (alpha) and
// drops their fields from what a client writes, unless the stored object
// already uses them: DRAConsumableCapacity, DRAPartitionableDevices,
// DRADeviceBindingConditions, DRANodeAllocatableResources and
// DRAListTypeAttributes. The drop functions below do the same; old is nil
// on create.

func dropDisabledSliceFields(s, old *resourcev1.ResourceSliceSpec) {
	if !sliceUses(old, func(d *resourcev1.Device) bool {
		return len(d.ConsumesCounters) > 0 || d.NodeName != nil || d.NodeSelector != nil || d.AllNodes != nil
	}) && (old == nil || len(old.SharedCounters) == 0 && old.PerDeviceNodeSelection == nil) {
		s.SharedCounters, s.PerDeviceNodeSelection = nil, nil
		for i := range s.Devices {
			d := &s.Devices[i]
			d.ConsumesCounters, d.NodeName, d.NodeSelector, d.AllNodes = nil, nil, nil, nil
		}
	}
	if !sliceUses(old, func(d *resourcev1.Device) bool {
		return len(d.BindingConditions) > 0 || len(d.BindingFailureConditions) > 0 || d.BindsToNode != nil
	}) {
		for i := range s.Devices {
			d := &s.Devices[i]
			d.BindingConditions, d.BindingFailureConditions, d.BindsToNode = nil, nil, nil
		}
	}
	if !sliceUses(old, func(d *resourcev1.Device) bool {
		if d.AllowMultipleAllocations != nil {
			return true
		}
		for _, c := range d.Capacity {
			if c.RequestPolicy != nil {
				return true
			}
		}
		return false
	}) {
		for i := range s.Devices {
			d := &s.Devices[i]
			d.AllowMultipleAllocations = nil
			for k, c := range d.Capacity {
				c.RequestPolicy = nil
				d.Capacity[k] = c
			}
		}
	}
	if !sliceUses(old, func(d *resourcev1.Device) bool { return len(d.NodeAllocatableResources) > 0 }) {
		for i := range s.Devices {
			s.Devices[i].NodeAllocatableResources = nil
		}
	}
	if !sliceUses(old, func(d *resourcev1.Device) bool {
		for _, a := range d.Attributes {
			if a.BoolValues != nil || a.IntValues != nil || a.StringValues != nil || a.VersionValues != nil {
				return true
			}
		}
		return false
	}) {
		for i := range s.Devices {
			for k, a := range s.Devices[i].Attributes {
				a.BoolValues, a.IntValues, a.StringValues, a.VersionValues = nil, nil, nil, nil
				s.Devices[i].Attributes[k] = a
			}
		}
	}
}

// sliceUses reports whether a device of the stored slice spec s uses a feature.
func sliceUses(s *resourcev1.ResourceSliceSpec, uses func(*resourcev1.Device) bool) bool {
	if s == nil {
		return false
	}
	for i := range s.Devices {
		if uses(&s.Devices[i]) {
			return true
		}
	}
	return false
}

// dropDisabledClaimFields drops a new claim's (or template's) use of
// consumable capacity: distinct attributes and capacity requests.
func dropDisabledClaimFields(d *resourcev1.DeviceClaim) {
	for i := range d.Constraints {
		d.Constraints[i].DistinctAttribute = nil
	}
	for i := range d.Requests {
		r := &d.Requests[i]
		if r.Exactly != nil {
			r.Exactly.Capacity = nil
		}
		for j := range r.FirstAvailable {
			r.FirstAvailable[j].Capacity = nil
		}
	}
}

// dropDisabledClaimStatusFields drops shared allocations (consumable
// capacity) and binding conditions from a status write, unless the stored
// status has them.
func dropDisabledClaimStatusFields(s, old *resourcev1.ResourceClaimStatus) {
	if s.Allocation == nil {
		return
	}
	var shared, binding bool
	if old.Allocation != nil {
		for _, r := range old.Allocation.Devices.Results {
			shared = shared || r.ShareID != nil || r.ConsumedCapacity != nil
			binding = binding || len(r.BindingConditions) > 0 || len(r.BindingFailureConditions) > 0
		}
	}
	for i := range s.Allocation.Devices.Results {
		r := &s.Allocation.Devices.Results[i]
		if !shared {
			r.ShareID, r.ConsumedCapacity = nil, nil
		}
		if !binding {
			r.BindingConditions, r.BindingFailureConditions = nil, nil
		}
	}
	if !shared {
		for i := range s.Devices {
			s.Devices[i].ShareID = nil
		}
	}
}
