package bootstrap

import (
	rbacv1 "k8s.io/api/rbac/v1"
)

// controller is one controller's permissions. Its ClusterRole is
// system:controller:<name>, bound to the kube-system ServiceAccount <name>
// the controller manager runs that controller as.
type controller struct {
	name  string
	rules []ruleBuilder
}

// controllers lists upstream's controllers in upstream's order, with the
// rules they have under 1.37's default feature gates.
func controllers() []controller {
	return []controller{
		{"attachdetach-controller", []ruleBuilder{
			rule("list", "watch").groups(coreGroup).resources("persistentvolumes", "persistentvolumeclaims"),
			rule(read...).groups(coreGroup).resources("nodes"),
			rule("patch", "update").groups(coreGroup).resources("nodes/status"),
			rule("list", "watch").groups(coreGroup).resources("pods"),
			eventsRule(),
			rule("get", "create", "delete", "list", "watch").groups(storageGroup).resources("volumeattachments"),
			rule(read...).groups(storageGroup).resources("csidrivers"),
			rule(read...).groups(storageGroup).resources("csinodes"),
		}},
		// Writes any rules into aggregated ClusterRoles, so needs escalate.
		{"clusterrole-aggregation-controller", []ruleBuilder{
			rule("escalate", "get", "list", "watch", "update", "patch").groups(rbacGroup).resources("clusterroles"),
		}},
		{"cronjob-controller", []ruleBuilder{
			rule("get", "list", "watch", "update").groups(batchGroup).resources("cronjobs"),
			rule("get", "list", "watch", "create", "update", "delete", "patch").groups(batchGroup).resources("jobs"),
			rule("update").groups(batchGroup).resources("cronjobs/status"),
			rule("update").groups(batchGroup).resources("cronjobs/finalizers"),
			rule("list", "watch", "delete").groups(coreGroup).resources("pods"),
			eventsRule(),
		}},
		{"daemon-set-controller", []ruleBuilder{
			rule(read...).groups(extensionsGroup, appsGroup).resources("daemonsets"),
			rule("update").groups(extensionsGroup, appsGroup).resources("daemonsets/status"),
			rule("update").groups(extensionsGroup, appsGroup).resources("daemonsets/finalizers"),
			rule("list", "watch").groups(coreGroup).resources("nodes"),
			rule("list", "watch", "create", "delete", "patch").groups(coreGroup).resources("pods"),
			rule("create").groups(coreGroup).resources("pods/binding"),
			rule("get", "list", "watch", "create", "delete", "update", "patch").groups(appsGroup).resources("controllerrevisions"),
			eventsRule(),
		}},
		{"deployment-controller", []ruleBuilder{
			rule("get", "list", "watch", "update").groups(extensionsGroup, appsGroup).resources("deployments"),
			rule("update").groups(extensionsGroup, appsGroup).resources("deployments/status"),
			rule("update").groups(extensionsGroup, appsGroup).resources("deployments/finalizers"),
			rule("get", "list", "watch", "create", "update", "patch", "delete").groups(appsGroup, extensionsGroup).resources("replicasets"),
			rule("get", "list", "watch", "update").groups(coreGroup).resources("pods"),
			eventsRule(),
		}},
		{"disruption-controller", []ruleBuilder{
			rule(read...).groups(extensionsGroup, appsGroup).resources("deployments"),
			rule(read...).groups(appsGroup, extensionsGroup).resources("replicasets"),
			rule(read...).groups(coreGroup).resources("replicationcontrollers"),
			rule(read...).groups(policyGroup).resources("poddisruptionbudgets"),
			rule(read...).groups(appsGroup).resources("statefulsets"),
			rule("update").groups(policyGroup).resources("poddisruptionbudgets/status"),
			rule("patch", "update").groups(coreGroup).resources("pods/status"),
			rule("get").groups("*").resources("*/scale"),
			eventsRule(),
		}},
		{"endpoint-controller", []ruleBuilder{
			rule(read...).groups(coreGroup).resources("services", "pods"),
			rule("get", "list", "watch", "create", "update", "delete").groups(coreGroup).resources("endpoints"),
			rule("create").groups(coreGroup).resources("endpoints/restricted"),
			eventsRule(),
		}},
		{"endpointslice-controller", []ruleBuilder{
			rule(read...).groups(coreGroup).resources("services", "pods", "nodes"),
			// Owner references with blockOwnerDeletion to the Service.
			rule("update").groups(coreGroup).resources("services/finalizers"),
			rule("get", "list", "watch", "create", "update", "delete").groups(discoveryGroup).resources("endpointslices"),
			eventsRule(),
		}},
		{"endpointslicemirroring-controller", []ruleBuilder{
			rule(read...).groups(coreGroup).resources("services", "endpoints"),
			rule("update").groups(coreGroup).resources("services/finalizers"),
			rule("update").groups(coreGroup).resources("endpoints/finalizers"),
			rule("get", "list", "watch", "create", "update", "delete").groups(discoveryGroup).resources("endpointslices"),
			eventsRule(),
		}},
		{"expand-controller", []ruleBuilder{
			rule("get", "list", "watch", "update", "patch").groups(coreGroup).resources("persistentvolumes"),
			rule("update", "patch").groups(coreGroup).resources("persistentvolumeclaims/status"),
			rule(read...).groups(coreGroup).resources("persistentvolumeclaims"),
			eventsRule(),
		}},
		{"ephemeral-volume-controller", []ruleBuilder{
			rule(read...).groups(coreGroup).resources("pods"),
			rule("update").groups(coreGroup).resources("pods/finalizers"),
			rule("get", "list", "watch", "create").groups(coreGroup).resources("persistentvolumeclaims"),
			eventsRule(),
		}},
		{"resource-claim-controller", []ruleBuilder{
			rule(read...).groups(coreGroup).resources("pods"),
			rule("update").groups(coreGroup).resources("pods/finalizers"),
			rule("get", "list", "watch", "create", "delete").groups(resourceGroup).resources("resourceclaims"),
			rule("update", "patch").groups(resourceGroup).resources("resourceclaims", "resourceclaims/status"),
			rule("update", "patch").groups(coreGroup).resources("pods/status"),
			eventsRule(),
			rule("update", "patch").groups(resourceGroup).resources("resourceclaims/binding"),
		}},
		// Evicts pods from tainted devices.
		{"device-taint-eviction-controller", []ruleBuilder{
			rule("get", "list", "watch", "delete").groups(coreGroup).resources("pods"),
			rule("update", "patch").groups(coreGroup).resources("pods/status"),
			rule(read...).groups(resourceGroup).resources("resourceclaims"),
			rule(read...).groups(resourceGroup).resources("resourceslices"),
			rule(read...).groups(resourceGroup).resources("deviceclasses"),
			eventsRule(),
			rule("update", "patch").groups(resourceGroup).resources("devicetaintrules/status"),
			rule(read...).groups(resourceGroup).resources("devicetaintrules"),
		}},
		{"generic-garbage-collector", []ruleBuilder{
			rule("get", "list", "watch", "patch", "update", "delete").groups("*").resources("*"),
			eventsRule(),
		}},
		{"horizontal-pod-autoscaler", []ruleBuilder{
			rule(read...).groups(autoscalingGroup).resources("horizontalpodautoscalers"),
			rule("update").groups(autoscalingGroup).resources("horizontalpodautoscalers/status"),
			rule("get", "update").groups("*").resources("*/scale"),
			rule("list", "watch").groups(coreGroup).resources("pods"),
			rule("list", "watch").groups(metricsGroup).resources("pods"),
			rule(read...).groups(customMetricsGroup).resources("*"),
			rule(read...).groups(externalMetricsGroup).resources("*"),
			eventsRule(),
		}},
		{"job-controller", []ruleBuilder{
			rule("get", "list", "watch", "update", "patch").groups(batchGroup).resources("jobs"),
			rule("update").groups(batchGroup).resources("jobs/status"),
			rule("update").groups(batchGroup).resources("jobs/finalizers"),
			rule("list", "watch", "create", "delete", "patch").groups(coreGroup).resources("pods"),
			eventsRule(),
		}},
		{"namespace-controller", []ruleBuilder{
			rule("get", "list", "watch", "delete").groups(coreGroup).resources("namespaces"),
			rule("update").groups(coreGroup).resources("namespaces/finalize", "namespaces/status"),
			rule("get", "list", "watch", "delete", "deletecollection").groups("*").resources("*"),
		}},
		{"node-controller", []ruleBuilder{
			rule("get", "list", "watch", "update", "delete", "patch").groups(coreGroup).resources("nodes"),
			rule("patch", "update").groups(coreGroup).resources("nodes/status"),
			rule("patch", "update").groups(coreGroup).resources("pods/status"),
			rule("list", "watch", "get", "delete").groups(coreGroup).resources("pods"),
			rule(read...).groups(coordinationGroup).resources("leases"),
			eventsRule(),
		}},
		{"persistent-volume-binder", []ruleBuilder{
			rule("get", "list", "watch", "update", "create", "delete").groups(coreGroup).resources("persistentvolumes"),
			rule("update").groups(coreGroup).resources("persistentvolumes/status"),
			rule("get", "list", "watch", "update").groups(coreGroup).resources("persistentvolumeclaims"),
			rule("update").groups(coreGroup).resources("persistentvolumeclaims/status"),
			rule("list", "watch", "get", "create", "delete").groups(coreGroup).resources("pods"),
			rule(read...).groups(storageGroup).resources("storageclasses"),
			rule("list", "watch").groups(coreGroup).resources("nodes"),
			eventsRule(),
			// The recycler watches its pod's events.
			rule("watch").groups(coreGroup).resources("events"),
		}},
		{"pod-garbage-collector", []ruleBuilder{
			rule("list", "watch", "delete").groups(coreGroup).resources("pods"),
			rule(read...).groups(coreGroup).resources("nodes"),
			rule("patch").groups(coreGroup).resources("pods/status"),
		}},
		{"replicaset-controller", []ruleBuilder{
			rule("get", "list", "watch", "update").groups(appsGroup, extensionsGroup).resources("replicasets"),
			rule("update").groups(appsGroup, extensionsGroup).resources("replicasets/status"),
			rule("update").groups(appsGroup, extensionsGroup).resources("replicasets/finalizers"),
			rule("list", "watch", "patch", "create", "delete").groups(coreGroup).resources("pods"),
			eventsRule(),
		}},
		{"replication-controller", []ruleBuilder{
			rule("get", "list", "watch", "update").groups(coreGroup).resources("replicationcontrollers"),
			rule("update").groups(coreGroup).resources("replicationcontrollers/status"),
			rule("update").groups(coreGroup).resources("replicationcontrollers/finalizers"),
			rule("list", "watch", "patch", "create", "delete").groups(coreGroup).resources("pods"),
			eventsRule(),
		}},
		// Counts anything quota may cover.
		{"resourcequota-controller", []ruleBuilder{
			rule("list", "watch").groups("*").resources("*"),
			rule("update").groups(coreGroup).resources("resourcequotas/status"),
			eventsRule(),
		}},
		{"route-controller", []ruleBuilder{
			rule("list", "watch").groups(coreGroup).resources("nodes"),
			rule("patch").groups(coreGroup).resources("nodes/status"),
			eventsRule(),
		}},
		{"service-account-controller", []ruleBuilder{
			rule("create").groups(coreGroup).resources("serviceaccounts"),
			eventsRule(),
		}},
		{"service-controller", []ruleBuilder{
			rule(read...).groups(coreGroup).resources("services"),
			rule("patch", "update").groups(coreGroup).resources("services/status"),
			rule("list", "watch").groups(coreGroup).resources("nodes"),
			eventsRule(),
		}},
		{"service-cidrs-controller", []ruleBuilder{
			rule("get", "list", "watch", "patch", "update").groups(networkingGroup).resources("servicecidrs"),
			rule("patch", "update").groups(networkingGroup).resources("servicecidrs/finalizers"),
			rule("patch", "update").groups(networkingGroup).resources("servicecidrs/status"),
			rule(read...).groups(networkingGroup).resources("ipaddresses"),
			eventsRule(),
		}},
		{"statefulset-controller", []ruleBuilder{
			rule("list", "watch").groups(coreGroup).resources("pods"),
			rule(read...).groups(appsGroup).resources("statefulsets"),
			rule("update").groups(appsGroup).resources("statefulsets/status"),
			rule("update").groups(appsGroup).resources("statefulsets/finalizers"),
			rule("get", "create", "delete", "update", "patch").groups(coreGroup).resources("pods"),
			rule("get", "create", "delete", "update", "patch", "list", "watch").groups(appsGroup).resources("controllerrevisions"),
			rule("get", "create", "list", "watch").groups(coreGroup).resources("persistentvolumeclaims"),
			rule("update", "delete").groups(coreGroup).resources("persistentvolumeclaims"),
			rule("update").groups(coreGroup).resources("pods/finalizers"),
			eventsRule(),
		}},
		{"ttl-controller", []ruleBuilder{
			rule("update", "patch", "list", "watch").groups(coreGroup).resources("nodes"),
			eventsRule(),
		}},
		{"certificate-controller", []ruleBuilder{
			rule("get", "list", "watch", "delete").groups(certificatesGroup).resources("certificatesigningrequests"),
			rule("update").groups(certificatesGroup).resources("certificatesigningrequests/status", "certificatesigningrequests/approval"),
			// Upstream's approver approves node client requests only;
			// plainkube's decides node serving requests too.
			rule("approve").groups(certificatesGroup).resources("signers").names(
				"kubernetes.io/kube-apiserver-client-kubelet",
				"kubernetes.io/kubelet-serving",
			),
			rule("sign").groups(certificatesGroup).resources("signers").names(
				"kubernetes.io/legacy-unknown",
				"kubernetes.io/kube-apiserver-client",
				"kubernetes.io/kube-apiserver-client-kubelet",
				"kubernetes.io/kubelet-serving",
			),
			rule("create").groups(authorizationGroup).resources("subjectaccessreviews"),
			eventsRule(),
		}},
		{"podcertificaterequestcleaner", []ruleBuilder{
			rule("get", "list", "watch", "delete").groups(certificatesGroup).resources("podcertificaterequests"),
		}},
		{"pvc-protection-controller", []ruleBuilder{
			rule("get", "list", "watch", "update").groups(coreGroup).resources("persistentvolumeclaims"),
			rule("update").groups(coreGroup).resources("persistentvolumeclaims/status"),
			rule(read...).groups(coreGroup).resources("pods"),
			eventsRule(),
		}},
		{"pv-protection-controller", []ruleBuilder{
			rule("get", "list", "watch", "update").groups(coreGroup).resources("persistentvolumes"),
			eventsRule(),
		}},
		{"volumeattributesclass-protection-controller", []ruleBuilder{
			rule(read...).groups(coreGroup).resources("persistentvolumeclaims"),
			rule(read...).groups(coreGroup).resources("persistentvolumes"),
			rule("get", "list", "watch", "update").groups(storageGroup).resources("volumeattributesclasses"),
			eventsRule(),
		}},
		{"ttl-after-finished-controller", []ruleBuilder{
			rule("get", "list", "watch", "delete").groups(batchGroup).resources("jobs"),
			eventsRule(),
		}},
		// Publishes kube-root-ca.crt into every namespace.
		{"root-ca-cert-publisher", []ruleBuilder{
			rule("create", "update").groups(coreGroup).resources("configmaps"),
			eventsRule(),
		}},
		{"kube-apiserver-serving-clustertrustbundle-publisher", []ruleBuilder{
			rule("attest").groups(certificatesGroup).resources("signers").names("kubernetes.io/kube-apiserver-serving"),
			rule("create", "update", "delete", "list", "watch").groups(certificatesGroup).resources("clustertrustbundles"),
			eventsRule(),
		}},
		{"validatingadmissionpolicy-status-controller", []ruleBuilder{
			rule(read...).groups(admissionGroup).resources("validatingadmissionpolicies"),
			rule("get", "patch", "update").groups(admissionGroup).resources("validatingadmissionpolicies/status"),
			eventsRule(),
		}},
		{"legacy-service-account-token-cleaner", []ruleBuilder{
			rule("get").groups(coreGroup).resources("configmaps").names("kube-apiserver-legacy-service-account-token-tracking"),
			rule("patch", "delete").groups(coreGroup).resources("secrets"),
		}},
		{"storage-version-migrator-controller", []ruleBuilder{
			// list for any resource's current resourceVersion, patch to rewrite it.
			rule("list", "patch").groups("*").resources("*"),
			rule("get").groups(apiextensionsGroup).resources("customresourcedefinitions"),
			rule("patch").groups(apiextensionsGroup).resources("customresourcedefinitions/status"),
			rule("update").groups(storageMigrationGroup).resources("storageversionmigrations/status"),
		}},
		{"selinux-warning-controller", []ruleBuilder{
			eventsRule(),
			rule(read...).groups(coreGroup).resources("persistentvolumes"),
			rule(read...).groups(coreGroup).resources("persistentvolumeclaims"),
			rule(read...).groups(coreGroup).resources("pods"),
			rule(read...).groups(storageGroup).resources("csidrivers"),
		}},
	}
}

func controllerRoles() []rbacv1.ClusterRole {
	var out []rbacv1.ClusterRole
	for _, c := range controllers() {
		out = append(out, clusterRole(controllerPrefix+c.name, c.rules...))
	}
	return out
}

func controllerRoleBindings() []rbacv1.ClusterRoleBinding {
	var out []rbacv1.ClusterRoleBinding
	for _, c := range controllers() {
		out = append(out, clusterRoleBinding(controllerPrefix+c.name, serviceAccountSubject(kubeSystem, c.name)))
	}
	return out
}
