package bootstrap

import (
	rbacv1 "k8s.io/api/rbac/v1"
)

// Plainkube's own additions to the default policy, for what upstream has
// no component for. Their names start with "plainkube:" so that the
// upstream names stay upstream's alone; the API server reconciles them
// with the rest at every start.

// ServiceLBServiceAccount is the kube-system ServiceAccount plainkube's
// ServiceLB controller runs as.
const ServiceLBServiceAccount = "service-lb-controller"

// LocalPathServiceAccount is the kube-system ServiceAccount plainkube's
// local-path provisioner runs as.
const LocalPathServiceAccount = "local-path-provisioner"

// HelmControllerServiceAccount is the kube-system ServiceAccount the helm
// controller runs as: bound to cluster-admin, since a chart may hold any
// object (as k3s's helm-controller and Flux's helm-controller are).
const HelmControllerServiceAccount = "helm-controller"

const (
	plainkubeControllerPrefix = "plainkube:controller:"
	nodeProxier               = "plainkube:node-proxier"
	nodeDNS                   = "plainkube:node-dns"
	nodeNetwork               = "plainkube:node-network"
	nodeNetworkPolicy         = "plainkube:node-network-policy"
	groupNodes                = "system:nodes"
)

// Plainkube returns plainkube's additions:
//
//   - the ServiceLB controller's role (upstream's cloud service
//     controller's rules: it reads Services and Nodes and writes Service
//     status), bound to its ServiceAccount;
//   - the local-path provisioner's role: it reads claims, StorageClasses
//     and Nodes, creates PersistentVolumes, updates those whose node is
//     gone (to remove their cleanup finalizer), and updates a claim whose
//     selected node is gone (to give it back to the scheduler);
//   - the helm controller's ServiceAccount is bound to cluster-admin;
//   - a plainkube node runs its service proxy and its DNS answerer under
//     the node's own credentials, so system:nodes are bound to
//     plainkube:node-proxier (what kube-proxy's system:node-proxier holds,
//     but Nodes, which the next role gives) and to plainkube:node-dns:
//     read Services and EndpointSlices, and keep the kube-dns
//     EndpointSlice of the node's answerer in kube-system;
//   - its pod network, also under the node's credentials, reads every
//     Node (their pod ranges, addresses and VXLAN endpoints, as flannel's
//     role does), and the proxy shares that informer: system:nodes are
//     bound to plainkube:node-network, list and watch of Nodes. A node
//     writes only its own (the Node authorizer and NodeRestriction);
//   - and its NetworkPolicy enforcer under them too, bound to
//     plainkube:node-network-policy: list and watch NetworkPolicies,
//     Namespaces and every Pod (a policy's peers are pods of any node; a
//     node's own Pod reads are narrowed by the Node authorizer, which has
//     no opinion on these, as upstream's policy agents read all pods).
func Plainkube() Policy {
	serviceLB := plainkubeControllerPrefix + ServiceLBServiceAccount
	localPath := plainkubeControllerPrefix + LocalPathServiceAccount
	return Policy{
		ClusterRoles: []rbacv1.ClusterRole{
			clusterRole(serviceLB,
				rule(read...).groups(coreGroup).resources("services"),
				rule("patch", "update").groups(coreGroup).resources("services/status"),
				rule("list", "watch").groups(coreGroup).resources("nodes"),
				eventsRule(),
			),
			clusterRole(localPath,
				rule(read...).groups(coreGroup).resources("persistentvolumeclaims"),
				// to give a claim whose node is gone back to the scheduler
				rule("update").groups(coreGroup).resources("persistentvolumeclaims"),
				rule("get", "list", "watch", "create", "update").groups(coreGroup).resources("persistentvolumes"),
				rule(read...).groups(storageGroup).resources("storageclasses"),
				rule("get", "list", "watch").groups(coreGroup).resources("nodes"),
				eventsRule(),
			),
			clusterRole(nodeProxier,
				rule("list", "watch").groups(coreGroup).resources("services", "endpoints"),
				rule("list", "watch").groups(discoveryGroup).resources("endpointslices"),
				rule("list", "watch").groups(networkingGroup).resources("servicecidrs"),
			),
			clusterRole(nodeDNS,
				rule("list", "watch").groups(coreGroup).resources("services"),
				rule("list", "watch").groups(discoveryGroup).resources("endpointslices"),
			),
			clusterRole(nodeNetwork,
				rule("list", "watch").groups(coreGroup).resources("nodes"),
			),
			clusterRole(nodeNetworkPolicy,
				rule("list", "watch").groups(networkingGroup).resources("networkpolicies"),
				rule("list", "watch").groups(coreGroup).resources("pods", "namespaces"),
			),
		},
		ClusterRoleBindings: []rbacv1.ClusterRoleBinding{
			clusterRoleBinding(serviceLB, serviceAccountSubject(kubeSystem, ServiceLBServiceAccount)),
			clusterRoleBinding(localPath, serviceAccountSubject(kubeSystem, LocalPathServiceAccount)),
			{
				ObjectMeta: defaultMeta(plainkubeControllerPrefix + HelmControllerServiceAccount),
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
				Subjects:   []rbacv1.Subject{serviceAccountSubject(kubeSystem, HelmControllerServiceAccount)},
			},
			clusterRoleBinding(nodeDNS, groupSubject(groupNodes)),
			clusterRoleBinding(nodeProxier, groupSubject(groupNodes)),
			clusterRoleBinding(nodeNetwork, groupSubject(groupNodes)),
			clusterRoleBinding(nodeNetworkPolicy, groupSubject(groupNodes)),
		},
		Roles: []rbacv1.Role{
			namespacedRole(kubeSystem, nodeDNS,
				rule("get", "create", "update", "delete").groups(discoveryGroup).resources("endpointslices")),
		},
		RoleBindings: []rbacv1.RoleBinding{
			namespacedRoleBinding(kubeSystem, nodeDNS, nodeDNS, groupSubject(groupNodes)),
		},
	}
}
