package podspec

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// SupportedAccessModes are the valid PV and PVC access modes, sorted.
var SupportedAccessModes = []corev1.PersistentVolumeAccessMode{
	corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOnce, corev1.ReadWriteOncePod,
}

// SupportedVolumeModes are the valid PV and PVC volume modes, sorted.
var SupportedVolumeModes = []corev1.PersistentVolumeMode{corev1.PersistentVolumeBlock, corev1.PersistentVolumeFilesystem}

// ValidateAccessModes checks access modes: known values, and
// ReadWriteOncePod alone. Emptiness is the caller's to report (PV and PVC
// word it differently).
func ValidateAccessModes(modes []corev1.PersistentVolumeAccessMode, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	rwop, other := false, false
	for _, m := range modes {
		if !contains(SupportedAccessModes, m) {
			allErrs = append(allErrs, field.NotSupported(fldPath, m, SupportedAccessModes))
			continue
		}
		if m == corev1.ReadWriteOncePod {
			rwop = true
		} else {
			other = true
		}
	}
	if rwop && other {
		allErrs = append(allErrs, field.Forbidden(fldPath, "may not use ReadWriteOncePod with other access modes"))
	}
	return allErrs
}

// ValidatePersistentVolumeClaimSpec checks a claim's spec (claims and
// generic ephemeral volume templates).
func ValidatePersistentVolumeClaimSpec(spec *corev1.PersistentVolumeClaimSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(spec.AccessModes) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("accessModes"), "at least 1 access mode is required"))
	}
	if spec.Selector != nil {
		allErrs = append(allErrs, metavalidation.ValidateLabelSelector(spec.Selector, metavalidation.LabelSelectorValidationOptions{}, fldPath.Child("selector"))...)
	}
	allErrs = append(allErrs, ValidateAccessModes(spec.AccessModes, fldPath.Child("accessModes"))...)

	storagePath := fldPath.Child("resources").Key(string(corev1.ResourceStorage))
	if q, ok := spec.Resources.Requests[corev1.ResourceStorage]; !ok {
		allErrs = append(allErrs, field.Required(storagePath, ""))
	} else if errs := ValidatePositiveQuantityValue(q, storagePath); len(errs) > 0 {
		allErrs = append(allErrs, errs...)
	} else {
		allErrs = append(allErrs, ValidateResourceQuantityValue(corev1.ResourceStorage, q, storagePath)...)
	}
	if spec.StorageClassName != nil && *spec.StorageClassName != "" {
		for _, msg := range apivalidation.NameIsDNSSubdomain(*spec.StorageClassName, false) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("storageClassName"), *spec.StorageClassName, msg))
		}
	}
	if spec.VolumeMode != nil && !contains(SupportedVolumeModes, *spec.VolumeMode) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("volumeMode"), *spec.VolumeMode, SupportedVolumeModes))
	}
	if ds := spec.DataSource; ds != nil {
		allErrs = append(allErrs, validateDataSource(ds.Name, ds.Kind, ds.APIGroup, fldPath.Child("dataSource"))...)
	}
	if ref := spec.DataSourceRef; ref != nil {
		p := fldPath.Child("dataSourceRef")
		allErrs = append(allErrs, validateDataSource(ref.Name, ref.Kind, ref.APIGroup, p)...)
		if ref.Namespace != nil && *ref.Namespace != "" {
			for _, msg := range apivalidation.ValidateNamespaceName(*ref.Namespace, false) {
				allErrs = append(allErrs, field.Invalid(p.Child("namespace"), *ref.Namespace, msg))
			}
		}
	}
	if ref := spec.DataSourceRef; ref != nil && ref.Namespace != nil && *ref.Namespace != "" {
		if spec.DataSource != nil {
			allErrs = append(allErrs, field.Invalid(fldPath, fldPath.Child("dataSource"), "may not be specified when dataSourceRef.namespace is specified"))
		}
	} else if ds := spec.DataSource; ds != nil && ref != nil {
		if !reflect.DeepEqual(ds.APIGroup, ref.APIGroup) || ds.Kind != ref.Kind || ds.Name != ref.Name {
			allErrs = append(allErrs, field.Invalid(fldPath, fldPath.Child("dataSource"), "must match dataSourceRef"))
		}
	}
	if spec.VolumeAttributesClassName != nil && *spec.VolumeAttributesClassName != "" {
		for _, msg := range apivalidation.NameIsDNSSubdomain(*spec.VolumeAttributesClassName, false) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("volumeAttributesClassName"), *spec.VolumeAttributesClassName, msg))
		}
	}
	return allErrs
}

func validateDataSource(name, kind string, apiGroup *string, fldPath *field.Path) field.ErrorList {
	allErrs := requireAll(fldPath, "name", name, "kind", kind)
	group := ""
	if apiGroup != nil {
		group = *apiGroup
	}
	if group == "" && kind != "PersistentVolumeClaim" {
		allErrs = append(allErrs, field.Invalid(fldPath, kind, "must be 'PersistentVolumeClaim' when referencing the default apiGroup"))
	}
	if group != "" {
		for _, msg := range validation.IsDNS1123Subdomain(group) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("apiGroup"), group, msg))
		}
	}
	return allErrs
}
