package bootstrap

import (
	"sort"

	rbacv1 "k8s.io/api/rbac/v1"
)

// Policy is a set of RBAC objects: the default policy (Default), or what a
// cluster holds. Roles and RoleBindings carry their Namespace.
type Policy struct {
	ClusterRoles        []rbacv1.ClusterRole
	ClusterRoleBindings []rbacv1.ClusterRoleBinding
	Roles               []rbacv1.Role
	RoleBindings        []rbacv1.RoleBinding
}

// Default returns the whole default policy, namespaced objects in namespace
// order.
func Default() Policy {
	p := Policy{
		ClusterRoles:        ClusterRoles(),
		ClusterRoleBindings: ClusterRoleBindings(),
	}
	roles, bindings := NamespaceRoles(), NamespaceRoleBindings()
	for _, ns := range sortedKeys(roles) {
		p.Roles = append(p.Roles, roles[ns]...)
	}
	for _, ns := range sortedKeys(bindings) {
		p.RoleBindings = append(p.RoleBindings, bindings[ns]...)
	}
	return p
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
