package networking

import (
	"context"
	"fmt"
	"net"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

// annotationIngressClass is the pre-ingressClassName way to pick a class.
const annotationIngressClass = "kubernetes.io/ingress.class"

func ingresses() registry.Resource {
	return registry.Resource{
		Kind:             networkingv1.SchemeGroupVersion.WithKind("Ingress"),
		Plural:           "ingresses",
		Singular:         "ingress",
		ShortNames:       []string{"ing"},
		Namespaced:       true,
		Subresources:     []string{"status"},
		TracksGeneration: true,
		Strategy: registry.Strategy{
			PrepareForCreate: func(_ context.Context, obj runtime.Object) {
				obj.(*networkingv1.Ingress).Status = networkingv1.IngressStatus{}
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				ing := obj.(*networkingv1.Ingress)
				errs := validateIngressSpec(&ing.Spec, field.NewPath("spec"))
				if v, ok := ing.Annotations[annotationIngressClass]; ok && ing.Spec.IngressClassName != nil && v != *ing.Spec.IngressClassName {
					errs = append(errs, field.Invalid(field.NewPath("annotations").Child(annotationIngressClass), v, "must match `ingressClassName` when both are specified"))
				}
				return errs
			},
			ValidateStatusUpdate: func(obj, old runtime.Object) field.ErrorList {
				ing, o := obj.(*networkingv1.Ingress), old.(*networkingv1.Ingress)
				return validateLoadBalancerStatus(&ing.Status.LoadBalancer, &o.Status.LoadBalancer, field.NewPath("status", "loadBalancer"))
			},
		},
	}
}

var (
	supportedPathTypes   = []string{string(networkingv1.PathTypeExact), string(networkingv1.PathTypeImplementationSpecific), string(networkingv1.PathTypePrefix)}
	invalidPathSequences = []string{"//", "/./", "/../", "%2f", "%2F"}
	invalidPathSuffixes  = []string{"/..", "/."}
)

func validateIngressSpec(spec *networkingv1.IngressSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(spec.Rules) == 0 && spec.DefaultBackend == nil {
		errs = append(errs, field.Invalid(p, spec.Rules, "either `defaultBackend` or `rules` must be specified"))
	}
	if spec.DefaultBackend != nil {
		errs = append(errs, validateIngressBackend(spec.DefaultBackend, p.Child("defaultBackend"))...)
	}
	for i := range spec.Rules {
		errs = append(errs, validateIngressRule(&spec.Rules[i], p.Child("rules").Index(i))...)
	}
	for i, tls := range spec.TLS {
		tp := p.Child("tls").Index(i)
		for j, host := range tls.Hosts {
			errs = append(errs, validateHost(host, tp.Child("hosts").Index(j))...)
		}
		if tls.SecretName != "" {
			for _, msg := range apivalidation.NameIsDNSSubdomain(tls.SecretName, false) {
				errs = append(errs, field.Invalid(tp.Child("secretName"), tls.SecretName, msg))
			}
		}
	}
	if spec.IngressClassName != nil {
		for _, msg := range apivalidation.NameIsDNSSubdomain(*spec.IngressClassName, false) {
			errs = append(errs, field.Invalid(p.Child("ingressClassName"), *spec.IngressClassName, msg))
		}
	}
	return errs
}

// validateHost checks a TLS host: a DNS subdomain, or a wildcard one.
func validateHost(host string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	msgs := validation.IsDNS1123Subdomain(host)
	if strings.Contains(host, "*") {
		msgs = validation.IsWildcardDNS1123Subdomain(host)
	}
	for _, msg := range msgs {
		errs = append(errs, field.Invalid(p, host, msg))
	}
	return errs
}

func validateIngressRule(rule *networkingv1.IngressRule, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if rule.Host != "" {
		hp := p.Child("host")
		if net.ParseIP(rule.Host) != nil {
			errs = append(errs, field.Invalid(hp, rule.Host, "must be a DNS name, not an IP address"))
		}
		errs = append(errs, validateHost(rule.Host, hp)...)
	}
	if rule.HTTP != nil {
		hp := p.Child("http")
		if len(rule.HTTP.Paths) == 0 {
			errs = append(errs, field.Required(hp.Child("paths"), ""))
		}
		for i := range rule.HTTP.Paths {
			errs = append(errs, validateHTTPPath(&rule.HTTP.Paths[i], hp.Child("paths").Index(i))...)
		}
	}
	return errs
}

func validateHTTPPath(hp *networkingv1.HTTPIngressPath, p *field.Path) field.ErrorList {
	if hp.PathType == nil {
		return field.ErrorList{field.Required(p.Child("pathType"), "pathType must be specified")}
	}
	var errs field.ErrorList
	pp := p.Child("path")
	switch *hp.PathType {
	case networkingv1.PathTypeExact, networkingv1.PathTypePrefix:
		if !strings.HasPrefix(hp.Path, "/") {
			errs = append(errs, field.Invalid(pp, hp.Path, "must be an absolute path"))
		}
		if hp.Path != "" {
			for _, seq := range invalidPathSequences {
				if strings.Contains(hp.Path, seq) {
					errs = append(errs, field.Invalid(pp, hp.Path, fmt.Sprintf("must not contain '%s'", seq)))
				}
			}
			for _, suf := range invalidPathSuffixes {
				if strings.HasSuffix(hp.Path, suf) {
					errs = append(errs, field.Invalid(pp, hp.Path, fmt.Sprintf("cannot end with '%s'", suf)))
				}
			}
		}
	case networkingv1.PathTypeImplementationSpecific:
		if hp.Path != "" && !strings.HasPrefix(hp.Path, "/") {
			errs = append(errs, field.Invalid(pp, hp.Path, "must be an absolute path"))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("pathType"), *hp.PathType, supportedPathTypes))
	}
	return append(errs, validateIngressBackend(&hp.Backend, p.Child("backend"))...)
}

