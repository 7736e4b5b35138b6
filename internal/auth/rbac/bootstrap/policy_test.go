package bootstrap

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// The names below are transcribed from upstream's golden files for
// Kubernetes 1.37 (k8s.io/kubernetes v1.37.2,
// plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata), which show the
// policy under the default feature gates.

// cluster-roles.yaml
var upstreamClusterRoles = []string{
	"admin",
	"cluster-admin",
	"edit",
	"system:aggregate-to-admin",
	"system:aggregate-to-edit",
	"system:aggregate-to-view",
	"system:auth-delegator",
	"system:basic-user",
	"system:certificates.k8s.io:certificatesigningrequests:nodeclient",
	"system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
	"system:certificates.k8s.io:kube-apiserver-client-approver",
	"system:certificates.k8s.io:kube-apiserver-client-kubelet-approver",
	"system:certificates.k8s.io:kubelet-serving-approver",
	"system:certificates.k8s.io:legacy-unknown-approver",
	"system:cluster-trust-bundle-discovery",
	"system:discovery",
	"system:heapster",
	"system:kube-aggregator",
	"system:kube-controller-manager",
	"system:kube-dns",
	"system:kube-scheduler",
	"system:kubelet-api-admin",
	"system:monitoring",
	"system:node",
	"system:node-bootstrapper",
	"system:node-problem-detector",
	"system:node-proxier",
	"system:persistent-volume-provisioner",
	"system:public-info-viewer",
	"system:service-account-issuer-discovery",
	"system:volume-scheduler",
	"view",
}

// controller-roles.yaml; controller-role-bindings.yaml names the same.
var upstreamControllerRoles = []string{
	"system:controller:attachdetach-controller",
	"system:controller:certificate-controller",
	"system:controller:clusterrole-aggregation-controller",
	"system:controller:cronjob-controller",
	"system:controller:daemon-set-controller",
	"system:controller:deployment-controller",
	"system:controller:device-taint-eviction-controller",
	"system:controller:disruption-controller",
	"system:controller:endpoint-controller",
	"system:controller:endpointslice-controller",
	"system:controller:endpointslicemirroring-controller",
	"system:controller:ephemeral-volume-controller",
	"system:controller:expand-controller",
	"system:controller:generic-garbage-collector",
	"system:controller:horizontal-pod-autoscaler",
	"system:controller:job-controller",
	"system:controller:kube-apiserver-serving-clustertrustbundle-publisher",
	"system:controller:legacy-service-account-token-cleaner",
	"system:controller:namespace-controller",
	"system:controller:node-controller",
	"system:controller:persistent-volume-binder",
	"system:controller:pod-garbage-collector",
	"system:controller:podcertificaterequestcleaner",
	"system:controller:pv-protection-controller",
	"system:controller:pvc-protection-controller",
	"system:controller:replicaset-controller",
	"system:controller:replication-controller",
	"system:controller:resource-claim-controller",
	"system:controller:resourcequota-controller",
	"system:controller:root-ca-cert-publisher",
	"system:controller:route-controller",
	"system:controller:selinux-warning-controller",
	"system:controller:service-account-controller",
	"system:controller:service-cidrs-controller",
	"system:controller:service-controller",
	"system:controller:statefulset-controller",
	"system:controller:storage-version-migrator-controller",
	"system:controller:ttl-after-finished-controller",
	"system:controller:ttl-controller",
	"system:controller:validatingadmissionpolicy-status-controller",
	"system:controller:volumeattributesclass-protection-controller",
}

// cluster-role-bindings.yaml
var upstreamClusterRoleBindings = []string{
	"cluster-admin",
	"system:basic-user",
	"system:cluster-trust-bundle-discovery",
	"system:discovery",
	"system:kube-controller-manager",
	"system:kube-dns",
	"system:kube-scheduler",
	"system:monitoring",
	"system:node",
	"system:node-proxier",
	"system:public-info-viewer",
	"system:service-account-issuer-discovery",
	"system:volume-scheduler",
}

// namespace-roles.yaml, as namespace/name
var upstreamRoles = []string{
	"kube-public/system:controller:bootstrap-signer",
	"kube-system/extension-apiserver-authentication-reader",
	"kube-system/system::leader-locking-kube-controller-manager",
	"kube-system/system::leader-locking-kube-scheduler",
	"kube-system/system:controller:bootstrap-signer",
	"kube-system/system:controller:cloud-provider",
	"kube-system/system:controller:token-cleaner",
}

