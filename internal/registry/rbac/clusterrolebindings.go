package rbac

import (
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

func clusterRoleBindings() registry.Resource {
	return registry.Resource{
		Kind:     rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"),
		Plural:   "clusterrolebindings",
		Singular: "clusterrolebinding",
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) {
				crb := obj.(*rbacv1.ClusterRoleBinding)
				defaultBinding(&crb.RoleRef, crb.Subjects)
			},
			ValidateName: rbacName,
			Validate: func(obj runtime.Object) field.ErrorList {
				crb := obj.(*rbacv1.ClusterRoleBinding)
				return validateBinding(&crb.RoleRef, crb.Subjects, false, []string{"ClusterRole"})
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return immutableRoleRef(obj.(*rbacv1.ClusterRoleBinding).RoleRef, old.(*rbacv1.ClusterRoleBinding).RoleRef)
			},
		},
	}
}
