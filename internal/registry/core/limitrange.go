package core

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/api/podspec"
	"plainkube.dev/plainkube/internal/registry"
)

func limitRanges() registry.Resource {
	return registry.Resource{
		Kind:       corev1.SchemeGroupVersion.WithKind("LimitRange"),
		Plural:     "limitranges",
		Singular:   "limitrange",
		ShortNames: []string{"limits"},
		Namespaced: true,
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) {
				lr := obj.(*corev1.LimitRange)
				for i := range lr.Spec.Limits {
					defaultLimitRangeItem(&lr.Spec.Limits[i])
				}
			},
			Validate: validated(func(obj runtime.Object) field.ErrorList { return validateLimitRange(obj.(*corev1.LimitRange)) }),
		},
	}
}

// defaultLimitRangeItem: for Container items, the default limit falls back
// to max, and the default request to the default limit, then to min.
func defaultLimitRangeItem(it *corev1.LimitRangeItem) {
	if it.Type == corev1.LimitTypeContainer {
		if it.Default == nil {
			it.Default = corev1.ResourceList{}
		}
		if it.DefaultRequest == nil {
			it.DefaultRequest = corev1.ResourceList{}
		}
		for k, v := range it.Max {
			if _, ok := it.Default[k]; !ok {
				it.Default[k] = v.DeepCopy()
			}
		}
		for k, v := range it.Default {
			if _, ok := it.DefaultRequest[k]; !ok {
				it.DefaultRequest[k] = v.DeepCopy()
			}
		}
		for k, v := range it.Min {
			if _, ok := it.DefaultRequest[k]; !ok {
				it.DefaultRequest[k] = v.DeepCopy()
			}
		}
	}
	for _, rl := range []corev1.ResourceList{it.Max, it.Min, it.Default, it.DefaultRequest, it.MaxLimitRequestRatio} {
		podspec.RoundUpResourceList(rl)
	}
}

func validateLimitRangeResourceName(t corev1.LimitType, name corev1.ResourceName, p *field.Path) field.ErrorList {
	if t == corev1.LimitTypePod || t == corev1.LimitTypeContainer {
		return podspec.ValidateContainerResourceName(name, p)
	}
	return podspec.ValidateResourceName(name, p)
}

func validateLimitRange(lr *corev1.LimitRange) field.ErrorList {
	var errs field.ErrorList
	types := map[corev1.LimitType]bool{}
	fldPath := field.NewPath("spec", "limits")
	for i := range lr.Spec.Limits {
		p := fldPath.Index(i)
		l := &lr.Spec.Limits[i]
		errs = append(errs, podspec.ValidateLimitRangeTypeName(l.Type, p.Child("type"))...)
		if types[l.Type] {
			errs = append(errs, field.Duplicate(p.Child("type"), l.Type))
		}
		types[l.Type] = true

		keys := sets.New[string]()
		collect := func(rl corev1.ResourceList, child string) map[string]resource.Quantity {
			out := map[string]resource.Quantity{}
			for k, q := range rl {
				errs = append(errs, validateLimitRangeResourceName(l.Type, k, p.Child(child).Key(string(k)))...)
				keys.Insert(string(k))
				out[string(k)] = q
			}
			return out
		}
		max := collect(l.Max, "max")
		min := collect(l.Min, "min")
		defaults, defaultRequests := map[string]resource.Quantity{}, map[string]resource.Quantity{}
		if l.Type == corev1.LimitTypePod {
			if len(l.Default) > 0 {
				errs = append(errs, field.Forbidden(p.Child("default"), "may not be specified when `type` is 'Pod'"))
			}
			if len(l.DefaultRequest) > 0 {
				errs = append(errs, field.Forbidden(p.Child("defaultRequest"), "may not be specified when `type` is 'Pod'"))
			}
		} else {
			defaults = collect(l.Default, "default")
			defaultRequests = collect(l.DefaultRequest, "defaultRequest")
		}
		if l.Type == corev1.LimitTypePersistentVolumeClaim {
			_, hasMin := l.Min[corev1.ResourceStorage]
			_, hasMax := l.Max[corev1.ResourceStorage]
			if !hasMin && !hasMax {
				errs = append(errs, field.Required(p.Child("limits"), "either minimum or maximum storage value is required, but neither was provided"))
			}
		}
		ratios := collect(l.MaxLimitRequestRatio, "maxLimitRequestRatio")

		for _, k := range sets.List(keys) {
			mn, hasMin := min[k]
			mx, hasMax := max[k]
			def, hasDef := defaults[k]
			defReq, hasDefReq := defaultRequests[k]
			ratio, hasRatio := ratios[k]
			if hasMin && hasMax && mn.Cmp(mx) > 0 {
				errs = append(errs, field.Invalid(p.Child("min").Key(k), mn, fmt.Sprintf("min value %s is greater than max value %s", mn.String(), mx.String())))
			}
			if hasDefReq && hasMin && mn.Cmp(defReq) > 0 {
				errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(k), defReq, fmt.Sprintf("min value %s is greater than default request value %s", mn.String(), defReq.String())))
			}
			if hasDefReq && hasMax && defReq.Cmp(mx) > 0 {
				errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(k), defReq, fmt.Sprintf("default request value %s is greater than max value %s", defReq.String(), mx.String())))
			}
			if hasDefReq && hasDef && defReq.Cmp(def) > 0 {
				errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(k), defReq, fmt.Sprintf("default request value %s is greater than default limit value %s", defReq.String(), def.String())))
			}
			if hasDef && hasMin && mn.Cmp(def) > 0 {
				errs = append(errs, field.Invalid(p.Child("default").Key(k), mn, fmt.Sprintf("min value %s is greater than default value %s", mn.String(), def.String())))
			}
			if hasDef && hasMax && def.Cmp(mx) > 0 {
				errs = append(errs, field.Invalid(p.Child("default").Key(k), mx, fmt.Sprintf("default value %s is greater than max value %s", def.String(), mx.String())))
			}
			if hasRatio && ratio.Cmp(*resource.NewQuantity(1, resource.DecimalSI)) < 0 {
				errs = append(errs, field.Invalid(p.Child("maxLimitRequestRatio").Key(k), ratio, fmt.Sprintf("ratio %s is less than 1", ratio.String())))
			}
			if hasRatio && hasMin && hasMax {
				r, mnv, mxv := float64(ratio.Value()), mn.Value(), mx.Value()
				if ratio.Value() < resource.MaxMilliValue && mnv < resource.MaxMilliValue && mxv < resource.MaxMilliValue {
					r, mnv, mxv = float64(ratio.MilliValue())/1000, mn.MilliValue(), mx.MilliValue()
				}
				if lim := float64(mxv) / float64(mnv); r > lim {
					errs = append(errs, field.Invalid(p.Child("maxLimitRequestRatio").Key(k), ratio, fmt.Sprintf("ratio %s is greater than max/min = %f", ratio.String(), lim)))
				}
			}
			if !podspec.IsOvercommitAllowed(corev1.ResourceName(k)) && hasDef && hasDefReq && def.Cmp(defReq) != 0 {
				errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(k), defReq, fmt.Sprintf("default value %s must equal to defaultRequest value %s in %s", def.String(), defReq.String(), k)))
			}
		}
	}
	return errs
}
