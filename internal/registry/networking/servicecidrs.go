package networking

import (
	"context"
	"net/netip"

	networkingv1 "k8s.io/api/networking/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

// serviceCIDRs are the ranges Service cluster IPs come from (the default
// one, "kubernetes", is the server's --service-cidr). Status is written
// through its subresource only, as upstream.
func serviceCIDRs() registry.Resource {
	return registry.Resource{
		Kind:         networkingv1.SchemeGroupVersion.WithKind("ServiceCIDR"),
		Plural:       "servicecidrs",
		Singular:     "servicecidr",
		Subresources: []string{"status"},
		Strategy: registry.Strategy{
			PrepareForCreate: func(_ context.Context, obj runtime.Object) {
				obj.(*networkingv1.ServiceCIDR).Status = networkingv1.ServiceCIDRStatus{}
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateServiceCIDRs(obj.(*networkingv1.ServiceCIDR).Spec.CIDRs, field.NewPath("spec", "cidrs"))
			},
			ValidateUpdate:     validateServiceCIDRUpdate,
			ValidateUpdateOnly: true,
		},
	}
}

func validateServiceCIDRs(cidrs []string, p *field.Path) field.ErrorList {
	switch {
	case len(cidrs) == 0:
		return field.ErrorList{field.Required(p, "at least one CIDR required")}
	case len(cidrs) > 2:
		return field.ErrorList{field.Invalid(p, cidrs, "may only hold up to 2 values")}
	}
	var errs field.ErrorList
	for i, c := range cidrs {
		errs = append(errs, validation.IsValidCIDR(p.Index(i), c)...)
	}
	if len(cidrs) == 2 && len(errs) == 0 {
		a, b := netip.MustParsePrefix(cidrs[0]), netip.MustParsePrefix(cidrs[1])
		if a.Addr().Is4() == b.Addr().Is4() {
			errs = append(errs, field.Invalid(p, cidrs, "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"))
		}
	}
	return errs
}

// validateServiceCIDRUpdate: the ranges are immutable, except that a
// single-stack ServiceCIDR may gain a range of the other family.
func validateServiceCIDRUpdate(obj, old runtime.Object) field.ErrorList {
	cur, prev := obj.(*networkingv1.ServiceCIDR).Spec.CIDRs, old.(*networkingv1.ServiceCIDR).Spec.CIDRs
	p := field.NewPath("spec", "cidrs")
	switch {
	case len(cur) == len(prev):
		var errs field.ErrorList
		for i := range prev {
			if cur[i] != prev[i] {
				errs = append(errs, field.Invalid(p.Index(i), cur[i], apimachineryvalidation.FieldImmutableErrorMsg))
			}
		}
		return errs
	case len(prev) == 1 && len(cur) == 2:
		var errs field.ErrorList
		if cur[0] != prev[0] {
			errs = append(errs, field.Invalid(p.Index(0), cur[0], apimachineryvalidation.FieldImmutableErrorMsg))
		}
		return append(errs, validateServiceCIDRs(cur, p)...)
	}
	return field.ErrorList{field.Invalid(p, cur, apimachineryvalidation.FieldImmutableErrorMsg)}
}