// namespace-role-bindings.yaml, as namespace/name
var upstreamRoleBindings = []string{
	"kube-public/system:controller:bootstrap-signer",
	"kube-system/system::extension-apiserver-authentication-reader",
	"kube-system/system::leader-locking-kube-controller-manager",
	"kube-system/system::leader-locking-kube-scheduler",
	"kube-system/system:controller:bootstrap-signer",
	"kube-system/system:controller:cloud-provider",
	"kube-system/system:controller:token-cleaner",
}

// Rules of a few ClusterRoles in cluster-roles.yaml, in order, one line a
// rule (see ruleLine).
var upstreamRules = map[string][]string{
	"system:aggregate-to-admin": {
		`verbs=create groups=authorization.k8s.io resources=localsubjectaccessreviews`,
		`verbs=create,delete,deletecollection,get,list,patch,update,watch groups=rbac.authorization.k8s.io resources=rolebindings,roles`,
	},
	"system:aggregate-to-edit": {
		`verbs=get,list,watch groups="" resources=pods/attach,pods/exec,pods/portforward,pods/proxy,secrets,services/proxy`,
		`verbs=impersonate groups="" resources=serviceaccounts`,
		`verbs=create,delete,deletecollection,patch,update groups="" resources=pods,pods/attach,pods/exec,pods/portforward,pods/proxy`,
		`verbs=create groups="" resources=pods/eviction`,
		`verbs=create,delete,deletecollection,patch,update groups="" resources=configmaps,persistentvolumeclaims,replicationcontrollers,replicationcontrollers/scale,secrets,serviceaccounts,services,services/proxy`,
		`verbs=create groups="" resources=serviceaccounts/token`,
		`verbs=create,delete,deletecollection,patch,update groups="",events.k8s.io resources=events`,
		`verbs=create,delete,deletecollection,patch,update groups=apps resources=daemonsets,deployments,deployments/rollback,deployments/scale,replicasets,replicasets/scale,statefulsets,statefulsets/scale`,
		`verbs=create,delete,deletecollection,patch,update groups=autoscaling resources=horizontalpodautoscalers`,
		`verbs=create,delete,deletecollection,patch,update groups=batch resources=cronjobs,jobs`,
		`verbs=create,delete,deletecollection,patch,update groups=extensions resources=daemonsets,deployments,deployments/rollback,deployments/scale,ingresses,networkpolicies,replicasets,replicasets/scale,replicationcontrollers/scale`,
		`verbs=create,delete,deletecollection,patch,update groups=policy resources=poddisruptionbudgets`,
		`verbs=create,delete,deletecollection,patch,update groups=networking.k8s.io resources=ingresses,networkpolicies`,
		`verbs=create,delete,deletecollection,get,list,patch,update,watch groups=coordination.k8s.io resources=leases`,
		`verbs=create,delete,deletecollection,patch,update groups=resource.k8s.io resources=resourceclaims,resourceclaimtemplates`,
	},
	"system:aggregate-to-view": {
		`verbs=get,list,watch groups="" resources=configmaps,endpoints,persistentvolumeclaims,persistentvolumeclaims/status,pods,replicationcontrollers,replicationcontrollers/scale,serviceaccounts,services,services/status`,
		`verbs=get,list,watch groups="" resources=bindings,limitranges,namespaces/status,pods/log,pods/status,replicationcontrollers/status,resourcequotas,resourcequotas/status`,
		`verbs=get,list,watch groups="" resources=namespaces`,
		`verbs=get,list,watch groups="",events.k8s.io resources=events`,
		`verbs=get,list,watch groups=discovery.k8s.io resources=endpointslices`,
		`verbs=get,list,watch groups=apps resources=controllerrevisions,daemonsets,daemonsets/status,deployments,deployments/scale,deployments/status,replicasets,replicasets/scale,replicasets/status,statefulsets,statefulsets/scale,statefulsets/status`,
		`verbs=get,list,watch groups=autoscaling resources=horizontalpodautoscalers,horizontalpodautoscalers/status`,
		`verbs=get,list,watch groups=batch resources=cronjobs,cronjobs/status,jobs,jobs/status`,
		`verbs=get,list,watch groups=extensions resources=daemonsets,daemonsets/status,deployments,deployments/scale,deployments/status,ingresses,ingresses/status,networkpolicies,replicasets,replicasets/scale,replicasets/status,replicationcontrollers/scale`,
		`verbs=get,list,watch groups=policy resources=poddisruptionbudgets,poddisruptionbudgets/status`,
		`verbs=get,list,watch groups=networking.k8s.io resources=ingresses,ingresses/status,networkpolicies`,
		`verbs=get,list,watch groups=resource.k8s.io resources=resourceclaims,resourceclaims/status,resourceclaimtemplates`,
	},
	"system:discovery": {
		`verbs=get urls=/api,/api/*,/apis,/apis/*,/healthz,/livez,/openapi,/openapi/*,/readyz,/version,/version/`,
	},
	"system:kube-scheduler": {
		`verbs=create,patch,update groups="",events.k8s.io resources=events`,
		`verbs=create groups=coordination.k8s.io resources=leases`,
		`verbs=get,list,update,watch groups=coordination.k8s.io resources=leases names=kube-scheduler`,
		`verbs=create,delete,deletecollection,get,list,patch,update,watch groups=coordination.k8s.io resources=leasecandidates`,
		`verbs=get,list,watch groups="" resources=nodes`,
		`verbs=delete,get,list,watch groups="" resources=pods`,
		`verbs=create groups="" resources=bindings,pods/binding`,
		`verbs=patch,update groups="" resources=pods/status`,
		`verbs=get,list,watch groups="" resources=replicationcontrollers,services`,
		`verbs=get,list,watch groups=apps,extensions resources=replicasets`,
		`verbs=get,list,watch groups=apps resources=statefulsets`,
		`verbs=get,list,watch groups=policy resources=poddisruptionbudgets`,
		`verbs=get,list,watch groups="" resources=persistentvolumeclaims,persistentvolumes`,
		`verbs=create groups=authentication.k8s.io resources=tokenreviews`,
		`verbs=create groups=authorization.k8s.io resources=subjectaccessreviews`,
		`verbs=get,list,watch groups=storage.k8s.io resources=csinodes`,
		`verbs=get,list,watch groups=storage.k8s.io resources=volumeattachments`,
		`verbs=get,list,watch groups="" resources=namespaces`,
		`verbs=get,list,watch groups=storage.k8s.io resources=csidrivers`,
		`verbs=get,list,watch groups=storage.k8s.io resources=csistoragecapacities`,
		`verbs=get,list,watch groups=resource.k8s.io resources=deviceclasses`,
		`verbs=get,list,patch,update,watch groups=resource.k8s.io resources=resourceclaims`,
		`verbs=get,list,patch,update,watch groups=resource.k8s.io resources=resourceclaims/status`,
		`verbs=update groups="" resources=pods/finalizers`,
		`verbs=get,list,watch groups=resource.k8s.io resources=resourceslices`,
		`verbs=create,delete groups=resource.k8s.io resources=resourceclaims`,
		`verbs=get,list,watch groups=resource.k8s.io resources=devicetaintrules`,
		`verbs=patch,update groups=resource.k8s.io resources=resourceclaims/binding`,
	},
	"system:node": {
		`verbs=create groups=authentication.k8s.io resources=tokenreviews`,
		`verbs=create groups=authorization.k8s.io resources=localsubjectaccessreviews,subjectaccessreviews`,
		`verbs=get,list,watch groups="" resources=services`,
		`verbs=create,get,list,watch groups="" resources=nodes`,
		`verbs=patch,update groups="" resources=nodes/status`,
		`verbs=patch,update groups="" resources=nodes`,
		`verbs=create,patch,update groups="",events.k8s.io resources=events`,
		`verbs=get,list,watch groups="" resources=pods`,
		`verbs=create,delete groups="" resources=pods`,
		`verbs=patch,update groups="" resources=pods/status`,
		`verbs=create groups="" resources=pods/eviction`,
		`verbs=get,list,watch groups="" resources=configmaps,secrets`,
		`verbs=get groups="" resources=persistentvolumeclaims,persistentvolumes`,
		`verbs=get groups="" resources=endpoints`,
		`verbs=create,get,list,watch groups=certificates.k8s.io resources=certificatesigningrequests`,
		`verbs=create,delete,get,patch,update groups=coordination.k8s.io resources=leases`,
		`verbs=get groups=storage.k8s.io resources=volumeattachments`,
		`verbs=create groups="" resources=serviceaccounts/token`,
		`verbs=get,patch,update groups="" resources=persistentvolumeclaims/status`,
		`verbs=get,list,watch groups=storage.k8s.io resources=csidrivers`,
		`verbs=create,delete,get,patch,update groups=storage.k8s.io resources=csinodes`,
		`verbs=get,list,watch groups=node.k8s.io resources=runtimeclasses`,
		`verbs=get groups=resource.k8s.io resources=resourceclaims`,
		`verbs=deletecollection groups=resource.k8s.io resources=resourceslices`,
		`verbs=get,list,watch groups=certificates.k8s.io resources=clustertrustbundles`,
		`verbs=get groups="" resources=serviceaccounts`,
		`verbs=create,get,list,watch groups=certificates.k8s.io resources=podcertificaterequests`,
	},
	"system:public-info-viewer": {
		`verbs=get urls=/healthz,/livez,/readyz,/version,/version/`,
	},
}

