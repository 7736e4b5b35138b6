package apiregistration

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"plainkube.dev/plainkube/internal/registry"
)

func apiServices() registry.Resource {
	return registry.Resource{
		Kind:         apiregistrationv1.SchemeGroupVersion.WithKind("APIService"),
		Plural:       "apiservices",
		Singular:     "apiservice",
		Categories:   []string{"api-extensions"},
		Subresources: []string{"status"},
		Strategy: registry.Strategy{
			// As upstream's defaulting: a Service is reached on 443.
			Default: func(obj runtime.Object) {
				if svc := obj.(*apiregistrationv1.APIService).Spec.Service; svc != nil && svc.Port == nil {
					port := int32(443)
					svc.Port = &port
				}
			},
			// The name is checked with the spec (Validate): it must be
			// spec.version+"."+spec.group.
			ValidateName: func(name string, _ bool) []string { return path.IsValidPathSegmentName(name) },
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateAPIService(obj.(*apiregistrationv1.APIService))
			},
			ValidateUpdate: func(obj, _ runtime.Object) field.ErrorList {
				return validateAPIService(obj.(*apiregistrationv1.APIService))
			},
			ValidateStatusUpdate: func(obj, _ runtime.Object) field.ErrorList {
				return validateStatus(&obj.(*apiregistrationv1.APIService).Status)
			},
		},
	}
}

// validateAPIService applies upstream's rules (kube-aggregator's
// ValidateAPIService), with its messages.
func validateAPIService(a *apiregistrationv1.APIService) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if required := a.Spec.Version + "." + a.Spec.Group; a.Name != required {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), a.Name, fmt.Sprintf("must be `spec.version+\".\"+spec.group`: %q", required)))
	}
	if a.Spec.Group == "" && a.Spec.Version != "v1" {
		errs = append(errs, field.Required(spec.Child("group"), "only v1 may have an empty group and it better be legacy kube"))
	}
	if a.Spec.Group != "" {
		for _, msg := range validation.IsDNS1123Subdomain(a.Spec.Group) {
			errs = append(errs, field.Invalid(spec.Child("group"), a.Spec.Group, msg))
		}
	}
	for _, msg := range validation.IsDNS1035Label(a.Spec.Version) {
		errs = append(errs, field.Invalid(spec.Child("version"), a.Spec.Version, msg))
	}
	if p := a.Spec.GroupPriorityMinimum; p <= 0 || p > 20000 {
		errs = append(errs, field.Invalid(spec.Child("groupPriorityMinimum"), p, "must be positive and less than 20000"))
	}
	if p := a.Spec.VersionPriority; p <= 0 || p > 1000 {
		errs = append(errs, field.Invalid(spec.Child("versionPriority"), p, "must be positive and less than 1000"))
	}
	svc := a.Spec.Service
	if svc == nil {
		if len(a.Spec.CABundle) != 0 {
			errs = append(errs, field.Invalid(spec.Child("caBundle"), fmt.Sprintf("%d bytes", len(a.Spec.CABundle)), "local APIServices may not have a caBundle"))
		}
		if a.Spec.InsecureSkipTLSVerify {
			errs = append(errs, field.Invalid(spec.Child("insecureSkipTLSVerify"), true, "local APIServices may not have insecureSkipTLSVerify"))
		}
		return errs
	}
	if svc.Namespace == "" {
		errs = append(errs, field.Required(spec.Child("service", "namespace"), ""))
	}
	if svc.Name == "" {
		errs = append(errs, field.Required(spec.Child("service", "name"), ""))
	}
	port := int32(0)
	if svc.Port != nil {
		port = *svc.Port
	}
	if msgs := validation.IsValidPortNum(int(port)); msgs != nil {
		errs = append(errs, field.Invalid(spec.Child("service", "port"), port, "port is not valid: "+strings.Join(msgs, ", ")))
	}
	if a.Spec.InsecureSkipTLSVerify && len(a.Spec.CABundle) > 0 {
		errs = append(errs, field.Invalid(spec.Child("insecureSkipTLSVerify"), true, "may not be true if caBundle is present"))
	}
	return errs
}

var conditionStatuses = []string{string(apiregistrationv1.ConditionTrue), string(apiregistrationv1.ConditionFalse), string(apiregistrationv1.ConditionUnknown)}

func validateStatus(s *apiregistrationv1.APIServiceStatus) field.ErrorList {
	var errs field.ErrorList
	for i, c := range s.Conditions {
		switch c.Status {
		case apiregistrationv1.ConditionTrue, apiregistrationv1.ConditionFalse, apiregistrationv1.ConditionUnknown:
		default:
			errs = append(errs, field.NotSupported(field.NewPath("status", "conditions").Index(i).Child("status"), c.Status, conditionStatuses))
		}
	}
	return errs
}
