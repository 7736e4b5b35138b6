package auth

import (
	saauth "k8s.io/apiserver/pkg/authentication/serviceaccount"
)

// The identities of the built-in components, as upstream's: the default
// policy (package rbac/bootstrap) grants each what upstream grants it.
const (
	// UserAPIServer is the API server's own loopback identity, in
	// system:masters: what upstream's kube-apiserver runs privileged (its
	// RBAC bootstrap, the CRD controllers, its bootstrap-token reader).
	UserAPIServer             = "system:apiserver"
	UserKubeScheduler         = "system:kube-scheduler"
	UserKubeControllerManager = "system:kube-controller-manager"
)

// APIServerUser is the API server's loopback identity.
func APIServerUser() *User {
	return &User{Name: UserAPIServer, Groups: []string{GroupMasters, GroupAuthenticated}}
}

// SchedulerUser is the scheduler's identity.
func SchedulerUser() *User {
	return &User{Name: UserKubeScheduler, Groups: []string{GroupAuthenticated}}
}

// ControllerManagerUser is the controller manager's own identity: its
// leader election, its shared informers, and the creation of the
// ServiceAccounts its controllers then run as.
func ControllerManagerUser() *User {
	return &User{Name: UserKubeControllerManager, Groups: []string{GroupAuthenticated}}
}

// NodeUser is the identity of node name: system:node:<name> in
// system:nodes, as a node's client certificate says.
func NodeUser(name string) *User {
	return &User{Name: NodeUserPrefix + name, Groups: []string{GroupNodes, GroupAuthenticated}}
}

// ServiceAccountUser is the identity a token of the ServiceAccount
// namespace/name (with that uid) authenticates as:
// system:serviceaccount:<ns>:<name> in system:serviceaccounts,
// system:serviceaccounts:<ns> and system:authenticated.
func ServiceAccountUser(namespace, name, uid string) *User {
	ui := (&saauth.ServiceAccountInfo{Namespace: namespace, Name: name, UID: uid}).UserInfo()
	return &User{Name: ui.GetName(), UID: ui.GetUID(), Groups: append(ui.GetGroups(), GroupAuthenticated)}
}
