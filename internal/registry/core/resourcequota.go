package core

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/api/podspec"
	"plainkube.dev/plainkube/internal/registry"
)

func resourceQuotas() registry.Resource {
	return registry.Resource{
		Kind:                corev1.SchemeGroupVersion.WithKind("ResourceQuota"),
		Plural:              "resourcequotas",
		ReturnDeletedObject: true,
		Singular:            "resourcequota",
		ShortNames:          []string{"quota"},
		Namespaced:          true,
		Subresources:        []string{"status"},
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) {
				q := obj.(*corev1.ResourceQuota)
				podspec.RoundUpResourceList(q.Spec.Hard)
				podspec.RoundUpResourceList(q.Status.Hard)
				podspec.RoundUpResourceList(q.Status.Used)
			},
			PrepareForCreate: func(_ context.Context, obj runtime.Object) {
				obj.(*corev1.ResourceQuota).Status = corev1.ResourceQuotaStatus{}
			},
			Validate: validated(func(obj runtime.Object) field.ErrorList {
				return validateResourceQuotaSpec(&obj.(*corev1.ResourceQuota).Spec, field.NewPath("spec"))
			}),
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				n, o := obj.(*corev1.ResourceQuota), old.(*corev1.ResourceQuota)
				ns, os := sets.New[corev1.ResourceQuotaScope](n.Spec.Scopes...), sets.New[corev1.ResourceQuotaScope](o.Spec.Scopes...)
				if !ns.Equal(os) {
					return field.ErrorList{field.Invalid(field.NewPath("spec", "scopes"), n.Spec.Scopes, "field is immutable")}
				}
				return nil
			},
			ValidateStatusUpdate: func(obj, _ runtime.Object) field.ErrorList {
				st := &obj.(*corev1.ResourceQuota).Status
				errs := validateQuotaList(st.Hard, field.NewPath("status", "hard"))
				return append(errs, validateQuotaList(st.Used, field.NewPath("status", "used"))...)
			},
		},
	}
}

func validateQuotaList(rl corev1.ResourceList, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for k, v := range rl {
		rp := p.Key(string(k))
		errs = append(errs, podspec.ValidateResourceQuotaResourceName(k, rp)...)
		errs = append(errs, podspec.ValidateResourceQuantityValue(k, v, rp)...)
	}
	return errs
}

var standardQuotaScopes = []corev1.ResourceQuotaScope{
	corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating,
	corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort,
	corev1.ResourceQuotaScopePriorityClass, corev1.ResourceQuotaScopeCrossNamespacePodAffinity,
	corev1.ResourceQuotaScopeVolumeAttributesClass,
}

// quotaScopeAllows reports whether scope may limit the standard resource r:
// pod-scoped scopes only pod counts and cpu/memory, BestEffort only pods.
func quotaScopeAllows(scope corev1.ResourceQuotaScope, r corev1.ResourceName) bool {
	podCompute := sets.New[corev1.ResourceName]("cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory")
	switch scope {
	case corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeNotBestEffort,
		corev1.ResourceQuotaScopePriorityClass, corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return r == corev1.ResourcePods || podCompute.Has(r)
	case corev1.ResourceQuotaScopeBestEffort:
		return r == corev1.ResourcePods
	}
	return true
}

func validateResourceQuotaSpec(spec *corev1.ResourceQuotaSpec, fld *field.Path) field.ErrorList {
	errs := validateQuotaList(spec.Hard, fld.Child("hard"))
	hard := sets.New[corev1.ResourceName]()
	for k := range spec.Hard {
		hard.Insert(k)
	}
	conflicts := func(scopes sets.Set[corev1.ResourceQuotaScope], p *field.Path, bad any) {
		if (scopes.Has(corev1.ResourceQuotaScopeBestEffort) && scopes.Has(corev1.ResourceQuotaScopeNotBestEffort)) ||
			(scopes.Has(corev1.ResourceQuotaScopeTerminating) && scopes.Has(corev1.ResourceQuotaScopeNotTerminating)) {
			errs = append(errs, field.Invalid(p, bad, "conflicting scopes"))
		}
	}
	if len(spec.Scopes) > 0 {
		p := fld.Child("scopes")
		set := sets.New[corev1.ResourceQuotaScope]()
		for _, s := range spec.Scopes {
			if !contains(standardQuotaScopes, s) {
				errs = append(errs, field.Invalid(p, spec.Scopes, "unsupported scope"))
			}
			for _, k := range sets.List(hard) {
				if podspec.IsStandardQuotaResourceName(k) && !quotaScopeAllows(s, k) {
					errs = append(errs, field.Invalid(p, spec.Scopes, "unsupported scope applied to resource"))
				}
			}
			set.Insert(s)
		}
		conflicts(set, p, spec.Scopes)
	}
	if sel := spec.ScopeSelector; sel != nil {
		p := fld.Child("scopeSelector", "matchExpressions")
		set := sets.New[corev1.ResourceQuotaScope]()
		for _, req := range sel.MatchExpressions {
			if !contains(standardQuotaScopes, req.ScopeName) {
				errs = append(errs, field.Invalid(p.Child("scopeName"), req.ScopeName, "unsupported scope"))
			}
			for _, k := range sets.List(hard) {
				if podspec.IsStandardQuotaResourceName(k) && !quotaScopeAllows(req.ScopeName, k) {
					errs = append(errs, field.Invalid(p, sel, "unsupported scope applied to resource"))
				}
			}
			switch req.ScopeName {
			case corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort, corev1.ResourceQuotaScopeTerminating,
				corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
				if req.Operator != corev1.ScopeSelectorOpExists {
					errs = append(errs, field.Invalid(p.Child("operator"), req.Operator,
						"must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity"))
				}
			}
			switch req.Operator {
			case corev1.ScopeSelectorOpIn, corev1.ScopeSelectorOpNotIn:
				if len(req.Values) == 0 {
					errs = append(errs, field.Required(p.Child("values"), "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"))
				}
			case corev1.ScopeSelectorOpExists, corev1.ScopeSelectorOpDoesNotExist:
				if len(req.Values) != 0 {
					errs = append(errs, field.Invalid(p.Child("values"), req.Values, "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"))
				}
			default:
				errs = append(errs, field.Invalid(p.Child("operator"), req.Operator, "not a valid selector operator"))
			}
			set.Insert(req.ScopeName)
		}
		conflicts(set, p, spec.Scopes)
	}
	return errs
}
