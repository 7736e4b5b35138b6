package rbac

import (
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

func roleBindings() registry.Resource {
	return registry.Resource{
		Kind:       rbacv1.SchemeGroupVersion.WithKind("RoleBinding"),
		Plural:     "rolebindings",
		Singular:   "rolebinding",
		Namespaced: true,
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) {
				rb := obj.(*rbacv1.RoleBinding)
				defaultBinding(&rb.RoleRef, rb.Subjects)
			},
			ValidateName: rbacName,
			Validate: func(obj runtime.Object) field.ErrorList {
				rb := obj.(*rbacv1.RoleBinding)
				return validateBinding(&rb.RoleRef, rb.Subjects, true, []string{"Role", "ClusterRole"})
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return immutableRoleRef(obj.(*rbacv1.RoleBinding).RoleRef, old.(*rbacv1.RoleBinding).RoleRef)
			},
		},
	}
}
