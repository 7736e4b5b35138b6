package discovery

import (
	"context"
	"fmt"
	"net"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

const (
	maxTopologyLabels = 16
	maxAddresses      = 100
	maxPorts          = 100
	maxEndpoints      = 1000
	maxHints          = 8
)

func endpointSlices() registry.Resource {
	return registry.Resource{
		Kind:             discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"),
		Plural:           "endpointslices",
		Singular:         "endpointslice",
		Namespaced:       true,
		TracksGeneration: true,
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) {
				eps := obj.(*discoveryv1.EndpointSlice)
				for i := range eps.Ports {
					if eps.Ports[i].Name == nil {
						eps.Ports[i].Name = new(string)
					}
					if eps.Ports[i].Protocol == nil {
						tcp := corev1.ProtocolTCP
						eps.Ports[i].Protocol = &tcp
					}
				}
			},
			PrepareForCreate: func(_ context.Context, obj runtime.Object) {
				clearDeprecatedTopology(obj.(*discoveryv1.EndpointSlice))
			},
			PrepareForUpdate: func(_ context.Context, obj, old runtime.Object) {
				eps, o := obj.(*discoveryv1.EndpointSlice), old.(*discoveryv1.EndpointSlice)
				// Label changes count as changes of the slice too.
				if !equality.Semantic.DeepEqual(eps.Labels, o.Labels) {
					eps.Generation = o.Generation + 1
				}
				if !equality.Semantic.DeepEqual(eps.Endpoints, o.Endpoints) {
					clearDeprecatedTopology(eps)
				}
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateEndpointSlice(obj.(*discoveryv1.EndpointSlice))
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return apivalidation.ValidateImmutableField(obj.(*discoveryv1.EndpointSlice).AddressType,
					old.(*discoveryv1.EndpointSlice).AddressType, field.NewPath("addressType"))
			},
		},
	}
}

// clearDeprecatedTopology drops the v1beta1-era topology map, which v1
// writes may not set.
func clearDeprecatedTopology(eps *discoveryv1.EndpointSlice) {
	for i := range eps.Endpoints {
		eps.Endpoints[i].DeprecatedTopology = nil
	}
}

var addressTypes = []string{string(discoveryv1.AddressTypeFQDN), string(discoveryv1.AddressTypeIPv4), string(discoveryv1.AddressTypeIPv6)}

var portProtocols = []string{string(corev1.ProtocolSCTP), string(corev1.ProtocolTCP), string(corev1.ProtocolUDP)}

func validateEndpointSlice(eps *discoveryv1.EndpointSlice) field.ErrorList {
	var errs field.ErrorList
	ap := field.NewPath("addressType")
	switch eps.AddressType {
	case "":
		errs = append(errs, field.Required(ap, ""))
	case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeFQDN:
	default:
		errs = append(errs, field.NotSupported(ap, eps.AddressType, addressTypes))
	}
	errs = append(errs, validateEndpoints(eps.Endpoints, eps.AddressType, field.NewPath("endpoints"))...)
	errs = append(errs, validatePorts(eps.Ports, field.NewPath("ports"))...)
	return errs
}

func validateEndpoints(eps []discoveryv1.Endpoint, addrType discoveryv1.AddressType, p *field.Path) field.ErrorList {
	if len(eps) > maxEndpoints {
		return field.ErrorList{field.TooMany(p, len(eps), maxEndpoints)}
	}
	var errs field.ErrorList
	for i := range eps {
		ep := &eps[i]
		ip := p.Index(i)
		addrPath := ip.Child("addresses")
		if len(ep.Addresses) == 0 {
			errs = append(errs, field.Required(addrPath, "must contain at least 1 address"))
		} else if len(ep.Addresses) > maxAddresses {
			errs = append(errs, field.TooMany(addrPath, len(ep.Addresses), maxAddresses))
		}
		for j, addr := range ep.Addresses {
			errs = append(errs, validateAddress(addr, addrType, addrPath.Index(j))...)
		}
		tp := ip.Child("deprecatedTopology")
		if len(ep.DeprecatedTopology) > maxTopologyLabels {
			errs = append(errs, field.TooMany(tp, len(ep.DeprecatedTopology), maxTopologyLabels))
		}
		errs = append(errs, metav1validation.ValidateLabels(ep.DeprecatedTopology, tp)...)
		if ep.Hostname != nil {
			for _, msg := range validation.IsDNS1123Label(*ep.Hostname) {
				errs = append(errs, field.Invalid(ip.Child("hostname"), *ep.Hostname, msg))
			}
		}
		if ep.NodeName != nil {
			for _, msg := range apivalidation.NameIsDNSSubdomain(*ep.NodeName, false) {
				errs = append(errs, field.Invalid(ip.Child("nodeName"), *ep.NodeName, msg))
			}
		}
		if ep.Hints != nil {
			errs = append(errs, validateHints(ep.Hints, ip.Child("hints"))...)
		}
	}
	return errs
}

