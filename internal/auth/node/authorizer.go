package node

import (
	"context"
	"errors"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"plainkube.dev/plainkube/internal/api/localpath"
	"plainkube.dev/plainkube/internal/auth"
	"plainkube.dev/plainkube/internal/auth/rbac"
)

// NodeLeaseNamespace holds the nodes' heartbeat Leases.
const NodeLeaseNamespace = "kube-node-lease"

// Authorizer is upstream's Node authorizer: it decides for node
// identities (system:node:<name> in system:nodes) only. What a node may
// reach through its pods (Secrets, ConfigMaps, claims, volumes, tokens of
// ServiceAccounts) it may read only while a pod of it uses them (Graph),
// and the PodCertificateRequests naming it;
// its own Node, Lease and CSINode by name; pods it may list and watch only
// with the fieldSelector spec.nodeName=<itself>; the local-path volumes
// whose folder it holds it may list and watch only with the labelSelector
// plainkube.dev/local-path-node=<itself>, and update (to remove their
// cleanup finalizer: NodeRestriction allows nothing else); everything else as the
// rules (upstream's system:node role) allow. Writes it allows broadly
// (Node, pod status, mirror pods) are narrowed to the node's own objects
// by the NodeRestriction admission plugin, as upstream's are. Denials are
// "no opinion", so RBAC may still grant what is bound to the node.
type Authorizer struct {
	graph *Graph
	rules []rbacv1.PolicyRule
}

// New returns the authorizer over g, with rules for what the graph does
// not decide.
func New(g *Graph, rules []rbacv1.PolicyRule) *Authorizer {
	return &Authorizer{graph: g, rules: rules}
}

func (a *Authorizer) Authorize(_ context.Context, at auth.Attributes) (auth.Decision, string, error) {
	node := auth.NodeName(at.User)
	if node == "" {
		return auth.NoOpinion, "", nil
	}
	if at.IsResource {
		switch (groupResource{at.APIGroup, at.Resource}) {
		case secrets:
			return a.readNamespaced(node, secretKind, at)
		case configMaps:
			return a.readNamespaced(node, configMapKind, at)
		case claims:
			if at.Subresource == "status" {
				return a.statusUpdate(node, claimKind, at)
			}
			return a.get(node, at, func() bool { return a.graph.related(node, object{claimKind, at.Namespace, at.Name}) })
		case volumes:
			return a.volume(node, at)
		case resourceClaims:
			return a.get(node, at, func() bool { return a.graph.related(node, object{resourceClaimKind, at.Namespace, at.Name}) })
		case volumeAttachments:
			// Not served by plainkube: no attachment is a node's.
			return a.get(node, at, func() bool { return false })
		case serviceAccounts:
			return a.serviceAccount(node, at)
		case leases:
			return lease(node, at)
		case csiNodes:
			return csiNode(node, at)
		case nodes:
			return nodeObject(node, at)
		case pods:
			return a.pod(node, at)
		case podCertificateRequests:
			return a.podCertificateRequest(node, at)
		}
	}
	for i := range a.rules {
		if rbac.RuleAllows(at, &a.rules[i]) {
			return auth.Allow, "", nil
		}
	}
	return auth.NoOpinion, "", nil
}

type groupResource struct{ group, resource string }

var (
	secrets           = groupResource{"", "secrets"}
	configMaps        = groupResource{"", "configmaps"}
	claims            = groupResource{"", "persistentvolumeclaims"}
	volumes           = groupResource{"", "persistentvolumes"}
	serviceAccounts   = groupResource{"", "serviceaccounts"}
	nodes             = groupResource{"", "nodes"}
	pods              = groupResource{"", "pods"}
	leases            = groupResource{"coordination.k8s.io", "leases"}
	csiNodes          = groupResource{"storage.k8s.io", "csinodes"}
	volumeAttachments = groupResource{"storage.k8s.io", "volumeattachments"}
	resourceClaims    = groupResource{"resource.k8s.io", "resourceclaims"}

	podCertificateRequests = groupResource{"certificates.k8s.io", "podcertificaterequests"}
)

func noRelationship(node string) (auth.Decision, string, error) {
	return auth.NoOpinion, fmt.Sprintf("no relationship found between node '%s' and this object", node), nil
}

// related allows when the named object is related to node.
func related(node string, at auth.Attributes, ok func() bool) (auth.Decision, string, error) {
	if at.Name == "" {
		return auth.NoOpinion, "No Object name found", nil
	}
	if !ok() {
		return noRelationship(node)
	}
	return auth.Allow, "", nil
}

