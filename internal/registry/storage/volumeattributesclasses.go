package storageapi

import (
	"reflect"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

func volumeAttributesClasses() registry.Resource {
	return registry.Resource{
		Kind:                storagev1.SchemeGroupVersion.WithKind("VolumeAttributesClass"),
		Plural:              "volumeattributesclasses",
		ReturnDeletedObject: true,
		Singular:            "volumeattributesclass",
		ShortNames:          []string{"vac"},
		Strategy: registry.Strategy{
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateVolumeAttributesClass(obj.(*storagev1.VolumeAttributesClass))
			},
			// An update reports the immutable fields first, as upstream.
			ValidateUpdateOnly: true,
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				vac, o := obj.(*storagev1.VolumeAttributesClass), old.(*storagev1.VolumeAttributesClass)
				var errs field.ErrorList
				if vac.DriverName != o.DriverName {
					errs = append(errs, field.Forbidden(field.NewPath("driverName"), "updates to driverName are forbidden."))
				}
				if !reflect.DeepEqual(o.Parameters, vac.Parameters) {
					errs = append(errs, field.Forbidden(field.NewPath("parameters"), "updates to parameters are forbidden."))
				}
				return append(errs, validateVolumeAttributesClass(vac)...)
			},
		},
	}
}

func validateVolumeAttributesClass(vac *storagev1.VolumeAttributesClass) field.ErrorList {
	errs := validateProvisioner(vac.DriverName, field.NewPath("driverName"))
	return append(errs, validateParameters(vac.Parameters, false, field.NewPath("parameters"))...)
}
