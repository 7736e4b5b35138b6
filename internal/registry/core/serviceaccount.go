package core

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"

	"plainkube.dev/plainkube/internal/registry"
	"plainkube.dev/plainkube/internal/registry/core/subresources"
)

func serviceAccounts() registry.Resource {
	return registry.Resource{
		Kind:                corev1.SchemeGroupVersion.WithKind("ServiceAccount"),
		Plural:              "serviceaccounts",
		ReturnDeletedObject: true,
		Singular:            "serviceaccount",
		ShortNames:          []string{"sa"},
		Namespaced:          true,
		Subresources:        []string{"token"},
		Handlers:            map[string]registry.Handler{"token": subresources.Token},
		// Service accounts have no defaults and nothing to validate beyond
		// their metadata.
		Strategy: registry.Strategy{
			ValidateName: apivalidation.ValidateServiceAccountName,
			Validate:     validated(nil),
		},
	}
}
