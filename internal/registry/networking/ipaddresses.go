package networking

import (
	networkingv1 "k8s.io/api/networking/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

// ipAddresses are allocated addresses, one object per address named by
// it in canonical form; the Service allocator writes one for each cluster
// IP it hands out, with the Service as parent.
func ipAddresses() registry.Resource {
	return registry.Resource{
		Kind:       networkingv1.SchemeGroupVersion.WithKind("IPAddress"),
		Plural:     "ipaddresses",
		Singular:   "ipaddress",
		ShortNames: []string{"ip"},
		Strategy: registry.Strategy{
			ValidateName: validateIPAddressName,
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateParentRef(obj.(*networkingv1.IPAddress).Spec.ParentRef, field.NewPath("spec", "parentRef"))
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return apivalidation.ValidateImmutableField(obj.(*networkingv1.IPAddress).Spec.ParentRef,
					old.(*networkingv1.IPAddress).Spec.ParentRef, field.NewPath("spec", "parentRef"))
			},
		},
	}
}

// validateIPAddressName: the name is an address in canonical form; names
// are never generated.
func validateIPAddressName(name string, _ bool) []string {
	var msgs []string
	for _, e := range validation.IsValidIP(&field.Path{}, name) {
		msgs = append(msgs, e.Detail)
	}
	return msgs
}

func validateParentRef(ref *networkingv1.ParentReference, p *field.Path) field.ErrorList {
	if ref == nil {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	// The core group, Services', is "": group cannot be required.
	if ref.Group != "" {
		for _, msg := range validation.IsDNS1123Subdomain(ref.Group) {
			errs = append(errs, field.Invalid(p.Child("group"), ref.Group, msg))
		}
	}
	segment := func(name, value string, required bool) {
		if value == "" {
			if required {
				errs = append(errs, field.Required(p.Child(name), ""))
			}
			return
		}
		for _, msg := range path.IsValidPathSegmentName(value) {
			errs = append(errs, field.Invalid(p.Child(name), value, msg))
		}
	}
	segment("resource", ref.Resource, true)
	segment("name", ref.Name, true)
	segment("namespace", ref.Namespace, false)
	return errs
}
