package reviews

import (
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/registry"
)

// Resources lists the review resources.
func Resources() []registry.Resource {
	review := func(group, kind, plural string, namespaced bool, newObject func() runtime.Object) registry.Resource {
		gvk := schema.GroupVersionKind{Group: group, Version: "v1", Kind: kind}
		return registry.Resource{
			Kind:   gvk,
			Plural: plural, Singular: strings.ToLower(kind), Namespaced: namespaced,
			Verbs: []string{"create"}, Ephemeral: true,
			Handler: &registry.Handler{Serve: func(rq *registry.Request) error { return serve(rq, gvk, newObject) }},
		}
	}
	return []registry.Resource{
		review("authorization.k8s.io", "SelfSubjectAccessReview", "selfsubjectaccessreviews", false,
			func() runtime.Object { return &authorizationv1.SelfSubjectAccessReview{} }),
		review("authorization.k8s.io", "SelfSubjectRulesReview", "selfsubjectrulesreviews", false,
			func() runtime.Object { return &authorizationv1.SelfSubjectRulesReview{} }),
		review("authorization.k8s.io", "SubjectAccessReview", "subjectaccessreviews", false,
			func() runtime.Object { return &authorizationv1.SubjectAccessReview{} }),
		review("authorization.k8s.io", "LocalSubjectAccessReview", "localsubjectaccessreviews", true,
			func() runtime.Object { return &authorizationv1.LocalSubjectAccessReview{} }),
		review("authentication.k8s.io", "TokenReview", "tokenreviews", false,
			func() runtime.Object { return &authenticationv1.TokenReview{} }),
		review("authentication.k8s.io", "SelfSubjectReview", "selfsubjectreviews", false,
			func() runtime.Object { return &authenticationv1.SelfSubjectReview{} }),
	}
}
