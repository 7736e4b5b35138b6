package bootstrap

import (
	rbacv1 "k8s.io/api/rbac/v1"
)

// ClusterRoles returns the default ClusterRoles: the user-facing roles
// (cluster-admin, admin, edit, view and the parts aggregated into them), the
// roles of the control-plane components and nodes, and one
// system:controller:<name> role per controller. Each call returns fresh
// objects the caller may modify.
func ClusterRoles() []rbacv1.ClusterRole {
	return append(systemClusterRoles(), controllerRoles()...)
}

// ClusterRoleBindings returns the default ClusterRoleBindings: those of the
// system roles, then one per controller role to its kube-system
// ServiceAccount.
func ClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	return append(systemClusterRoleBindings(), controllerRoleBindings()...)
}

func systemClusterRoles() []rbacv1.ClusterRole {
	return []rbacv1.ClusterRole{
		// Anything at all.
		clusterRole("cluster-admin",
			rule("*").groups("*").resources("*"),
			rule("*").urls("*"),
		),
		// Enough to find out whether the server is up and which APIs it serves.
		clusterRole("system:discovery",
			rule("get").urls(
				"/livez", "/readyz", "/healthz",
				"/version", "/version/",
				"/openapi", "/openapi/*",
				"/api", "/api/*",
				"/apis", "/apis/*",
			),
		),
		// Metrics and the individual health checks, for monitoring agents.
		clusterRole("system:monitoring",
			rule("get").urls(
				"/metrics", "/metrics/slis",
				"/livez", "/readyz", "/healthz",
				"/livez/*", "/readyz/*", "/healthz/*",
				"/flagz", "/statusz",
			),
			rule("get").groups(coreGroup).resources("nodes/metrics"),
		),
		// What every user may ask about themselves.
		clusterRole("system:basic-user",
			rule("create").groups(authorizationGroup).resources("selfsubjectaccessreviews", "selfsubjectrulesreviews"),
			rule("create").groups(authenticationGroup).resources("selfsubjectreviews"),
		),
		// What even anonymous clients may read.
		clusterRole("system:public-info-viewer",
			rule("get").urls("/livez", "/readyz", "/healthz", "/version", "/version/"),
		),

		// admin ⊇ edit ⊇ view: each is the aggregate of the ClusterRoles
		// labelled for it, and edit and view are themselves labelled into the
		// next one up. The rules live in the system:aggregate-to-* parts.
		aggregatedClusterRole(defaultMeta("admin"), aggregateToAdmin),
		aggregatedClusterRole(defaultMeta("edit", aggregateToAdmin, "true"), aggregateToEdit),
		aggregatedClusterRole(defaultMeta("view", aggregateToEdit, "true"), aggregateToView),
		{
			ObjectMeta: defaultMeta("system:aggregate-to-admin", aggregateToAdmin, "true"),
			Rules: rules(
				rule("create").groups(authorizationGroup).resources("localsubjectaccessreviews"),
				rule(readWrite...).groups(rbacGroup).resources("roles", "rolebindings"),
			),
		},
		{
			ObjectMeta: defaultMeta("system:aggregate-to-edit", aggregateToEdit, "true"),
			Rules:      rules(editRules()...),
		},
		{
			ObjectMeta: defaultMeta("system:aggregate-to-view", aggregateToView, "true"),
			Rules:      rules(viewRules()...),
		},

		clusterRole("system:heapster",
			rule(read...).groups(coreGroup).resources("events", "pods", "nodes", "namespaces"),
			rule(read...).groups(extensionsGroup).resources("deployments"),
		),
		// Nodes. Upstream binds it to no one: the Node authorizer grants
		// nodes these permissions, narrowed to their own pods' objects.
		clusterRole("system:node", nodeRules()...),
		// Not bound by default: where node-problem-detector runs varies.
		clusterRole("system:node-problem-detector",
			rule("get").groups(coreGroup).resources("nodes"),
			rule("patch").groups(coreGroup).resources("nodes/status"),
			eventsRule(),
		),
		// A joining node's bootstrap credentials: ask for a client certificate
		// and watch for it.
		clusterRole("system:node-bootstrapper",
			rule("create", "get", "list", "watch").groups(certificatesGroup).resources("certificatesigningrequests"),
		),
		// Delegated authentication and authorization (extension API servers).
		clusterRole("system:auth-delegator",
			rule("create").groups(authenticationGroup).resources("tokenreviews"),
			rule("create").groups(authorizationGroup).resources("subjectaccessreviews"),
		),
		clusterRole("system:kube-aggregator",
			rule(read...).groups(coreGroup).resources("services", "endpoints"),
		),
		// The controller manager's own identity: leader election, minting the
		// per-controller ServiceAccount credentials, and its shared informers.
		clusterRole("system:kube-controller-manager",
			eventsRule(),
			rule("create").groups(coordinationGroup).resources("leases"),
			rule("get", "update").groups(coordinationGroup).resources("leases").names("kube-controller-manager"),
			rule("create").groups(coreGroup).resources("secrets", "serviceaccounts"),
			rule("delete").groups(coreGroup).resources("secrets"),
			rule("get").groups(coreGroup).resources("namespaces", "secrets", "serviceaccounts", "configmaps"),
			rule("update").groups(coreGroup).resources("secrets", "serviceaccounts"),
			rule("create").groups(authenticationGroup).resources("tokenreviews"),
			rule("create").groups(authorizationGroup).resources("subjectaccessreviews"),
			rule("list", "watch").groups("*").resources("*"),
			rule("create").groups(coreGroup).resources("serviceaccounts/token"),
		),
		clusterRole("system:kube-dns",
			rule("list", "watch").groups(coreGroup).resources("endpoints", "services"),
		),
		// An out-of-tree volume provisioner.
		clusterRole("system:persistent-volume-provisioner",
			rule("get", "list", "watch", "create", "delete").groups(coreGroup).resources("persistentvolumes"),
			rule("get", "list", "watch", "update").groups(coreGroup).resources("persistentvolumeclaims"),
			rule(read...).groups(storageGroup).resources("storageclasses"),
			rule("watch").groups(coreGroup).resources("events"),
			eventsRule(),
		),
		// Held by whoever may have node client CSRs approved: any node's, or
		// only a renewal of its own.
		clusterRole("system:certificates.k8s.io:certificatesigningrequests:nodeclient",
			rule("create").groups(certificatesGroup).resources("certificatesigningrequests/nodeclient"),
		),
		clusterRole("system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
			rule("create").groups(certificatesGroup).resources("certificatesigningrequests/selfnodeclient"),
		),
		clusterRole("system:volume-scheduler",
			rule(readUpdate...).groups(coreGroup).resources("persistentvolumes"),
			rule(read...).groups(storageGroup).resources("storageclasses"),
			rule(readUpdate...).groups(coreGroup).resources("persistentvolumeclaims"),
		),
		// Approval of CSRs, one role per built-in signer.
		signerApprover("system:certificates.k8s.io:legacy-unknown-approver", "kubernetes.io/legacy-unknown"),
		signerApprover("system:certificates.k8s.io:kubelet-serving-approver", "kubernetes.io/kubelet-serving"),
		signerApprover("system:certificates.k8s.io:kube-apiserver-client-approver", "kubernetes.io/kube-apiserver-client"),
		signerApprover("system:certificates.k8s.io:kube-apiserver-client-kubelet-approver", "kubernetes.io/kube-apiserver-client-kubelet"),
		// The service-account issuer's OIDC discovery documents (also with a
		// trailing slash, for clients generated from older OpenAPI).
		clusterRole("system:service-account-issuer-discovery",
			rule("get").urls(
				"/.well-known/openid-configuration", "/.well-known/openid-configuration/",
				"/openid/v1/jwks", "/openid/v1/jwks/",
			),
		),
		// Everything on the kubelet's API.
		clusterRole("system:kubelet-api-admin",
			rule(read...).groups(coreGroup).resources("nodes"),
			rule("proxy").groups(coreGroup).resources("nodes"),
			rule("*").groups(coreGroup).resources("nodes/proxy", "nodes/metrics", "nodes/stats", "nodes/log"),
			rule("*").groups(coreGroup).resources("nodes/pods", "nodes/healthz", "nodes/configz"),
		),
		// kube-proxy (and plainkube's service proxy).
		clusterRole("system:node-proxier",
			rule("list", "watch").groups(coreGroup).resources("services", "endpoints"),
			rule(read...).groups(coreGroup).resources("nodes"),
			eventsRule(),
			rule("list", "watch").groups(networkingGroup).resources("servicecidrs"),
			rule("list", "watch").groups(discoveryGroup).resources("endpointslices"),
		),
		clusterRole("system:kube-scheduler", schedulerRules()...),
		clusterRole("system:cluster-trust-bundle-discovery",
			rule(read...).groups(certificatesGroup).resources("clustertrustbundles"),
		),
	}
}

