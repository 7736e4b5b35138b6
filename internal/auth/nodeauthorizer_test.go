package auth

import (
	"context"
	"testing"
)

func TestNodeAuthorizer(t *testing.T) {
	node := &User{Name: "system:node:n1", Groups: []string{GroupNodes, GroupAuthenticated}}
	notNode := &User{Name: "system:node:n1", Groups: []string{GroupAuthenticated}} // name without the group
	alice := &User{Name: "alice", Groups: []string{GroupAuthenticated}}
	anon := &User{Name: UserAnonymous, Groups: []string{GroupUnauthenticated}}
	res := func(u *User, verb, group, resource, sub, ns, name string) Attributes {
		return Attributes{User: u, Verb: verb, IsResource: true, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name}
	}
	chain := Chain{MastersAuthorizer{}, PublicInfoAuthorizer{}, BasicUserAuthorizer{}, NodeAuthorizer{}}
	tests := []struct {
		name string
		a    Attributes
		want Decision
	}{
		{"node watches pods", res(node, "watch", "", "pods", "", "", ""), Allow},
		{"node updates pod status", res(node, "update", "", "pods", "status", "default", "p"), Allow},
		{"node patches its own status", res(node, "patch", "", "nodes", "status", "", "n1"), Allow},
		{"node patches another node's status", res(node, "patch", "", "nodes", "status", "", "n2"), NoOpinion},
		{"node creates its Node", res(node, "create", "", "nodes", "", "", ""), Allow},
		{"node deletes a Node", res(node, "delete", "", "nodes", "", "", "n1"), NoOpinion},
		{"node renews its lease", res(node, "update", "coordination.k8s.io", "leases", "", "kube-node-lease", "n1"), Allow},
		{"node renews another's lease", res(node, "update", "coordination.k8s.io", "leases", "", "kube-node-lease", "n2"), NoOpinion},
		{"node reads a secret", res(node, "get", "", "secrets", "", "default", "s"), Allow},
		{"node writes a secret", res(node, "update", "", "secrets", "", "default", "s"), NoOpinion},
		{"node creates a deployment", res(node, "create", "apps", "deployments", "", "default", ""), NoOpinion},
		{"node asks a token", res(node, "create", "", "serviceaccounts", "token", "default", "sa"), Allow},
		{"node creates a CSR", res(node, "create", "certificates.k8s.io", "certificatesigningrequests", "", "", ""), Allow},
		{"node selfnodeclient", res(node, "create", "certificates.k8s.io", "certificatesigningrequests", "selfnodeclient", "", ""), Allow},
		{"node nodeclient", res(node, "create", "certificates.k8s.io", "certificatesigningrequests", "nodeclient", "", ""), NoOpinion},
		{"node approves a CSR", res(node, "update", "certificates.k8s.io", "certificatesigningrequests", "approval", "", "x"), NoOpinion},
		{"name without group", res(notNode, "get", "", "pods", "", "default", "p"), NoOpinion},
		{"alice creates a CSR", res(alice, "create", "certificates.k8s.io", "certificatesigningrequests", "", "", ""), NoOpinion},
		{"node discovery", Attributes{User: node, Verb: "get", Path: "/apis/apps/v1"}, Allow},
		{"alice discovery", Attributes{User: alice, Verb: "get", Path: "/api"}, Allow},
		{"alice openapi", Attributes{User: alice, Verb: "get", Path: "/openapi/v3"}, Allow},
		{"alice posts to /api", Attributes{User: alice, Verb: "post", Path: "/api"}, NoOpinion},
		{"alice metrics", Attributes{User: alice, Verb: "get", Path: "/metrics"}, NoOpinion},
		{"anonymous discovery", Attributes{User: anon, Verb: "get", Path: "/api"}, NoOpinion},
		{"alice asks about herself", res(alice, "create", "authorization.k8s.io", "selfsubjectaccessreviews", "", "", ""), Allow},
		{"alice who am i", res(alice, "create", "authentication.k8s.io", "selfsubjectreviews", "", "", ""), Allow},
		{"alice asks about others", res(alice, "create", "authorization.k8s.io", "subjectaccessreviews", "", "", ""), NoOpinion},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, _, err := chain.Authorize(context.Background(), tc.a)
			if err != nil || d != tc.want {
				t.Fatalf("decision %v (err %v), want %v", d, err, tc.want)
			}
		})
	}
}

func TestNodeName(t *testing.T) {
	for _, tc := range []struct {
		u    *User
		want string
	}{
		{&User{Name: "system:node:a", Groups: []string{GroupNodes}}, "a"},
		{&User{Name: "system:node:a"}, ""},
		{&User{Name: "bob", Groups: []string{GroupNodes}}, ""},
		{nil, ""},
	} {
		if got := NodeName(tc.u); got != tc.want {
			t.Errorf("NodeName(%+v) = %q, want %q", tc.u, got, tc.want)
		}
	}
}