// ruleLine writes a rule as one line: "verbs=… groups=… resources=… names=…
// urls=…", lists comma-separated, the core group as "", empty fields left out.
func ruleLine(r rbacv1.PolicyRule) string {
	parts := []string{"verbs=" + strings.Join(r.Verbs, ",")}
	if r.APIGroups != nil {
		groups := slices.Clone(r.APIGroups)
		for i, g := range groups {
			if g == "" {
				groups[i] = `""`
			}
		}
		parts = append(parts, "groups="+strings.Join(groups, ","))
	}
	for _, f := range []struct {
		name string
		list []string
	}{{"resources", r.Resources}, {"names", r.ResourceNames}, {"urls", r.NonResourceURLs}} {
		if f.list != nil {
			parts = append(parts, f.name+"="+strings.Join(f.list, ","))
		}
	}
	return strings.Join(parts, " ")
}

func names[T any](objs []T, key func(T) string) []string {
	var out []string
	for _, o := range objs {
		out = append(out, key(o))
	}
	slices.Sort(out)
	return out
}

func clusterRoleName(r rbacv1.ClusterRole) string               { return r.Name }
func clusterRoleBindingName(b rbacv1.ClusterRoleBinding) string { return b.Name }
func roleKey(r rbacv1.Role) string                              { return r.Namespace + "/" + r.Name }
func roleBindingKey(b rbacv1.RoleBinding) string                { return b.Namespace + "/" + b.Name }

