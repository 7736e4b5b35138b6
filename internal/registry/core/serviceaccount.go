package core

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"

	"plainkube.dev/plainkube/internal/registry"
)

func serviceAccounts() registry.Resource {
	return registry.Resource{
		Kind:         corev1.SchemeGroupVersion.WithKind("ServiceAccount"),
		Plural:       "serviceaccounts",
		Singular:     "serviceaccount",
		ShortNames:   []string{"sa"},
		Namespaced:   true,
		Subresources: []string{"token"},
		// Service accounts have no defaults and nothing to validate beyond
		// their metadata.
		Strategy: registry.Strategy{
			ValidateName: apivalidation.ValidateServiceAccountName,
			Validate:     validated(nil),
		},
	}
}
