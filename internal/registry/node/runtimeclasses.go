package node

import (
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/api/podspec"
	"plainkube.dev/plainkube/internal/registry"
)

func runtimeClasses() registry.Resource {
	return registry.Resource{
		Kind:     nodev1.SchemeGroupVersion.WithKind("RuntimeClass"),
		Plural:   "runtimeclasses",
		Singular: "runtimeclass",
		Strategy: registry.Strategy{
			Validate: func(obj runtime.Object) field.ErrorList { return validateRuntimeClass(obj.(*nodev1.RuntimeClass)) },
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				rc, o := obj.(*nodev1.RuntimeClass), old.(*nodev1.RuntimeClass)
				return append(validateRuntimeClass(rc), apivalidation.ValidateImmutableField(rc.Handler, o.Handler, field.NewPath("handler"))...)
			},
		},
	}
}

func validateRuntimeClass(rc *nodev1.RuntimeClass) field.ErrorList {
	var errs field.ErrorList
	handler := field.NewPath("handler")
	if rc.Handler == "" {
		errs = append(errs, field.Required(handler, ""))
	} else {
		for _, msg := range apivalidation.NameIsDNSLabel(rc.Handler, false) {
			errs = append(errs, field.Invalid(handler, rc.Handler, msg))
		}
	}
	if rc.Overhead != nil {
		podFixed := field.NewPath("overhead", "podFixed")
		for name, q := range rc.Overhead.PodFixed {
			p := podFixed.Key(string(name))
			errs = append(errs, podspec.ValidateContainerResourceName(name, p)...)
			errs = append(errs, podspec.ValidateResourceQuantityValue(name, q, p)...)
		}
	}
	if s := rc.Scheduling; s != nil {
		sp := field.NewPath("scheduling")
		errs = append(errs, metav1validation.ValidateLabels(s.NodeSelector, sp.Child("nodeSelector"))...)
		tp := sp.Child("tolerations")
		errs = append(errs, podspec.ValidateTolerations(s.Tolerations, tp)...)
		seen := map[corev1.Toleration]bool{}
		for i, t := range s.Tolerations {
			key := corev1.Toleration{Key: t.Key, Operator: t.Operator, Value: t.Value, Effect: t.Effect}
			if seen[key] {
				errs = append(errs, field.Duplicate(tp.Index(i), t))
			}
			seen[key] = true
		}
	}
	return errs
}