func signerApprover(name, signer string) rbacv1.ClusterRole {
	return clusterRole(name, rule("approve").groups(certificatesGroup).resources("signers").names(signer))
}

// viewRules: read-only access to a namespace's objects, except those that
// would escalate (Secrets, exec, proxies).
func viewRules() []ruleBuilder {
	return []ruleBuilder{
		rule(read...).groups(coreGroup).resources(
			"pods", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
			"services", "services/status", "endpoints",
			"persistentvolumeclaims", "persistentvolumeclaims/status", "configmaps"),
		rule(read...).groups(coreGroup).resources(
			"limitranges", "resourcequotas", "bindings",
			"pods/status", "resourcequotas/status", "namespaces/status", "replicationcontrollers/status", "pods/log"),
		// Reading a namespace through a namespaced binding reads that one
		// namespace: a way to learn which namespaces one may use.
		rule(read...).groups(coreGroup).resources("namespaces"),
		rule(read...).groups(coreGroup, eventsGroup).resources("events"),
		rule(read...).groups(discoveryGroup).resources("endpointslices"),
		rule(read...).groups(appsGroup).resources(
			"controllerrevisions",
			"statefulsets", "statefulsets/status", "statefulsets/scale",
			"daemonsets", "daemonsets/status",
			"deployments", "deployments/status", "deployments/scale",
			"replicasets", "replicasets/status", "replicasets/scale"),
		rule(read...).groups(autoscalingGroup).resources("horizontalpodautoscalers", "horizontalpodautoscalers/status"),
		rule(read...).groups(batchGroup).resources("jobs", "cronjobs", "cronjobs/status", "jobs/status"),
		rule(read...).groups(extensionsGroup).resources(
			"daemonsets", "daemonsets/status", "deployments", "deployments/scale", "deployments/status",
			"ingresses", "ingresses/status", "replicasets", "replicasets/scale", "replicasets/status",
			"replicationcontrollers/scale", "networkpolicies"),
		rule(read...).groups(policyGroup).resources("poddisruptionbudgets", "poddisruptionbudgets/status"),
		rule(read...).groups(networkingGroup).resources("networkpolicies", "ingresses", "ingresses/status"),
		rule(read...).groups(resourceGroup).resources("resourceclaims", "resourceclaims/status", "resourceclaimtemplates"),
	}
}

