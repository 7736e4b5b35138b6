package resource

import (
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/api/podspec"
	"plainkube.dev/plainkube/internal/registry"
)

func deviceClasses() registry.Resource {
	return registry.Resource{
		Kind:                resourcev1.SchemeGroupVersion.WithKind("DeviceClass"),
		Plural:              "deviceclasses",
		ReturnDeletedObject: true,
		Singular:            "deviceclass",
		TracksGeneration:    true,
		Strategy: registry.Strategy{
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateDeviceClassSpec(&obj.(*resourcev1.DeviceClass).Spec, nil)
			},
			// Selectors and configs that did not change are not checked
			// again (an expression valid then stays accepted).
			ValidateUpdateOnly: true,
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return validateDeviceClassSpec(&obj.(*resourcev1.DeviceClass).Spec, &old.(*resourcev1.DeviceClass).Spec)
			},
		},
	}
}

func validateDeviceClassSpec(s, old *resourcev1.DeviceClassSpec) field.ErrorList {
	p := field.NewPath("spec")
	storedSelectors := old != nil && equality.Semantic.DeepEqual(s.Selectors, old.Selectors)
	errs := validateSelectors(s.Selectors, storedSelectors, p.Child("selectors"))
	storedConfig := old != nil && equality.Semantic.DeepEqual(s.Config, old.Config)
	errs = append(errs, eachItem(s.Config, maxDeviceConfigs, p.Child("config"),
		func(c resourcev1.DeviceClassConfiguration, p *field.Path) field.ErrorList {
			return validateDeviceConfiguration(c.DeviceConfiguration, storedConfig, p)
		})...)
	if n := s.ExtendedResourceName; n != nil && !podspec.IsExtendedResourceName(corev1.ResourceName(*n)) {
		errs = append(errs, field.Invalid(p.Child("extendedResourceName"), *n, "must be a valid extended resource name"))
	}
	return errs
}