// validateAddress checks one address of the slice's type; unknown types
// are not checked (the addressType error covers them).
func validateAddress(addr string, t discoveryv1.AddressType, p *field.Path) field.ErrorList {
	switch t {
	case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6:
		ip := net.ParseIP(addr)
		if t == discoveryv1.AddressTypeIPv4 && (ip == nil || ip.To4() == nil) {
			return field.ErrorList{field.Invalid(p, addr, "must be a valid IPv4 address")}
		}
		if t == discoveryv1.AddressTypeIPv6 && (ip == nil || ip.To4() != nil) {
			return field.ErrorList{field.Invalid(p, addr, "must be a valid IPv6 address")}
		}
		return validateNonSpecialIP(ip, addr, p)
	case discoveryv1.AddressTypeFQDN:
		return validation.IsFullyQualifiedDomainName(p, addr)
	}
	return nil
}

// validateNonSpecialIP rejects addresses no endpoint can have: unspecified,
// loopback and link-local ones.
func validateNonSpecialIP(ip net.IP, addr string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ip.IsUnspecified() {
		errs = append(errs, field.Invalid(p, addr, fmt.Sprintf("may not be unspecified (%v)", addr)))
	}
	if ip.IsLoopback() {
		errs = append(errs, field.Invalid(p, addr, "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
	}
	if ip.IsLinkLocalUnicast() {
		errs = append(errs, field.Invalid(p, addr, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
	}
	if ip.IsLinkLocalMulticast() {
		errs = append(errs, field.Invalid(p, addr, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"))
	}
	return errs
}

func validateHints(h *discoveryv1.EndpointHints, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	zp := p.Child("forZones")
	if len(h.ForZones) > maxHints {
		errs = append(errs, field.TooMany(zp, len(h.ForZones), maxHints))
		return errs
	}
	seen := map[string]bool{}
	for i, z := range h.ForZones {
		np := zp.Index(i).Child("name")
		if seen[z.Name] {
			errs = append(errs, field.Duplicate(np, z.Name))
		} else {
			seen[z.Name] = true
		}
		for _, msg := range validation.IsValidLabelValue(z.Name) {
			errs = append(errs, field.Invalid(np, z.Name, msg))
		}
	}
	return errs
}

func validatePorts(ports []discoveryv1.EndpointPort, p *field.Path) field.ErrorList {
	if len(ports) > maxPorts {
		return field.ErrorList{field.TooMany(p, len(ports), maxPorts)}
	}
	var errs field.ErrorList
	names := map[string]bool{}
	for i, port := range ports {
		ip := p.Index(i)
		name := ""
		if port.Name != nil {
			name = *port.Name
		}
		if name != "" {
			for _, msg := range validation.IsDNS1123Label(name) {
				errs = append(errs, field.Invalid(ip.Child("name"), name, msg))
			}
		}
		if names[name] {
			errs = append(errs, field.Duplicate(ip.Child("name"), name))
		} else {
			names[name] = true
		}
		switch {
		case port.Protocol == nil:
			errs = append(errs, field.Required(ip.Child("protocol"), ""))
		case *port.Protocol != corev1.ProtocolTCP && *port.Protocol != corev1.ProtocolUDP && *port.Protocol != corev1.ProtocolSCTP:
			errs = append(errs, field.NotSupported(ip.Child("protocol"), *port.Protocol, portProtocols))
		}
		if port.AppProtocol != nil {
			for _, msg := range validation.IsQualifiedName(*port.AppProtocol) {
				errs = append(errs, field.Invalid(ip.Child("appProtocol"), port.AppProtocol, msg))
			}
		}
	}
	return errs
}
