package core

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

func endpoints() registry.Resource {
	return registry.Resource{
		Kind:       corev1.SchemeGroupVersion.WithKind("Endpoints"),
		Plural:     "endpoints",
		Singular:   "endpoints",
		ShortNames: []string{"ep"},
		Namespaced: true,
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) {
				ep := obj.(*corev1.Endpoints)
				for i := range ep.Subsets {
					for j := range ep.Subsets[i].Ports {
						if ep.Subsets[i].Ports[j].Protocol == "" {
							ep.Subsets[i].Ports[j].Protocol = corev1.ProtocolTCP
						}
					}
				}
			},
			Validate: validated(func(obj runtime.Object) field.ErrorList {
				return validateEndpointSubsets(obj.(*corev1.Endpoints).Subsets, field.NewPath("subsets"))
			}),
		},
	}
}

func validateEndpointSubsets(subsets []corev1.EndpointSubset, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range subsets {
		ss := &subsets[i]
		p := fldPath.Index(i)
		// Headless services' endpoints may have no ports, but every subset
		// needs an address.
		if len(ss.Addresses) == 0 && len(ss.NotReadyAddresses) == 0 {
			errs = append(errs, field.Required(p, "must specify `addresses` or `notReadyAddresses`"))
		}
		for j := range ss.Addresses {
			errs = append(errs, validateEndpointAddress(&ss.Addresses[j], p.Child("addresses").Index(j))...)
		}
		for j := range ss.NotReadyAddresses {
			errs = append(errs, validateEndpointAddress(&ss.NotReadyAddresses[j], p.Child("notReadyAddresses").Index(j))...)
		}
		for j := range ss.Ports {
			errs = append(errs, validateEndpointPort(&ss.Ports[j], len(ss.Ports) > 1, p.Child("ports").Index(j))...)
		}
	}
	return errs
}

func validateEndpointAddress(a *corev1.EndpointAddress, fldPath *field.Path) field.ErrorList {
	errs := validation.IsValidIP(fldPath.Child("ip"), a.IP)
	if a.Hostname != "" {
		errs = append(errs, validateDNS1123Label(a.Hostname, fldPath.Child("hostname"))...)
	}
	if a.NodeName != nil {
		errs = append(errs, validateNameWith(apivalidation.NameIsDNSSubdomain, *a.NodeName, fldPath.Child("nodeName"))...)
	}
	return append(errs, validateNonSpecialIP(a.IP, fldPath.Child("ip"))...)
}

func validateEndpointPort(port *corev1.EndpointPort, requireName bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if requireName && port.Name == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), ""))
	} else if port.Name != "" {
		errs = append(errs, validateDNS1123Label(port.Name, fldPath.Child("name"))...)
	}
	for _, msg := range validation.IsValidPortNum(int(port.Port)) {
		errs = append(errs, field.Invalid(fldPath.Child("port"), port.Port, msg))
	}
	if port.Protocol == "" {
		errs = append(errs, field.Required(fldPath.Child("protocol"), ""))
	} else if !contains(supportedPortProtocols, port.Protocol) {
		errs = append(errs, field.NotSupported(fldPath.Child("protocol"), port.Protocol, supportedPortProtocols))
	}
	if port.AppProtocol != nil {
		errs = append(errs, validateQualifiedName(*port.AppProtocol, fldPath.Child("appProtocol"))...)
	}
	return errs
}
