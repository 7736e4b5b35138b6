package networking

import (
	networkingv1 "k8s.io/api/networking/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

const maxLenIngressClassController = 250

func ingressClasses() registry.Resource {
	return registry.Resource{
		Kind:             networkingv1.SchemeGroupVersion.WithKind("IngressClass"),
		Plural:           "ingressclasses",
		Singular:         "ingressclass",
		TracksGeneration: true,
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) {
				ic := obj.(*networkingv1.IngressClass)
				if ic.Spec.Parameters != nil && ic.Spec.Parameters.Scope == nil {
					s := networkingv1.IngressClassParametersReferenceScopeCluster
					ic.Spec.Parameters.Scope = &s
				}
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateIngressClassSpec(&obj.(*networkingv1.IngressClass).Spec, field.NewPath("spec"))
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return apivalidation.ValidateImmutableField(obj.(*networkingv1.IngressClass).Spec.Controller,
					old.(*networkingv1.IngressClass).Spec.Controller, field.NewPath("spec", "controller"))
			},
		},
	}
}

var parameterScopes = []string{networkingv1.IngressClassParametersReferenceScopeCluster, networkingv1.IngressClassParametersReferenceScopeNamespace}

func validateIngressClassSpec(spec *networkingv1.IngressClassSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	cp := p.Child("controller")
	if len(spec.Controller) > maxLenIngressClassController {
		errs = append(errs, field.TooLong(cp, "", maxLenIngressClassController))
	}
	errs = append(errs, validation.IsDomainPrefixedPath(cp, spec.Controller)...)
	params := spec.Parameters
	if params == nil {
		return errs
	}
	pp := p.Child("parameters")
	if params.APIGroup != nil {
		for _, msg := range validation.IsDNS1123Subdomain(*params.APIGroup) {
			errs = append(errs, field.Invalid(pp.Child("apiGroup"), *params.APIGroup, msg))
		}
	}
	errs = append(errs, requiredPathSegment(params.Kind, pp.Child("kind"), "kind is required")...)
	errs = append(errs, requiredPathSegment(params.Name, pp.Child("name"), "name is required")...)
	if params.Scope == nil {
		return append(errs, field.Required(pp.Child("scope"), ""))
	}
	switch *params.Scope {
	case networkingv1.IngressClassParametersReferenceScopeNamespace:
		if params.Namespace == nil {
			errs = append(errs, field.Required(pp.Child("namespace"), "`parameters.scope` is set to 'Namespace'"))
		} else {
			for _, msg := range apivalidation.ValidateNamespaceName(*params.Namespace, false) {
				errs = append(errs, field.Invalid(pp.Child("namespace"), *params.Namespace, msg))
			}
		}
	case networkingv1.IngressClassParametersReferenceScopeCluster:
		if params.Namespace != nil {
			errs = append(errs, field.Forbidden(pp.Child("namespace"), "`parameters.scope` is set to 'Cluster'"))
		}
	default:
		errs = append(errs, field.NotSupported(pp.Child("scope"), *params.Scope, parameterScopes))
	}
	return errs
}