func TestNamesAreUpstreams(t *testing.T) {
	d := Default()
	for _, c := range []struct {
		kind      string
		got, want []string
	}{
		{"ClusterRoles", names(d.ClusterRoles, clusterRoleName), sortedUnion(upstreamClusterRoles, upstreamControllerRoles)},
		{"ClusterRoleBindings", names(d.ClusterRoleBindings, clusterRoleBindingName), sortedUnion(upstreamClusterRoleBindings, upstreamControllerRoles)},
		{"Roles", names(d.Roles, roleKey), sortedUnion(upstreamRoles)},
		{"RoleBindings", names(d.RoleBindings, roleBindingKey), sortedUnion(upstreamRoleBindings)},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s:\n got %q\nwant %q", c.kind, c.got, c.want)
		}
	}
	if n := len(d.ClusterRoles); n != 73 {
		t.Errorf("%d ClusterRoles, upstream has 73", n)
	}
}

func sortedUnion(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	slices.Sort(out)
	return out
}

func TestNamespaceMapsMatchObjects(t *testing.T) {
	for ns, roles := range NamespaceRoles() {
		for _, r := range roles {
			if r.Namespace != ns {
				t.Errorf("Role %s/%s listed under %s", r.Namespace, r.Name, ns)
			}
		}
	}
	for ns, bindings := range NamespaceRoleBindings() {
		for _, b := range bindings {
			if b.Namespace != ns {
				t.Errorf("RoleBinding %s/%s listed under %s", b.Namespace, b.Name, ns)
			}
		}
	}
}

func TestNamesAreUnique(t *testing.T) {
	d := Default()
	for kind, keys := range map[string][]string{
		"ClusterRole":        names(d.ClusterRoles, clusterRoleName),
		"ClusterRoleBinding": names(d.ClusterRoleBindings, clusterRoleBindingName),
		"Role":               names(d.Roles, roleKey),
		"RoleBinding":        names(d.RoleBindings, roleBindingKey),
	} {
		for i := 1; i < len(keys); i++ {
			if keys[i] == keys[i-1] {
				t.Errorf("%s %s defined twice", kind, keys[i])
			}
		}
	}
}

