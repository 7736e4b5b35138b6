package storageapi

import (
	"context"
	"fmt"

	storagev1 "k8s.io/api/storage/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/api/podspec"
	"plainkube.dev/plainkube/internal/registry"
)

const csiNodeIDMaxLength = 256

func csiNodes() registry.Resource {
	return registry.Resource{
		Kind:                storagev1.SchemeGroupVersion.WithKind("CSINode"),
		Plural:              "csinodes",
		ReturnDeletedObject: true,
		Singular:            "csinode",
		Subresources:        []string{"status"},
		// Storage health (status.storageHealth) is upstream's alpha
		// CSIVolumeHealth, off by default: a status write keeps what the
		// stored object has and drops what it would add.
		Parts: map[string]registry.Part{"status": {Merge: mergeCSINodeStatus}},
		Strategy: registry.Strategy{
			PrepareForCreate: func(_ context.Context, obj runtime.Object) {
				obj.(*storagev1.CSINode).Status = storagev1.CSINodeStatus{}
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateCSINodeDrivers(obj.(*storagev1.CSINode).Spec.Drivers, field.NewPath("spec", "drivers"))
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return validateCSINodeUpdate(obj.(*storagev1.CSINode), old.(*storagev1.CSINode))
			},
		},
	}
}

// mergeCSINodeStatus is a status write: the stored object with obj's
// metadata (as any status write) and the stored status.
func mergeCSINodeStatus(obj, old runtime.Object) runtime.Object {
	out := old.DeepCopyObject().(*storagev1.CSINode)
	n := obj.(*storagev1.CSINode)
	out.Annotations, out.Finalizers, out.OwnerReferences = n.Annotations, n.Finalizers, n.OwnerReferences
	return out
}

func validateCSINodeDrivers(drivers []storagev1.CSINodeDriver, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	for i, d := range drivers {
		ip := p.Index(i)
		errs = append(errs, podspec.ValidateCSIDriverName(d.Name, ip.Child("name"))...)
		np := ip.Child("nodeID")
		if d.NodeID == "" {
			errs = append(errs, field.Required(np, d.NodeID))
		}
		if len(d.NodeID) > csiNodeIDMaxLength {
			errs = append(errs, field.Invalid(np, d.NodeID, fmt.Sprintf("must be %d characters or less", csiNodeIDMaxLength)))
		}
		if a := d.Allocatable; a != nil && a.Count != nil {
			errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*a.Count), ip.Child("allocatable", "count"))...)
		}
		if names[d.Name] {
			errs = append(errs, field.Duplicate(ip.Child("name"), d.Name))
		}
		names[d.Name] = true
		keys := map[string]bool{}
		for _, key := range d.TopologyKeys {
			if key == "" {
				errs = append(errs, field.Required(ip, key))
			}
			if keys[key] {
				errs = append(errs, field.Duplicate(ip, key))
			}
			keys[key] = true
			for _, msg := range validation.IsQualifiedName(key) {
				errs = append(errs, field.Invalid(ip, key, msg))
			}
		}
	}
	return errs
}

// validateCSINodeUpdate: a driver keeps what it registered, except its
// allocatable count (upstream's MutableCSINodeAllocatableCount, on).
func validateCSINodeUpdate(n, old *storagev1.CSINode) field.ErrorList {
	var errs field.ErrorList
	for _, od := range old.Spec.Drivers {
		for _, nd := range n.Spec.Drivers {
			if od.Name != nd.Name {
				continue
			}
			o, c := od.DeepCopy(), nd.DeepCopy()
			o.Allocatable, c.Allocatable = nil, nil
			errs = append(errs, apivalidation.ValidateImmutableField(c, o, field.NewPath("spec", "drivers"))...)
		}
	}
	return errs
}
