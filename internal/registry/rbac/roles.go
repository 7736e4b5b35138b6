package rbac

import (
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

func roles() registry.Resource {
	return registry.Resource{
		Kind:       rbacv1.SchemeGroupVersion.WithKind("Role"),
		Plural:     "roles",
		Singular:   "role",
		Namespaced: true,
		Strategy: registry.Strategy{
			ValidateName: rbacName,
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateRules(obj.(*rbacv1.Role).Rules, true)
			},
		},
	}
}
