package storageapi

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

const (
	maxProvisionerParameterSize = 256 * (1 << 10) // 256 kB
	maxProvisionerParameterLen  = 512
)

func storageClasses() registry.Resource {
	return registry.Resource{
		Kind:                storagev1.SchemeGroupVersion.WithKind("StorageClass"),
		Plural:              "storageclasses",
		ReturnDeletedObject: true,
		Singular:            "storageclass",
		ShortNames:          []string{"sc"},
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) {
				sc := obj.(*storagev1.StorageClass)
				if sc.ReclaimPolicy == nil {
					p := corev1.PersistentVolumeReclaimDelete
					sc.ReclaimPolicy = &p
				}
				if sc.VolumeBindingMode == nil {
					m := storagev1.VolumeBindingImmediate
					sc.VolumeBindingMode = &m
				}
			},
			Validate: func(obj runtime.Object) field.ErrorList { return validateStorageClass(obj.(*storagev1.StorageClass)) },
			Warnings: func(obj, _ runtime.Object) []string {
				return topologyWarnings(obj.(*storagev1.StorageClass).AllowedTopologies)
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return validateStorageClassUpdate(obj.(*storagev1.StorageClass), old.(*storagev1.StorageClass))
			},
		},
	}
}

var (
	reclaimPolicies = []string{string(corev1.PersistentVolumeReclaimDelete), string(corev1.PersistentVolumeReclaimRetain)}
	bindingModes    = []string{string(storagev1.VolumeBindingImmediate), string(storagev1.VolumeBindingWaitForFirstConsumer)}
)

func validateStorageClass(sc *storagev1.StorageClass) field.ErrorList {
	errs := validateProvisioner(sc.Provisioner, field.NewPath("provisioner"))
	errs = append(errs, validateParameters(sc.Parameters, true, field.NewPath("parameters"))...)

	if rp := sc.ReclaimPolicy; rp != nil && *rp != "" && *rp != corev1.PersistentVolumeReclaimDelete && *rp != corev1.PersistentVolumeReclaimRetain {
		errs = append(errs, field.NotSupported(field.NewPath("reclaimPolicy"), rp, reclaimPolicies))
	}
	bp := field.NewPath("volumeBindingMode")
	switch {
	case sc.VolumeBindingMode == nil:
		errs = append(errs, field.Required(bp, ""))
	case *sc.VolumeBindingMode != storagev1.VolumeBindingImmediate && *sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer:
		errs = append(errs, field.NotSupported(bp, sc.VolumeBindingMode, bindingModes))
	}
	return append(errs, validateAllowedTopologies(sc.AllowedTopologies, field.NewPath("allowedTopologies"))...)
}

// validateProvisioner checks a provisioner's or driver's name: required,
// and a qualified name once lowercased.
func validateProvisioner(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, name)}
	}
	var errs field.ErrorList
	lower := strings.ToLower(name)
	for _, msg := range validation.IsQualifiedName(lower) {
		errs = append(errs, field.Invalid(p, lower, msg))
	}
	return errs
}

// validateParameters bounds a class's parameters in number and size; a
// class that must have some says so when it has none.
func validateParameters(params map[string]string, allowEmpty bool, p *field.Path) field.ErrorList {
	if len(params) > maxProvisionerParameterLen {
		return field.ErrorList{field.TooLong(p, "", maxProvisionerParameterLen)}
	}
	var errs field.ErrorList
	size := 0
	for k, v := range params {
		if k == "" {
			errs = append(errs, field.Invalid(p, k, "field can not be empty."))
		}
		size += len(k) + len(v)
	}
	if size > maxProvisionerParameterSize {
		errs = append(errs, field.TooLong(p, "", maxProvisionerParameterSize))
	}
	if !allowEmpty && len(params) == 0 {
		errs = append(errs, field.Required(p, "must contain at least one key/value pair"))
	}
	return errs
}

// validateAllowedTopologies: each term's requirements have a label key, a
// set of values, and no repeated key; no two terms are the same.
func validateAllowedTopologies(terms []corev1.TopologySelectorTerm, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	var seen []map[string]map[string]bool
	for i, term := range terms {
		tp := p.Index(i).Child("matchLabelExpressions")
		exprs := map[string]map[string]bool{}
		for j, req := range term.MatchLabelExpressions {
			rp := tp.Index(j)
			vp := rp.Child("values")
			if len(req.Values) == 0 {
				errs = append(errs, field.Required(vp, ""))
			}
			values := map[string]bool{}
			for k, v := range req.Values {
				if values[v] {
					errs = append(errs, field.Duplicate(vp.Index(k), v))
				}
				values[v] = true
			}
			errs = append(errs, metav1validation.ValidateLabelName(req.Key, rp.Child("key"))...)
			if _, dup := exprs[req.Key]; dup {
				errs = append(errs, field.Duplicate(rp.Child("key"), req.Key))
			}
			exprs[req.Key] = values
		}
		for _, prev := range seen {
			if equality.Semantic.DeepEqual(prev, exprs) {
				errs = append(errs, field.Duplicate(tp, ""))
			}
		}
		seen = append(seen, exprs)
	}
	return errs
}

func validateStorageClassUpdate(sc, old *storagev1.StorageClass) field.ErrorList {
	errs := apivalidation.ValidateImmutableField(sc.Parameters, old.Parameters, field.NewPath("parameters"))
	errs = append(errs, apivalidation.ValidateImmutableField(sc.Provisioner, old.Provisioner, field.NewPath("provisioner"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(sc.ReclaimPolicy, old.ReclaimPolicy, field.NewPath("reclaimPolicy"))...)
	return append(errs, apivalidation.ValidateImmutableField(sc.VolumeBindingMode, old.VolumeBindingMode, field.NewPath("volumeBindingMode"))...)
}
