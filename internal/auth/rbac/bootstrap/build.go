package bootstrap

import (
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// API groups the policy names.
const (
	coreGroup             = ""
	admissionGroup        = "admissionregistration.k8s.io"
	apiextensionsGroup    = "apiextensions.k8s.io"
	appsGroup             = "apps"
	authenticationGroup   = "authentication.k8s.io"
	authorizationGroup    = "authorization.k8s.io"
	autoscalingGroup      = "autoscaling"
	batchGroup            = "batch"
	certificatesGroup     = "certificates.k8s.io"
	coordinationGroup     = "coordination.k8s.io"
	customMetricsGroup    = "custom.metrics.k8s.io"
	discoveryGroup        = "discovery.k8s.io"
	eventsGroup           = "events.k8s.io"
	extensionsGroup       = "extensions"
	externalMetricsGroup  = "external.metrics.k8s.io"
	metricsGroup          = "metrics.k8s.io"
	networkingGroup       = "networking.k8s.io"
	nodeGroup             = "node.k8s.io"
	policyGroup           = "policy"
	rbacGroup             = rbacv1.GroupName
	resourceGroup         = "resource.k8s.io"
	storageGroup          = "storage.k8s.io"
	storageMigrationGroup = "storagemigration.k8s.io"
)

// Well-known users and groups the default bindings name.
const (
	groupMasters         = "system:masters"
	groupMonitoring      = "system:monitoring"
	groupAuthenticated   = "system:authenticated"
	groupUnauthenticated = "system:unauthenticated"
	groupServiceAccounts = "system:serviceaccounts"

	userKubeProxy             = "system:kube-proxy"
	userKubeControllerManager = "system:kube-controller-manager"
	userKubeScheduler         = "system:kube-scheduler"
)

// Verb sets.
var (
	read       = []string{"get", "list", "watch"}
	write      = []string{"create", "update", "patch", "delete", "deletecollection"}
	readWrite  = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
	readUpdate = []string{"get", "list", "watch", "update", "patch"}
)

// Metadata every default object carries.
const (
	// BootstrappingLabel marks an object as part of the default policy.
	BootstrappingLabel = "kubernetes.io/bootstrapping"
	// BootstrappingValue is BootstrappingLabel's value.
	BootstrappingValue = "rbac-defaults"
	// AutoUpdateAnnotation, when "false" on an existing object, stops
	// reconciliation from changing it.
	AutoUpdateAnnotation = rbacv1.AutoUpdateAnnotationKey
)

// Aggregation labels: a ClusterRole carrying one has its rules folded into
// admin, edit or view.
const (
	aggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
	aggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	aggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"
)

// controllerPrefix starts the name of every per-controller ClusterRole; the
// rest of the name is the controller's kube-system ServiceAccount.
const controllerPrefix = "system:controller:"

// ruleBuilder writes one PolicyRule in a line:
//
//	rule("get", "list").groups(coreGroup).resources("pods")
type ruleBuilder struct{ r rbacv1.PolicyRule }

func rule(verbs ...string) ruleBuilder {
	return ruleBuilder{rbacv1.PolicyRule{Verbs: verbs}}
}

func (b ruleBuilder) groups(g ...string) ruleBuilder    { b.r.APIGroups = g; return b }
func (b ruleBuilder) resources(r ...string) ruleBuilder { b.r.Resources = r; return b }
func (b ruleBuilder) names(n ...string) ruleBuilder     { b.r.ResourceNames = n; return b }
func (b ruleBuilder) urls(u ...string) ruleBuilder      { b.r.NonResourceURLs = u; return b }

// build checks the rule's shape and sorts each of its lists, as upstream's
// rule builder does, so the stored objects read exactly like upstream's.
func (b ruleBuilder) build() rbacv1.PolicyRule {
	r := b.r
	switch {
	case len(r.Verbs) == 0:
		panic(fmt.Sprintf("bootstrap policy: rule without verbs: %+v", r))
	case len(r.NonResourceURLs) > 0 && (len(r.APIGroups) > 0 || len(r.Resources) > 0 || len(r.ResourceNames) > 0):
		panic(fmt.Sprintf("bootstrap policy: non-resource rule with resources: %+v", r))
	case len(r.NonResourceURLs) == 0 && (len(r.Resources) == 0 || len(r.APIGroups) == 0):
		panic(fmt.Sprintf("bootstrap policy: resource rule without resources or groups: %+v", r))
	}
	return rbacv1.PolicyRule{
		Verbs:           sorted(r.Verbs),
		APIGroups:       sorted(r.APIGroups),
		Resources:       sorted(r.Resources),
		ResourceNames:   sorted(r.ResourceNames),
		NonResourceURLs: sorted(r.NonResourceURLs),
	}
}

func sorted(s []string) []string {
	if s == nil {
		return nil
	}
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

func rules(bs ...ruleBuilder) []rbacv1.PolicyRule {
	out := make([]rbacv1.PolicyRule, 0, len(bs))
	for _, b := range bs {
		out = append(out, b.build())
	}
	return out
}

// eventsRule lets a component record events through either events API.
func eventsRule() ruleBuilder {
	return rule("create", "update", "patch").groups(coreGroup, eventsGroup).resources("events")
}

// defaultMeta is the metadata of a default object: its name, and upstream's
// bootstrapping label and autoupdate annotation added to extra labels.
func defaultMeta(name string, labels ...string) metav1.ObjectMeta {
	l := map[string]string{BootstrappingLabel: BootstrappingValue}
	for i := 0; i+1 < len(labels); i += 2 {
		l[labels[i]] = labels[i+1]
	}
	return metav1.ObjectMeta{
		Name:        name,
		Labels:      l,
		Annotations: map[string]string{AutoUpdateAnnotation: "true"},
	}
}

func clusterRole(name string, rs ...ruleBuilder) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{ObjectMeta: defaultMeta(name), Rules: rules(rs...)}
}

// aggregatedClusterRole is a ClusterRole whose rules the aggregation
// controller fills from the ClusterRoles labelled selector=true.
func aggregatedClusterRole(meta metav1.ObjectMeta, selector string) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{
		ObjectMeta: meta,
		AggregationRule: &rbacv1.AggregationRule{
			ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{selector: "true"}}},
		},
	}
}

func groupSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: name}
}

func userSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: name}
}

func serviceAccountSubject(namespace, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}
}

// clusterRoleBinding binds the ClusterRole of the same name.
func clusterRoleBinding(roleName string, subjects ...rbacv1.Subject) rbacv1.ClusterRoleBinding {
	return rbacv1.ClusterRoleBinding{
		ObjectMeta: defaultMeta(roleName),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: roleName},
		Subjects:   subjects,
	}
}

func namespacedRole(namespace, name string, rs ...ruleBuilder) rbacv1.Role {
	meta := defaultMeta(name)
	meta.Namespace = namespace
	return rbacv1.Role{ObjectMeta: meta, Rules: rules(rs...)}
}

// namespacedRoleBinding binds the Role roleName of its namespace.
func namespacedRoleBinding(namespace, name, roleName string, subjects ...rbacv1.Subject) rbacv1.RoleBinding {
	meta := defaultMeta(name)
	meta.Namespace = namespace
	return rbacv1.RoleBinding{
		ObjectMeta: meta,
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: roleName},
		Subjects:   subjects,
	}
}
