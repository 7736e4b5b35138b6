package auth

import (
	"context"
	"slices"
	"strings"
)

// The node authorizer, interim: fixed rules equal to upstream's system:node
// ClusterRole, with a node's writes limited to its own Node and Lease. The
// Node authorizer proper (a node reads only its own pods' objects) is still
// to come; joining users (bootstrap tokens) and anonymous cluster-info
// readers are RBAC's, through the bindings the server reconciles.

// Node identities, as upstream.
const (
	GroupNodes     = "system:nodes"
	NodeUserPrefix = "system:node:"
)

// NodeName returns the node an identity is (system:node:<name> in
// system:nodes), or "".
func NodeName(u *User) string {
	if u == nil || !u.InGroup(GroupNodes) {
		return ""
	}
	name, ok := strings.CutPrefix(u.Name, NodeUserPrefix)
	if !ok {
		return ""
	}
	return name
}

// Rule allows verbs on resources (resource or resource/subresource) in
// API groups; "*" matches anything.
type Rule struct {
	Verbs     []string
	Groups    []string
	Resources []string
}

func (r Rule) matches(a Attributes) bool {
	if !a.IsResource {
		return false
	}
	res := a.Resource
	if a.Subresource != "" {
		res += "/" + a.Subresource
	}
	return matchAny(r.Verbs, a.Verb) && matchAny(r.Groups, a.APIGroup) && matchAny(r.Resources, res)
}

func matchAny(list []string, v string) bool {
	return slices.Contains(list, "*") || slices.Contains(list, v)
}

// Rules allows a request any of its rules matches.
type Rules []Rule

func (rs Rules) allows(a Attributes) bool {
	return slices.ContainsFunc(rs, func(r Rule) bool { return r.matches(a) })
}

var (
	read = []string{"get", "list", "watch"}
	csr  = []string{"certificatesigningrequests"}
)

// NodeRules are upstream's system:node ClusterRole rules.
var NodeRules = Rules{
	{Verbs: []string{"create"}, Groups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}},
	{Verbs: []string{"create"}, Groups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews", "localsubjectaccessreviews"}},
	{Verbs: read, Groups: []string{""}, Resources: []string{"services"}},
	{Verbs: []string{"create", "get", "list", "watch"}, Groups: []string{""}, Resources: []string{"nodes"}},
	{Verbs: []string{"update", "patch"}, Groups: []string{""}, Resources: []string{"nodes/status"}},
	{Verbs: []string{"update", "patch"}, Groups: []string{""}, Resources: []string{"nodes"}},
	{Verbs: []string{"create", "update", "patch"}, Groups: []string{""}, Resources: []string{"events"}},
	{Verbs: []string{"create", "update", "patch"}, Groups: []string{"events.k8s.io"}, Resources: []string{"events"}},
	{Verbs: read, Groups: []string{""}, Resources: []string{"pods"}},
	{Verbs: []string{"create", "delete"}, Groups: []string{""}, Resources: []string{"pods"}},
	{Verbs: []string{"update", "patch"}, Groups: []string{""}, Resources: []string{"pods/status"}},
	{Verbs: []string{"create"}, Groups: []string{""}, Resources: []string{"pods/eviction"}},
	{Verbs: read, Groups: []string{""}, Resources: []string{"configmaps", "secrets"}},
	{Verbs: []string{"get"}, Groups: []string{""}, Resources: []string{"persistentvolumeclaims", "persistentvolumes"}},
	{Verbs: []string{"get"}, Groups: []string{""}, Resources: []string{"endpoints"}},
	{Verbs: []string{"create", "get", "list", "watch"}, Groups: []string{"certificates.k8s.io"}, Resources: csr},
	{Verbs: []string{"get", "create", "update", "patch", "delete"}, Groups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}},
	{Verbs: []string{"get"}, Groups: []string{"storage.k8s.io"}, Resources: []string{"volumeattachments"}},
	{Verbs: []string{"get", "update", "patch"}, Groups: []string{""}, Resources: []string{"persistentvolumeclaims/status"}},
	{Verbs: []string{"create"}, Groups: []string{""}, Resources: []string{"serviceaccounts/token"}},
	{Verbs: read, Groups: []string{"storage.k8s.io"}, Resources: []string{"csidrivers"}},
	{Verbs: []string{"get", "create", "update", "patch", "delete"}, Groups: []string{"storage.k8s.io"}, Resources: []string{"csinodes"}},
	{Verbs: read, Groups: []string{"node.k8s.io"}, Resources: []string{"runtimeclasses"}},
	// kubeadm binds system:nodes to the selfnodeclient role: a node may
	// have its own client certificate renewed without an administrator.
	{Verbs: []string{"create"}, Groups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests/selfnodeclient"}},
}

// NodeAuthorizer allows node identities (system:node:<name> in
// system:nodes) what upstream's system:node ClusterRole allows, except that
// a node may write only its own Node object and Lease, as upstream's
// NodeRestriction admission enforces. Interim: it does not yet limit a node
// to the pods, secrets and configmaps of its own pods, as upstream's Node
// authorizer does.
type NodeAuthorizer struct{}

func (NodeAuthorizer) Authorize(_ context.Context, a Attributes) (Decision, string, error) {
	node := NodeName(a.User)
	if node == "" || !NodeRules.allows(a) {
		return NoOpinion, "", nil
	}
	if a.Name != "" && a.Name != node && ownObjectOnly(a) {
		return NoOpinion, "node '" + node + "' cannot modify " + a.Resource + " '" + a.Name + "'", nil
	}
	return Allow, "", nil
}

// ownObjectOnly: writes of Nodes and of Leases in kube-node-lease are
// limited to the node's own name.
func ownObjectOnly(a Attributes) bool {
	if a.Verb == "get" || a.Verb == "list" || a.Verb == "watch" {
		return false
	}
	switch {
	case a.APIGroup == "" && a.Resource == "nodes":
		return true
	case a.APIGroup == "coordination.k8s.io" && a.Resource == "leases" && a.Namespace == "kube-node-lease":
		return true
	}
	return false
}