// readNamespaced: get, list or watch of one named object of the node's
// pods (a list or watch names it with fieldSelector metadata.name).
func (a *Authorizer) readNamespaced(node string, k kind, at auth.Attributes) (auth.Decision, string, error) {
	switch at.Verb {
	case "get", "list", "watch":
	default:
		return auth.NoOpinion, "can only read resources of this type", nil
	}
	if at.Subresource != "" {
		return auth.NoOpinion, "cannot read subresource", nil
	}
	if at.Namespace == "" {
		return auth.NoOpinion, "can only read namespaced object of this type", nil
	}
	return related(node, at, func() bool { return a.graph.related(node, object{k, at.Namespace, at.Name}) })
}

// get: a get of one object related to the node.
func (a *Authorizer) get(node string, at auth.Attributes, ok func() bool) (auth.Decision, string, error) {
	if at.Verb != "get" {
		return auth.NoOpinion, "can only get individual resources of this type", nil
	}
	if at.Subresource != "" {
		return auth.NoOpinion, "cannot get subresource", nil
	}
	return related(node, at, ok)
}

func (a *Authorizer) statusUpdate(node string, k kind, at auth.Attributes) (auth.Decision, string, error) {
	if at.Verb != "update" && at.Verb != "patch" {
		return auth.NoOpinion, "can only get/update/patch this type", nil
	}
	return related(node, at, func() bool { return a.graph.related(node, object{k, at.Namespace, at.Name}) })
}

// volume: a get of a PersistentVolume bound to a claim of the node's pods;
// and, for the local-path volumes whose folder is on the node, gets, lists
// and watches with the labelSelector plainkube.dev/local-path-node=<node>
// and updates (NodeRestriction lets them remove the cleanup finalizer
// only).
func (a *Authorizer) volume(node string, at auth.Attributes) (auth.Decision, string, error) {
	if at.Subresource == "" {
		switch at.Verb {
		case "list", "watch":
			if labelSelects(at.LabelSelector, localpath.NodeLabel, node) {
				return auth.Allow, "", nil
			}
			return auth.NoOpinion, fmt.Sprintf("can only list/watch persistentvolumes with the label selector %s=%s", localpath.NodeLabel, node), nil
		case "update", "patch":
			return related(node, at, func() bool { return a.graph.localPathOn(node, at.Name) })
		case "get":
			if a.graph.localPathOn(node, at.Name) {
				return auth.Allow, "", nil
			}
		}
	}
	return a.get(node, at, func() bool { return a.graph.volumeRelated(node, at.Name) })
}

// serviceAccount: a get of, or a token for, a ServiceAccount of the
// node's pods.
func (a *Authorizer) serviceAccount(node string, at auth.Attributes) (auth.Decision, string, error) {
	if at.Verb == "get" && at.Subresource == "" {
		return a.readNamespaced(node, serviceAccountKind, at)
	}
	if at.Verb != "create" || at.Name == "" {
		return auth.NoOpinion, "can only create tokens for individual service accounts", nil
	}
	if at.Subresource != "token" {
		return auth.NoOpinion, "can only create token subresource of serviceaccount", nil
	}
	return related(node, at, func() bool { return a.graph.related(node, object{serviceAccountKind, at.Namespace, at.Name}) })
}

// lease: the node's own heartbeat Lease in kube-node-lease.
func lease(node string, at auth.Attributes) (auth.Decision, string, error) {
	switch at.Verb {
	case "get", "create", "update", "patch", "delete":
	default:
		return auth.NoOpinion, "can only get, create, update, patch, or delete a node lease", nil
	}
	if at.Namespace != NodeLeaseNamespace {
		return auth.NoOpinion, fmt.Sprintf("can only access leases in the %q system namespace", NodeLeaseNamespace), nil
	}
	if at.Verb != "create" && at.Name != node {
		return auth.NoOpinion, "can only access node lease with the same name as the requesting node", nil
	}
	return auth.Allow, "", nil
}

// csiNode: the node's own CSINode.
func csiNode(node string, at auth.Attributes) (auth.Decision, string, error) {
	if at.Subresource != "" {
		return auth.NoOpinion, "cannot authorize CSINode subresources", nil
	}
	switch at.Verb {
	case "get", "create", "update", "patch", "delete":
	default:
		return auth.NoOpinion, "can only get, create, update, patch, or delete a CSINode", nil
	}
	if at.Verb != "create" && at.Name != node {
		return auth.NoOpinion, "can only access CSINode with the same name as the requesting node", nil
	}
	return auth.Allow, "", nil
}

