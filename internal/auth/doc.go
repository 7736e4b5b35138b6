// Package auth answers two questions for the API server: who sent a request
// (authentication: x509 client certificates, bearer tokens — among them
// service-account JWTs, which ServiceAccountTokens issues and checks — or
// the in-process loopback identity) and may they do it (authorization,
// behind the Authorizer interface).
//
// The user is carried in the request's context from the authentication
// filter to the handlers; nothing else in the request is trusted for it.
//
// Joining nodes (bootstraptoken.go): bootstrap tokens authenticate against
// their kube-system Secrets as system:bootstrap:<id>; nodes
// (system:node:<name> in system:nodes, nodename.go) are authorized by the
// Node authorizer (package node), everyone else by RBAC (package rbac).
// identities.go names the built-in components' identities. The fixed PublicInfo/BasicUser/IssuerDiscovery
// authorizers remain for an API server built without RBAC (tests).
package auth