// editRules: everything a user does in a namespace, on top of view; not the
// namespace's controls (quota, limits, status) nor its RBAC.
func editRules() []ruleBuilder {
	return []ruleBuilder{
		// Reading the escalating resources view leaves out.
		rule(read...).groups(coreGroup).resources("pods/attach", "pods/proxy", "pods/exec", "pods/portforward", "secrets", "services/proxy"),
		rule("impersonate").groups(coreGroup).resources("serviceaccounts"),
		rule(write...).groups(coreGroup).resources("pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward"),
		rule("create").groups(coreGroup).resources("pods/eviction"),
		rule(write...).groups(coreGroup).resources(
			"replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
			"services", "services/proxy", "persistentvolumeclaims", "configmaps", "secrets"),
		rule("create").groups(coreGroup).resources("serviceaccounts/token"),
		rule(write...).groups(coreGroup, eventsGroup).resources("events"),
		rule(write...).groups(appsGroup).resources(
			"statefulsets", "statefulsets/scale",
			"daemonsets",
			"deployments", "deployments/scale", "deployments/rollback",
			"replicasets", "replicasets/scale"),
		rule(write...).groups(autoscalingGroup).resources("horizontalpodautoscalers"),
		rule(write...).groups(batchGroup).resources("jobs", "cronjobs"),
		rule(write...).groups(extensionsGroup).resources(
			"daemonsets", "deployments", "deployments/scale", "deployments/rollback", "ingresses",
			"replicasets", "replicasets/scale", "replicationcontrollers/scale", "networkpolicies"),
		rule(write...).groups(policyGroup).resources("poddisruptionbudgets"),
		rule(write...).groups(networkingGroup).resources("networkpolicies", "ingresses"),
		rule(readWrite...).groups(coordinationGroup).resources("leases"),
		rule(write...).groups(resourceGroup).resources("resourceclaims", "resourceclaimtemplates"),
	}
}