// nodeObject: writes of Nodes (NodeRestriction keeps them to its own),
// reads of its own Node only.
func nodeObject(node string, at auth.Attributes) (auth.Decision, string, error) {
	switch at.Subresource {
	case "":
		switch at.Verb {
		case "create", "update", "patch":
			return auth.Allow, "", nil
		case "get", "list", "watch":
			switch at.Name {
			case node:
				return auth.Allow, "", nil
			case "":
				return auth.NoOpinion, fmt.Sprintf("node '%s' cannot read all nodes, only its own Node object", node), nil
			default:
				return auth.NoOpinion, fmt.Sprintf("node '%s' cannot read '%s', only its own Node object", node, at.Name), nil
			}
		}
	case "status":
		if at.Verb == "update" || at.Verb == "patch" {
			return auth.Allow, "", nil
		}
	}
	return auth.NoOpinion, "", nil
}

// pod: reads of its own pods (a list or watch only with the fieldSelector
// spec.nodeName=<node>); mirror pods, pod status and evictions, which
// NodeRestriction keeps to its own pods.
func (a *Authorizer) pod(node string, at auth.Attributes) (auth.Decision, string, error) {
	switch at.Subresource {
	case "":
		switch at.Verb {
		case "get":
			return a.get(node, at, func() bool { return a.graph.podOn(node, at.Namespace, at.Name) })
		case "list", "watch":
			if selects(at.FieldSelector, "spec.nodeName", node) {
				return auth.Allow, "", nil
			}
			if at.Name != "" {
				return related(node, at, func() bool { return a.graph.podOn(node, at.Namespace, at.Name) })
			}
			return auth.NoOpinion, "can only list/watch pods with spec.nodeName field selector", nil
		case "create", "delete":
			return auth.Allow, "", nil
		}
	case "status":
		if at.Verb == "update" || at.Verb == "patch" {
			return auth.Allow, "", nil
		}
	case "eviction":
		if at.Verb == "create" {
			return auth.Allow, "", nil
		}
	}
	return auth.NoOpinion, "", nil
}

// podCertificateRequest: a node creates requests (NodeRestriction narrows
// them to its own pods), gets those naming it, and lists or watches them
// (fieldSelector spec.nodeName=<itself>); never their status.
func (a *Authorizer) podCertificateRequest(node string, at auth.Attributes) (auth.Decision, string, error) {
	if at.Subresource != "" {
		return auth.NoOpinion, "nodes may not access the status subresource of PodCertificateRequests", nil
	}
	switch at.Verb {
	case "create":
		return auth.Allow, "", nil
	case "get":
		return related(node, at, func() bool { return a.graph.podCertificateRequestOf(node, at.Namespace, at.Name) })
	case "list", "watch":
		if selects(at.FieldSelector, "spec.nodeName", node) {
			return auth.Allow, "", nil
		}
		return auth.NoOpinion, "can only list/watch podcertificaterequests with nodeName field selector", nil
	}
	return auth.NoOpinion, fmt.Sprintf("nodes may not %s podcertificaterequests", at.Verb), nil
}

// selects reports whether the field selector requires field=value.
func selects(selector, field, value string) bool {
	if selector == "" {
		return false
	}
	s, err := fields.ParseSelector(selector)
	if err != nil {
		return false
	}
	for _, r := range s.Requirements() {
		if r.Field == field && (r.Operator == "=" || r.Operator == "==") && r.Value == value {
			return true
		}
	}
	return false
}

// labelSelects reports whether the label selector requires key=value.
func labelSelects(selector, key, value string) bool {
	if selector == "" {
		return false
	}
	s, err := labels.Parse(selector)
	if err != nil {
		return false
	}
	reqs, _ := s.Requirements()
	for _, r := range reqs {
		if r.Key() == key && (r.Operator() == selection.Equals || r.Operator() == selection.DoubleEquals ||
			(r.Operator() == selection.In && r.Values().Len() == 1)) && r.Values().Has(value) {
			return true
		}
	}
	return false
}

// RulesFor cannot list a node's rules (what it may read depends on its
// pods, which rules cannot say), as upstream's Node authorizer.
func (a *Authorizer) RulesFor(u *auth.User, _ string) ([]rbacv1.PolicyRule, error) {
	if auth.NodeName(u) != "" {
		return nil, errors.New("node authorizer does not support user rule resolution")
	}
	return nil, nil
}