func validateIngressBackend(b *networkingv1.IngressBackend, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case b.Resource != nil && b.Service != nil:
		return field.ErrorList{field.Invalid(p, "", "cannot set both resource and service backends")}
	case b.Resource != nil:
		r := b.Resource
		rp := p.Child("resource")
		if r.APIGroup != nil {
			for _, msg := range validation.IsDNS1123Subdomain(*r.APIGroup) {
				errs = append(errs, field.Invalid(rp.Child("apiGroup"), *r.APIGroup, msg))
			}
		}
		errs = append(errs, requiredPathSegment(r.Kind, rp.Child("kind"), "kind is required")...)
		errs = append(errs, requiredPathSegment(r.Name, rp.Child("name"), "name is required")...)
	case b.Service != nil:
		s := b.Service
		sp := p.Child("service")
		if s.Name == "" {
			errs = append(errs, field.Required(sp.Child("name"), ""))
		} else {
			// Service names are DNS-1035 labels.
			for _, msg := range apivalidation.NameIsDNS1035Label(s.Name, false) {
				errs = append(errs, field.Invalid(sp.Child("name"), s.Name, msg))
			}
		}
		hasName, hasNumber := s.Port.Name != "", s.Port.Number != 0
		switch {
		case hasName && hasNumber:
			errs = append(errs, field.Invalid(p, "", "cannot set both port name & port number"))
		case hasName:
			for _, msg := range validation.IsValidPortName(s.Port.Name) {
				errs = append(errs, field.Invalid(sp.Child("port", "name"), s.Port.Name, msg))
			}
		case hasNumber:
			for _, msg := range validation.IsValidPortNum(int(s.Port.Number)) {
				errs = append(errs, field.Invalid(sp.Child("port", "number"), s.Port.Number, msg))
			}
		default:
			errs = append(errs, field.Required(p, "port name or number is required"))
		}
	default:
		errs = append(errs, field.Invalid(p, "", "resource or service backend is required"))
	}
	return errs
}

func requiredPathSegment(v string, p *field.Path, requiredMsg string) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(p, requiredMsg)}
	}
	var errs field.ErrorList
	for _, msg := range path.IsValidPathSegmentName(v) {
		errs = append(errs, field.Invalid(p, v, msg))
	}
	return errs
}

func validateLoadBalancerStatus(s, old *networkingv1.IngressLoadBalancerStatus, p *field.Path) field.ErrorList {
	var oldIPs []string
	for _, in := range old.Ingress {
		if in.IP != "" {
			oldIPs = append(oldIPs, in.IP)
		}
	}
	var errs field.ErrorList
	for i, in := range s.Ingress {
		ip := p.Child("ingress").Index(i)
		if in.IP != "" {
			errs = append(errs, validation.IsValidIPForLegacyField(ip.Child("ip"), in.IP, false, oldIPs)...)
		}
		if in.Hostname != "" {
			for _, msg := range validation.IsDNS1123Subdomain(in.Hostname) {
				errs = append(errs, field.Invalid(ip.Child("hostname"), in.Hostname, msg))
			}
			if net.ParseIP(in.Hostname) != nil {
				errs = append(errs, field.Invalid(ip.Child("hostname"), in.Hostname, "must be a DNS name, not an IP address"))
			}
		}
	}
	return errs
}
