package reviews

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/registry"
)

// Resources lists the review resources.
func Resources() []registry.Resource {
	review := func(group, kind, plural string, namespaced bool) registry.Resource {
		return registry.Resource{
			Kind:   schema.GroupVersionKind{Group: group, Version: "v1", Kind: kind},
			Plural: plural, Singular: strings.ToLower(kind), Namespaced: namespaced,
			Verbs: []string{"create"}, Ephemeral: true,
		}
	}
	return []registry.Resource{
		review("authorization.k8s.io", "SelfSubjectAccessReview", "selfsubjectaccessreviews", false),
		review("authorization.k8s.io", "SelfSubjectRulesReview", "selfsubjectrulesreviews", false),
		review("authorization.k8s.io", "SubjectAccessReview", "subjectaccessreviews", false),
		review("authorization.k8s.io", "LocalSubjectAccessReview", "localsubjectaccessreviews", true),
		review("authentication.k8s.io", "TokenReview", "tokenreviews", false),
		review("authentication.k8s.io", "SelfSubjectReview", "selfsubjectreviews", false),
	}
}
