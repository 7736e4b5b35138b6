package storageapi

import (
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/api/podspec"
	"plainkube.dev/plainkube/internal/registry"
)

func csiStorageCapacities() registry.Resource {
	return registry.Resource{
		Kind:       storagev1.SchemeGroupVersion.WithKind("CSIStorageCapacity"),
		Plural:     "csistoragecapacities",
		Singular:   "csistoragecapacity",
		Namespaced: true,
		Strategy: registry.Strategy{
			// Validate is the create rule: label values in the topology
			// must be valid. An update may keep invalid ones it already had.
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateCSIStorageCapacity(obj.(*storagev1.CSIStorageCapacity), false)
			},
			ValidateUpdateOnly: true,
			Warnings: func(obj, _ runtime.Object) []string {
				return nodeSelectorWarnings(obj.(*storagev1.CSIStorageCapacity).NodeTopology, field.NewPath("nodeTopology"))
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return validateCSIStorageCapacityUpdate(obj.(*storagev1.CSIStorageCapacity), old.(*storagev1.CSIStorageCapacity))
			},
		},
	}
}

func validateCSIStorageCapacity(c *storagev1.CSIStorageCapacity, allowInvalidLabelValues bool) field.ErrorList {
	opts := metav1validation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: allowInvalidLabelValues}
	errs := metav1validation.ValidateLabelSelector(c.NodeTopology, opts, field.NewPath("nodeTopology"))
	for _, msg := range apivalidation.NameIsDNSSubdomain(c.StorageClassName, false) {
		errs = append(errs, field.Invalid(field.NewPath("storageClassName"), c.StorageClassName, msg))
	}
	if c.Capacity != nil {
		errs = append(errs, podspec.ValidateNonnegativeQuantity(*c.Capacity, field.NewPath("capacity"))...)
	}
	return errs
}

// validateCSIStorageCapacityUpdate: what the capacity was asked for (the
// topology and the class) does not change.
func validateCSIStorageCapacityUpdate(c, old *storagev1.CSIStorageCapacity) field.ErrorList {
	hadInvalid := len(metav1validation.ValidateLabelSelector(old.NodeTopology, metav1validation.LabelSelectorValidationOptions{}, nil)) > 0
	errs := validateCSIStorageCapacity(c, hadInvalid)
	if !equality.Semantic.DeepEqual(c.NodeTopology, old.NodeTopology) {
		errs = append(errs, field.Invalid(field.NewPath("nodeTopology"), c.NodeTopology, "field is immutable"))
	}
	if c.StorageClassName != old.StorageClassName {
		errs = append(errs, field.Invalid(field.NewPath("storageClassName"), c.StorageClassName, "field is immutable"))
	}
	return errs
}