func TestBindingsReferToDefaultRoles(t *testing.T) {
	d := Default()
	clusterRoles := map[string]bool{}
	for _, r := range d.ClusterRoles {
		clusterRoles[r.Name] = true
	}
	roles := map[string]bool{}
	for _, r := range d.Roles {
		roles[roleKey(r)] = true
	}
	for _, b := range d.ClusterRoleBindings {
		if b.RoleRef.APIGroup != rbacv1.GroupName || b.RoleRef.Kind != "ClusterRole" || !clusterRoles[b.RoleRef.Name] {
			t.Errorf("ClusterRoleBinding %s: roleRef %+v is not a default ClusterRole", b.Name, b.RoleRef)
		}
		if b.RoleRef.Name != b.Name {
			t.Errorf("ClusterRoleBinding %s binds %s; upstream names each after its role", b.Name, b.RoleRef.Name)
		}
	}
	for _, b := range d.RoleBindings {
		if b.RoleRef.APIGroup != rbacv1.GroupName || b.RoleRef.Kind != "Role" || !roles[b.Namespace+"/"+b.RoleRef.Name] {
			t.Errorf("RoleBinding %s: roleRef %+v is not a default Role of its namespace", roleBindingKey(b), b.RoleRef)
		}
	}
}

func TestEveryControllerRoleIsBoundToItsServiceAccount(t *testing.T) {
	d := Default()
	bindings := map[string]rbacv1.ClusterRoleBinding{}
	for _, b := range d.ClusterRoleBindings {
		bindings[b.Name] = b
	}
	n := 0
	for _, r := range d.ClusterRoles {
		sa, ok := strings.CutPrefix(r.Name, "system:controller:")
		if !ok {
			continue
		}
		n++
		b, ok := bindings[r.Name]
		want := []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "kube-system", Name: sa}}
		if !ok || !slices.Equal(b.Subjects, want) {
			t.Errorf("%s: binding %+v, want one to ServiceAccount kube-system/%s", r.Name, b.Subjects, sa)
		}
	}
	if n != len(upstreamControllerRoles) {
		t.Errorf("%d controller roles, upstream has %d", n, len(upstreamControllerRoles))
	}
}

func TestEveryObjectCarriesDefaultMetadata(t *testing.T) {
	d := Default()
	var metas []struct {
		what          string
		labels, annot map[string]string
	}
	add := func(what string, l, a map[string]string) {
		metas = append(metas, struct {
			what          string
			labels, annot map[string]string
		}{what, l, a})
	}
	for _, o := range d.ClusterRoles {
		add("ClusterRole "+o.Name, o.Labels, o.Annotations)
	}
	for _, o := range d.ClusterRoleBindings {
		add("ClusterRoleBinding "+o.Name, o.Labels, o.Annotations)
	}
	for _, o := range d.Roles {
		add("Role "+roleKey(o), o.Labels, o.Annotations)
	}
	for _, o := range d.RoleBindings {
		add("RoleBinding "+roleBindingKey(o), o.Labels, o.Annotations)
	}
	for _, m := range metas {
		if m.labels["kubernetes.io/bootstrapping"] != "rbac-defaults" {
			t.Errorf("%s: labels %v", m.what, m.labels)
		}
		if len(m.annot) != 1 || m.annot["rbac.authorization.kubernetes.io/autoupdate"] != "true" {
			t.Errorf("%s: annotations %v", m.what, m.annot)
		}
	}
}

func TestRulesMatchUpstream(t *testing.T) {
	roles := map[string]rbacv1.ClusterRole{}
	for _, r := range ClusterRoles() {
		roles[r.Name] = r
	}
	for name, want := range upstreamRules {
		var got []string
		for _, r := range roles[name].Rules {
			got = append(got, ruleLine(r))
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s rules:\n got %s\nwant %s", name, strings.Join(got, "\n     "), strings.Join(want, "\n     "))
		}
	}
}

