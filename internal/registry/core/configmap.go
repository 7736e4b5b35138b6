package core

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

// maxDataSize is the most a ConfigMap's or Secret's data may hold (1 MiB).
const maxDataSize = 1 * 1024 * 1024

const immutableSetMsg = "field is immutable when `immutable` is set"

func configMaps() registry.Resource {
	return registry.Resource{
		Kind:       corev1.SchemeGroupVersion.WithKind("ConfigMap"),
		Plural:     "configmaps",
		Singular:   "configmap",
		ShortNames: []string{"cm"},
		Namespaced: true,
		Strategy: registry.Strategy{
			Validate: validated(func(obj runtime.Object) field.ErrorList { return validateConfigMap(obj.(*corev1.ConfigMap)) }),
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				cm, o := obj.(*corev1.ConfigMap), old.(*corev1.ConfigMap)
				if o.Immutable == nil || !*o.Immutable {
					return nil
				}
				var errs field.ErrorList
				if cm.Immutable == nil || !*cm.Immutable {
					errs = append(errs, field.Forbidden(field.NewPath("immutable"), immutableSetMsg))
				}
				if !reflect.DeepEqual(cm.Data, o.Data) {
					errs = append(errs, field.Forbidden(field.NewPath("data"), immutableSetMsg))
				}
				if !reflect.DeepEqual(cm.BinaryData, o.BinaryData) {
					errs = append(errs, field.Forbidden(field.NewPath("binaryData"), immutableSetMsg))
				}
				return errs
			},
		},
	}
}

func validateConfigMap(cm *corev1.ConfigMap) field.ErrorList {
	var errs field.ErrorList
	total := 0
	for k, v := range cm.Data {
		p := field.NewPath("data").Key(k)
		for _, msg := range validation.IsConfigMapKey(k) {
			errs = append(errs, field.Invalid(p, k, msg))
		}
		if _, dup := cm.BinaryData[k]; dup {
			errs = append(errs, field.Invalid(p, k, "duplicate of key present in binaryData"))
		}
		total += len(v)
	}
	for k, v := range cm.BinaryData {
		for _, msg := range validation.IsConfigMapKey(k) {
			errs = append(errs, field.Invalid(field.NewPath("binaryData").Key(k), k, msg))
		}
		total += len(v)
	}
	if total > maxDataSize {
		// upstream reports the whole object with an empty path
		errs = append(errs, field.TooLong(field.NewPath(""), "", maxDataSize))
	}
	return errs
}
