package bootstrap

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	kubeSystem = metav1.NamespaceSystem
	kubePublic = metav1.NamespacePublic
)

// NamespaceRoles returns the default Roles by namespace (kube-system and
// kube-public), each with its Namespace set.
func NamespaceRoles() map[string][]rbacv1.Role {
	leaderLocking := []ruleBuilder{
		rule("get", "watch", "list", "create", "update").groups(coordinationGroup).resources("leases"),
		rule("get", "watch", "list", "create", "update").groups(coordinationGroup).resources("leasecandidates"),
	}
	return map[string][]rbacv1.Role{
		kubeSystem: {
			// The ConfigMap with the client-CA and request-header settings an
			// extension API server needs to authenticate requests.
			namespacedRole(kubeSystem, "extension-apiserver-authentication-reader",
				rule(read...).groups(coreGroup).resources("configmaps").names("extension-apiserver-authentication"),
			),
			// Reads the bootstrap-token Secrets it signs cluster-info with.
			namespacedRole(kubeSystem, controllerPrefix+"bootstrap-signer",
				rule(read...).groups(coreGroup).resources("secrets"),
			),
			// Deprecated since 1.10; upstream still creates it.
			namespacedRole(kubeSystem, controllerPrefix+"cloud-provider",
				rule("create", "get", "list", "watch").groups(coreGroup).resources("configmaps"),
			),
			// Deletes expired bootstrap-token Secrets, in kube-system only.
			namespacedRole(kubeSystem, controllerPrefix+"token-cleaner",
				rule("get", "list", "watch", "delete").groups(coreGroup).resources("secrets"),
				eventsRule(),
			),
			// Leader election.
			namespacedRole(kubeSystem, "system::leader-locking-kube-controller-manager", leaderLocking...),
			namespacedRole(kubeSystem, "system::leader-locking-kube-scheduler", leaderLocking...),
		},
		kubePublic: {
			// Signs and updates the cluster-info ConfigMap.
			namespacedRole(kubePublic, controllerPrefix+"bootstrap-signer",
				rule(read...).groups(coreGroup).resources("configmaps"),
				rule("update").groups(coreGroup).resources("configmaps").names("cluster-info"),
				eventsRule(),
			),
		},
	}
}

// NamespaceRoleBindings returns the default RoleBindings by namespace
// (kube-system and kube-public), each with its Namespace set.
func NamespaceRoleBindings() map[string][]rbacv1.RoleBinding {
	return map[string][]rbacv1.RoleBinding{
		kubeSystem: {
			namespacedRoleBinding(kubeSystem, "system::extension-apiserver-authentication-reader", "extension-apiserver-authentication-reader",
				userSubject(userKubeControllerManager), userSubject(userKubeScheduler)),
			namespacedRoleBinding(kubeSystem, "system::leader-locking-kube-controller-manager", "system::leader-locking-kube-controller-manager",
				userSubject(userKubeControllerManager),
				serviceAccountSubject(kubeSystem, "kube-controller-manager"),
				serviceAccountSubject(kubeSystem, "leader-election-controller")),
			namespacedRoleBinding(kubeSystem, "system::leader-locking-kube-scheduler", "system::leader-locking-kube-scheduler",
				userSubject(userKubeScheduler),
				serviceAccountSubject(kubeSystem, "kube-scheduler")),
			controllerRoleBinding(kubeSystem, "bootstrap-signer"),
			controllerRoleBinding(kubeSystem, "cloud-provider"),
			controllerRoleBinding(kubeSystem, "token-cleaner"),
		},
		kubePublic: {
			controllerRoleBinding(kubePublic, "bootstrap-signer"),
		},
	}
}

// controllerRoleBinding binds the Role system:controller:<name> in namespace
// to the kube-system ServiceAccount <name>.
func controllerRoleBinding(namespace, name string) rbacv1.RoleBinding {
	return namespacedRoleBinding(namespace, controllerPrefix+name, controllerPrefix+name,
		serviceAccountSubject(kubeSystem, name))
}