// nodeRules: what a kubelet needs. The Node authorizer and the
// NodeRestriction admission plugin narrow most of it to the node's own
// objects.
// NodeRules are the rules of upstream's system:node role, which the Node
// authorizer allows nodes beyond what its graph decides.
func NodeRules() []rbacv1.PolicyRule { return rules(nodeRules()...) }

func nodeRules() []ruleBuilder {
	return []ruleBuilder{
		rule("create").groups(authenticationGroup).resources("tokenreviews"),
		rule("create").groups(authorizationGroup).resources("subjectaccessreviews", "localsubjectaccessreviews"),
		// Service environment variables.
		rule(read...).groups(coreGroup).resources("services"),
		// Registering and updating its Node.
		rule("create", "get", "list", "watch").groups(coreGroup).resources("nodes"),
		rule("update", "patch").groups(coreGroup).resources("nodes/status"),
		rule("update", "patch").groups(coreGroup).resources("nodes"),
		rule("create", "update", "patch").groups(coreGroup, eventsGroup).resources("events"),
		// Its pods; mirror pods; their status; evictions.
		rule(read...).groups(coreGroup).resources("pods"),
		rule("create", "delete").groups(coreGroup).resources("pods"),
		rule("update", "patch").groups(coreGroup).resources("pods/status"),
		rule("create").groups(coreGroup).resources("pods/eviction"),
		// What its pods reference.
		rule("get", "list", "watch").groups(coreGroup).resources("secrets", "configmaps"),
		rule("get").groups(coreGroup).resources("persistentvolumeclaims", "persistentvolumes"),
		rule("get").groups(coreGroup).resources("endpoints"),
		// Rotating its client certificate.
		rule("create", "get", "list", "watch").groups(certificatesGroup).resources("certificatesigningrequests"),
		// Its heartbeat Lease.
		rule("get", "create", "update", "patch", "delete").groups(coordinationGroup).resources("leases"),
		rule("get").groups(storageGroup).resources("volumeattachments"),
		// Tokens for its pods' ServiceAccounts.
		rule("create").groups(coreGroup).resources("serviceaccounts/token"),
		rule("get", "update", "patch").groups(coreGroup).resources("persistentvolumeclaims/status"),
		// CSI.
		rule("get", "watch", "list").groups(storageGroup).resources("csidrivers"),
		rule("get", "create", "update", "patch", "delete").groups(storageGroup).resources("csinodes"),
		rule("get", "list", "watch").groups(nodeGroup).resources("runtimeclasses"),
		// Dynamic resource allocation.
		rule("get").groups(resourceGroup).resources("resourceclaims"),
		rule("deletecollection").groups(resourceGroup).resources("resourceslices"),
		// pemTrustAnchors volumes.
		rule("get", "list", "watch").groups(certificatesGroup).resources("clustertrustbundles"),
		// Service-account tokens for image credential providers.
		rule("get").groups(coreGroup).resources("serviceaccounts"),
		// podCertificate volumes.
		rule("get", "list", "watch", "create").groups(certificatesGroup).resources("podcertificaterequests"),
	}
}

