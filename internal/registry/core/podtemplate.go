package core

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/api/podspec"
	"plainkube.dev/plainkube/internal/registry"
)

func podTemplates() registry.Resource {
	return registry.Resource{
		Kind:                corev1.SchemeGroupVersion.WithKind("PodTemplate"),
		Plural:              "podtemplates",
		ReturnDeletedObject: true,
		Singular:            "podtemplate",
		Namespaced:          true,
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) { podspec.DefaultPodTemplateSpec(&obj.(*corev1.PodTemplate).Template) },
			Validate: validated(func(obj runtime.Object) field.ErrorList {
				return podspec.ValidatePodTemplateSpec(&obj.(*corev1.PodTemplate).Template, field.NewPath("template"))
			}),
		},
	}
}