func TestAggregatedRoles(t *testing.T) {
	roles := map[string]rbacv1.ClusterRole{}
	for _, r := range ClusterRoles() {
		roles[r.Name] = r
	}
	for _, c := range []struct {
		name, selects, labelledInto string
	}{
		{"admin", "rbac.authorization.k8s.io/aggregate-to-admin", ""},
		{"edit", "rbac.authorization.k8s.io/aggregate-to-edit", "rbac.authorization.k8s.io/aggregate-to-admin"},
		{"view", "rbac.authorization.k8s.io/aggregate-to-view", "rbac.authorization.k8s.io/aggregate-to-edit"},
		{"system:aggregate-to-admin", "", "rbac.authorization.k8s.io/aggregate-to-admin"},
		{"system:aggregate-to-edit", "", "rbac.authorization.k8s.io/aggregate-to-edit"},
		{"system:aggregate-to-view", "", "rbac.authorization.k8s.io/aggregate-to-view"},
	} {
		r := roles[c.name]
		if c.selects != "" {
			want := fmt.Sprint([]map[string]string{{c.selects: "true"}})
			if r.AggregationRule == nil || len(r.AggregationRule.ClusterRoleSelectors) != 1 ||
				fmt.Sprint([]map[string]string{r.AggregationRule.ClusterRoleSelectors[0].MatchLabels}) != want ||
				r.AggregationRule.ClusterRoleSelectors[0].MatchExpressions != nil {
				t.Errorf("%s: aggregationRule %+v, want matchLabels %s", c.name, r.AggregationRule, want)
			}
			if r.Rules != nil {
				t.Errorf("%s: has rules of its own; the aggregation controller fills them", c.name)
			}
		} else if r.AggregationRule != nil {
			t.Errorf("%s: aggregationRule %+v, want none", c.name, r.AggregationRule)
		}
		wantLabels := 1
		if c.labelledInto != "" {
			wantLabels++
			if r.Labels[c.labelledInto] != "true" {
				t.Errorf("%s: labels %v, want %s=true", c.name, r.Labels, c.labelledInto)
			}
		}
		if len(r.Labels) != wantLabels {
			t.Errorf("%s: labels %v", c.name, r.Labels)
		}
	}
}

func TestDefaultBindingSubjects(t *testing.T) {
	bindings := map[string]rbacv1.ClusterRoleBinding{}
	for _, b := range ClusterRoleBindings() {
		bindings[b.Name] = b
	}
	group := func(n string) rbacv1.Subject {
		return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: "Group", Name: n}
	}
	user := func(n string) rbacv1.Subject {
		return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: "User", Name: n}
	}
	for name, want := range map[string][]rbacv1.Subject{
		"cluster-admin":                           {group("system:masters")},
		"system:monitoring":                       {group("system:monitoring")},
		"system:discovery":                        {group("system:authenticated")},
		"system:basic-user":                       {group("system:authenticated")},
		"system:public-info-viewer":               {group("system:authenticated"), group("system:unauthenticated")},
		"system:node-proxier":                     {user("system:kube-proxy")},
		"system:kube-controller-manager":          {user("system:kube-controller-manager")},
		"system:kube-dns":                         {{Kind: "ServiceAccount", Namespace: "kube-system", Name: "kube-dns"}},
		"system:kube-scheduler":                   {user("system:kube-scheduler")},
		"system:volume-scheduler":                 {user("system:kube-scheduler")},
		"system:node":                             nil,
		"system:service-account-issuer-discovery": {group("system:serviceaccounts")},
		"system:cluster-trust-bundle-discovery":   {group("system:serviceaccounts")},
	} {
		if got := bindings[name].Subjects; !slices.Equal(got, want) {
			t.Errorf("%s: subjects %+v, want %+v", name, got, want)
		}
	}
}

func TestCallsReturnFreshObjects(t *testing.T) {
	a := ClusterRoles()
	a[0].Rules[0].Verbs[0] = "mutated"
	a[0].Labels["x"] = "y"
	b := ClusterRoles()
	if b[0].Rules[0].Verbs[0] == "mutated" || b[0].Labels["x"] == "y" {
		t.Error("ClusterRoles shares memory between calls")
	}
	r := NamespaceRoles()
	r["kube-system"][0].Rules[0].Verbs[0] = "mutated"
	if NamespaceRoles()["kube-system"][0].Rules[0].Verbs[0] == "mutated" {
		t.Error("NamespaceRoles shares memory between calls")
	}
}