func schedulerRules() []ruleBuilder {
	return []ruleBuilder{
		eventsRule(),
		// Leader election.
		rule("create").groups(coordinationGroup).resources("leases"),
		rule("get", "update", "list", "watch").groups(coordinationGroup).resources("leases").names("kube-scheduler"),
		rule(readWrite...).groups(coordinationGroup).resources("leasecandidates"),
		// Nodes, pods and binding.
		rule(read...).groups(coreGroup).resources("nodes"),
		rule("get", "list", "watch", "delete").groups(coreGroup).resources("pods"),
		rule("create").groups(coreGroup).resources("pods/binding", "bindings"),
		rule("patch", "update").groups(coreGroup).resources("pods/status"),
		// What selects pods.
		rule(read...).groups(coreGroup).resources("services", "replicationcontrollers"),
		rule(read...).groups(appsGroup, extensionsGroup).resources("replicasets"),
		rule(read...).groups(appsGroup).resources("statefulsets"),
		// What pods use, or what applies to them.
		rule(read...).groups(policyGroup).resources("poddisruptionbudgets"),
		rule(read...).groups(coreGroup).resources("persistentvolumeclaims", "persistentvolumes"),
		rule("create").groups(authenticationGroup).resources("tokenreviews"),
		rule("create").groups(authorizationGroup).resources("subjectaccessreviews"),
		rule(read...).groups(storageGroup).resources("csinodes"),
		rule("get", "list", "watch").groups(storageGroup).resources("volumeattachments"),
		rule(read...).groups(coreGroup).resources("namespaces"),
		rule(read...).groups(storageGroup).resources("csidrivers"),
		rule(read...).groups(storageGroup).resources("csistoragecapacities"),
		// Dynamic resource allocation.
		rule(read...).groups(resourceGroup).resources("deviceclasses"),
		rule(readUpdate...).groups(resourceGroup).resources("resourceclaims"),
		rule(readUpdate...).groups(resourceGroup).resources("resourceclaims/status"),
		rule("update").groups(coreGroup).resources("pods/finalizers"),
		rule(read...).groups(resourceGroup).resources("resourceslices"),
		rule("create", "delete").groups(resourceGroup).resources("resourceclaims"),
		rule(read...).groups(resourceGroup).resources("devicetaintrules"),
		rule("update", "patch").groups(resourceGroup).resources("resourceclaims/binding"),
	}
}

func systemClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	// system:node is bound to no one: upstream left the binding (deprecated
	// since 1.7, when the Node authorizer came) with no subjects so that
	// reconciliation could take system:nodes out of it.
	node := clusterRoleBinding("system:node")
	return []rbacv1.ClusterRoleBinding{
		clusterRoleBinding("cluster-admin", groupSubject(groupMasters)),
		clusterRoleBinding("system:monitoring", groupSubject(groupMonitoring)),
		clusterRoleBinding("system:discovery", groupSubject(groupAuthenticated)),
		clusterRoleBinding("system:basic-user", groupSubject(groupAuthenticated)),
		clusterRoleBinding("system:public-info-viewer", groupSubject(groupAuthenticated), groupSubject(groupUnauthenticated)),
		clusterRoleBinding("system:node-proxier", userSubject(userKubeProxy)),
		clusterRoleBinding("system:kube-controller-manager", userSubject(userKubeControllerManager)),
		clusterRoleBinding("system:kube-dns", serviceAccountSubject(kubeSystem, "kube-dns")),
		clusterRoleBinding("system:kube-scheduler", userSubject(userKubeScheduler)),
		clusterRoleBinding("system:volume-scheduler", userSubject(userKubeScheduler)),
		node,
		clusterRoleBinding("system:service-account-issuer-discovery", groupSubject(groupServiceAccounts)),
		clusterRoleBinding("system:cluster-trust-bundle-discovery", groupSubject(groupServiceAccounts)),
	}
}
